#include "trainplan/io/files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "trainplan/core/error.hpp"

namespace trainplan::io {

std::string read_text_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  if (path.size() > kMaxPathLength)
    throw InputError("cannot read " + what + ": its path is " + std::to_string(path.size()) +
                     " characters long (at most " + std::to_string(kMaxPathLength) + ")");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError("cannot read " + what + " '" + path + "': it is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  // Read in pieces up to a bound, so a device file (/dev/zero) or a runaway log ends in an error
  // instead of exhausting memory.
  std::string text;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes)
      throw InputError("cannot read " + what + " '" + path + "': larger than " +
                       std::to_string(kMaxFileBytes >> 20) + " MiB");
  }
  if (in.bad()) throw InputError("cannot read " + what + " '" + path + "': read failed");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError("cannot read " + what + " '" + path + "': the file is empty");
  return text;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  fs::path tmp = target;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError("cannot write '" + path + "': " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw InputError("cannot write '" + path + "': write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError("cannot write '" + path + "': " + ec.message());
  }
}

}  // namespace trainplan::io
