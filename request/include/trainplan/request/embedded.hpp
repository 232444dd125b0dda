#pragma once
#include <span>
#include <string_view>

namespace trainplan::request {

struct EmbeddedFile {
  std::string_view path;  // relative to data/, e.g. "models/llama-2-7b.json"
  std::string_view text;
};

// Every JSON file of data/, embedded at build time (cmake/EmbedData.cmake).
[[nodiscard]] std::span<const EmbeddedFile> embedded_data();

}  // namespace trainplan::request
