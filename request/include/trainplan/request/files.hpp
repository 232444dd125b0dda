#pragma once
#include <cstddef>
#include <string>

namespace trainplan::request {

// Inputs are configs, profiles and logs: far below these bounds. A training config (DeepSpeed,
// YAML, a launch script) is a few kilobytes; the bound keeps a YAML reader's nodes (hundreds of
// bytes each) well under a gigabyte. Logs and measurement files may be large.
inline constexpr std::size_t kMaxFileBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
// A model config.json, a profile, a reference file or an estimate to replay: a few kilobytes to
// a megabyte.
inline constexpr std::size_t kMaxJsonFileBytes = std::size_t{16} << 20;
inline constexpr std::size_t kMaxPathLength = 4096;  // PATH_MAX on Linux

// The whole file as text; InputError "cannot read <what> '<path>': <reason>" on failure, for a
// path that is not a regular file (a FIFO, a device or a socket would block or never end), an
// empty file, one larger than max_bytes, and a path longer than kMaxPathLength.
[[nodiscard]] std::string read_text_file(const std::string& path, const std::string& what,
                                         std::size_t max_bytes = kMaxFileBytes);

// Writes through a temporary file in the same folder and renames it, so a failure leaves nothing
// half-written. Throws InputError naming the path.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trainplan::request
