#pragma once
#include <string>

namespace trainplan::io {

// The whole file as text; InputError "cannot read <what> '<path>': <reason>" on failure, and for an
// empty file.
[[nodiscard]] std::string read_text_file(const std::string& path, const std::string& what);

// Writes through a temporary file in the same folder and renames it, so a failure leaves nothing
// half-written. Throws InputError naming the path.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trainplan::io
