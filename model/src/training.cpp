#include "trainplan/model/training.hpp"

#include <charconv>
#include <string>

#include "trainplan/core/error.hpp"
#include "trainplan/model/library.hpp"

namespace trainplan::model {

namespace {

// MAJOR.MINOR or MAJOR.MINOR.PATCH, each part digits only.
struct Release {
  int major = 0;
  int minor = 0;
  int patch = 0;
};

std::optional<Release> release_of(std::string_view text) {
  Release v;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, v.major);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, v.minor);
  if (r.ec != std::errc()) return std::nullopt;
  if (r.ptr != end) {
    if (*r.ptr != '.' || r.ptr + 1 == end || r.ptr[1] < '0' || r.ptr[1] > '9') return std::nullopt;
    r = std::from_chars(r.ptr + 1, end, v.patch);
    if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  }
  if (v.major < 0 || v.minor < 0 || v.minor > 99 || v.patch < 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int> transformers_release(std::string_view text) {
  const auto v = release_of(text);
  if (!v || v->major < 4 || v->major > 99) return std::nullopt;
  return v->major * 100 + v->minor;
}

std::optional<int> package_release(std::string_view text) {
  if (text == "current") return 0;
  const auto v = release_of(text);
  if (!v || v->major > 99 || v->patch > 99 || (v->major == 0 && v->minor == 0 && v->patch == 0)) return std::nullopt;
  return v->major * 10000 + v->minor * 100 + v->patch;
}

int parse_transformers_release(std::string_view text, std::string_view what) {
  if (const auto release = transformers_release(text)) return *release;
  throw InputError(std::string(what) + ": '" + std::string(text) + "' is not a transformers release (" +
                   std::string(kTransformersReleaseForm) + ")");
}

std::string transformers_release_text(int release) {
  return std::to_string(release / 100) + "." + std::to_string(release % 100);
}

std::string package_release_text(int release) {
  if (release == 0) return "current";
  return std::to_string(release / 10000) + "." + std::to_string(release / 100 % 100) + "." +
         std::to_string(release % 100);
}

int parse_package_release(std::string_view text, std::string_view package, std::string_view what) {
  if (const auto release = package_release(text)) return *release;
  throw InputError(std::string(what) + ": '" + std::string(text) + "' is not a " + std::string(package) +
                   " release (" + std::string(kPackageReleaseForm) + ")");
}

bool Training::accumulates_unsharded_gradients() const {
  return framework == Framework::pytorch && is_fsdp(strategy) && grad_accum > 1 && !sync_each_batch &&
         library_traits(library).fsdp_no_sync_accumulation;
}

std::string strategy_name(const Training& t) {
  const std::string name = std::string(display_name(t.strategy)) +
                           (t.strategy == Strategy::fsdp_hybrid && t.hybrid_shard > 0
                                ? " (groups of " + std::to_string(t.hybrid_shard) + ")"
                                : "");
  if (!t.runs_fsdp2()) return name;
  const std::string reshard = t.reshards_to_group()
                                  ? " (reshard_after_forward=" + std::to_string(t.fsdp_reshard_to) + ")"
                                  : "";
  return (is_fsdp(t.strategy) ? "FSDP2" + name.substr(4) : name + " (FSDP2)") + reshard;
}

double Training::fsdp_reduce_bytes() const {
  if (runs_fsdp2() && is_mixed(precision) && library_traits(library).fsdp2_reduces_fp32) return 4.0;
  return compute_bytes(precision);
}

bool Training::computes_in_gathered_16bit() const {
  return gathers_parameters() && is_mixed(precision) && !library_traits(library).fsdp_gathers_fp32;
}

}  // namespace trainplan::model
