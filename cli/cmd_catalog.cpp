#include "cmd_catalog.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "format.hpp"
#include "trainplan/reports/result_json.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan::cli {
namespace {

void run_models(const request::Catalog& c, bool json) {
  if (json) {
    request::Json out = request::Json::array();
    for (const auto& m : c.models()) {
      const auto n = model::count_parameters(m.arch);
      out.push_back({{"name", m.name},
                     {"hf_id", m.hf_id ? request::Json(*m.hf_id) : request::Json(nullptr)},
                     {"family", m.arch.family},
                     {"parameters", n.total},
                     {"active_parameters", n.active},
                     {"layers", m.arch.total_layers()},
                     {"hidden", m.arch.hidden},
                     {"heads", m.arch.heads},
                     {"kv_heads", m.arch.kv_heads},
                     {"vocab", m.arch.vocab},
                     {"max_seq", m.arch.max_seq},
                     {"source", m.source}});
    }
    std::cout << request::Json{{"schema", "trainplan.models/1"}, {"models", out}}.dump(2) << "\n";
    return;
  }
  Table t({"name", "family", "params", "layers", "hidden", "heads/kv", "vocab", "max seq", "Hugging Face id"});
  for (const auto& m : c.models()) {
    const auto n = model::count_parameters(m.arch);
    std::string params = count_text(n.total);
    if (m.arch.is_moe()) params += " (" + count_text(n.active) + " active)";
    t.add({m.name, m.arch.family, params, std::to_string(m.arch.total_layers()), std::to_string(m.arch.hidden),
           fmt::format("{}/{}", m.arch.heads, m.arch.kv_heads), std::to_string(m.arch.vocab),
           std::to_string(m.arch.max_seq), m.hf_id.value_or("-")});
  }
  std::cout << t.render() << "\nSize aliases:";
  for (const auto& [alias, target] : c.size_aliases()) std::cout << " " << alias << "=" << target;
  std::cout << "\nAny Hugging Face config.json (a file or a folder holding one) works too.\n";
}

void run_gpus(const request::Catalog& c, bool json) {
  if (json) {
    request::Json out = request::Json::array();
    for (const auto& g : c.gpus()) {
      const auto& s = g.spec;
      out.push_back({{"name", s.name},
                     {"memory_MiB", to_mib(s.memory)},
                     {"usable_memory_GiB", to_gib(s.usable_memory)},
                     {"peak_bf16_TFLOPS", s.peak.bf16},
                     {"peak_fp16_TFLOPS", s.peak.fp16},
                     {"hbm_bandwidth_GBps", to_gbps(s.hbm_bandwidth)},
                     {"intra_node_GBps", to_gbps(s.intra_node.bandwidth)},
                     {"source", g.source}});
    }
    std::cout << request::Json{{"schema", "trainplan.gpus/1"}, {"gpus", out}}.dump(2) << "\n";
    return;
  }
  Table t({"name", "memory MiB", "usable GiB", "bf16 TFLOP/s", "fp16 TFLOP/s", "HBM GB/s", "intra-node",
           "GB/s", "aliases"});
  for (const auto& g : c.gpus()) {
    const auto& s = g.spec;
    std::string aliases;
    for (const auto& al : g.aliases) aliases += (aliases.empty() ? "" : ", ") + al;
    t.add({s.name, fmt::format("{:.0f}", to_mib(s.memory)), fmt::format("{:.2f}", to_gib(s.usable_memory)),
           s.peak.bf16 > 0 ? fmt::format("{:g}", s.peak.bf16) : "-", fmt::format("{:g}", s.peak.fp16),
           fmt::format("{:g}", to_gbps(s.hbm_bandwidth)), s.intra_node.link,
           fmt::format("{:g}", to_gbps(s.intra_node.bandwidth)), aliases});
  }
  std::cout << t.render() << "\nFamilies:";
  for (const auto& [family, target] : c.gpu_families()) std::cout << " " << family << "=" << target;
  std::cout << "\nGB/s = 10^9 bytes/s, GiB = 2^30 bytes. `trainplan gpus --json` carries the sources.\n";
}

}  // namespace

void setup_catalog(CLI::App& app, const request::Catalog& catalog) {
  auto json = std::make_shared<bool>(false);
  CLI::App* models = app.add_subcommand("models", "the built-in model catalogue");
  models->add_flag("--json", *json, "print JSON");
  models->callback([&catalog, json] { run_models(catalog, *json); });
  auto json2 = std::make_shared<bool>(false);
  CLI::App* gpus = app.add_subcommand("gpus", "the built-in GPU catalogue");
  gpus->add_flag("--json", *json2, "print JSON");
  gpus->callback([&catalog, json2] { run_gpus(catalog, *json2); });
}

}  // namespace trainplan::cli
