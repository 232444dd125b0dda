#include "trainplan/io/files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trainplan/core/error.hpp"

namespace trainplan::io {

std::string read_text_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError("cannot read " + what + " '" + path + "': it is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
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
