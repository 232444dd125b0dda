#pragma once
#include <cstddef>
#include <string>

namespace trainplan::io {

// Inputs are configs, profiles and logs: far below these bounds.
inline constexpr std::size_t kMaxFileBytes = std::size_t{256} << 20;
inline constexpr std::size_t kMaxPathLength = 4096;  // PATH_MAX on Linux

// The whole file as text; InputError "cannot read <what> '<path>': <reason>" on failure, and for an
// empty file, one larger than kMaxFileBytes, and a path longer than kMaxPathLength.
[[nodiscard]] std::string read_text_file(const std::string& path, const std::string& what);

// Writes through a temporary file in the same folder and renames it, so a failure leaves nothing
// half-written. Throws InputError naming the path.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trainplan::io
