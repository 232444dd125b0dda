#include "trainplan/request/files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "trainplan/core/error.hpp"

namespace trainplan::request {

namespace {

std::string size_text(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 20) ? std::to_string(bytes >> 20) + " MiB"
                                         : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  namespace fs = std::filesystem;
  if (path.size() > kMaxPathLength)
    throw InputError("cannot read " + what + ": its path is " + std::to_string(path.size()) +
                     " characters long (at most " + std::to_string(kMaxPathLength) + ")");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw InputError("cannot read " + what + " '" + path + "': " + ec.message());
  if (fs::is_directory(st)) throw InputError("cannot read " + what + " '" + path + "': it is a folder");
  // Opening a FIFO blocks until a writer comes; a device may never end. Only regular files.
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError("cannot read " + what + " '" + path + "': not a regular file (a pipe, device or socket)");
  if (fs::exists(st) && fs::file_size(path, ec) > max_bytes && !ec)
    throw InputError("cannot read " + what + " '" + path + "': larger than " + size_text(max_bytes) +
                     " (the limit for a " + what + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  // Read in pieces up to the bound as well, in case the file grows while it is read.
  std::string text;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw InputError("cannot read " + what + " '" + path + "': larger than " + size_text(max_bytes) +
                       " (the limit for a " + what + ")");
  }
  if (in.bad()) throw InputError("cannot read " + what + " '" + path + "': read failed");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError("cannot read " + what + " '" + path + "': the file is empty");
  return text;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("cannot write: the output path is empty");
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

}  // namespace trainplan::request
