#pragma once
// What the emitter tests share (test_emit.cpp, test_emit_refusals.cpp): a catalogue problem, the
// plans they emit, and readers of the emitted text.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner::emit_test {

using test::catalog;

struct Problem {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
  std::optional<std::string> hf_id;
};

inline Problem problem(const std::string& model, const std::string& cluster) {
  const request::ResolvedModel m = catalog().resolve_model(model);
  Problem p{m.arch, model::count_parameters(m.arch),
            catalog().resolve_cluster(cluster, std::nullopt).cluster,
            m.entry ? m.entry->hf_id : std::nullopt};
  return p;
}

inline bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

inline bool any_note(const Emitted& out, const std::string& what) {
  for (const auto& n : out.notes)
    if (contains(n, what)) return true;
  return false;
}

// A minimal YAML reader for the accelerate configs: "key: value" lines, nested one level by
// two-space indentation, comments and quotes stripped. Keys as "fsdp_config.fsdp_version".
inline std::map<std::string, std::string> yaml_keys(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  std::string parent;
  while (std::getline(in, line)) {
    if (const auto hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const bool nested = line.rfind("  ", 0) == 0;
    std::string key = line.substr(nested ? 2 : 0, colon - (nested ? 2 : 0));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of(' ') + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
      value = value.substr(1, value.size() - 2);
    if (!nested) parent = value.empty() ? key : "";
    out[nested ? parent + "." + key : key] = value;
  }
  return out;
}

// The value after a flag of a command line ("" when the flag is last or takes none).
inline std::vector<std::string> words(const std::string& cmd) {
  std::istringstream in(cmd);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}
inline std::optional<std::string> flag(const std::string& cmd, const std::string& name) {
  const std::vector<std::string> w = words(cmd);
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] == name) return i + 1 < w.size() ? w[i + 1] : "";
    if (w[i].rfind(name + "=", 0) == 0) return w[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

// The refusal's template: options named as {field}, each front end words them (FieldError).
inline std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const EmitRefused& e) {
    return e.message_template();
  } catch (const std::exception& e) {
    return std::string("not an EmitRefused: ") + e.what();
  }
  return "(not refused)";
}

struct Plan {
  std::string name;
  std::string model;
  std::string cluster;
  model::Training t;
  bool zero_plus_plus = false;
  std::int64_t global_batch = 0;  // by hand: micro-batch x accumulation x GPUs / (TP x PP)
};

struct Emitting {
  Problem p;
  Estimate e;
  EmitContext x;
};

inline Emitting emitting(const Plan& plan) {
  Emitting r{problem(plan.model, plan.cluster), {}, {}};
  EstimateOptions opt;
  opt.zero_plus_plus = plan.zero_plus_plus;
  r.e = Evaluator(r.p.a, r.p.n, r.p.c, nullptr, {}, {}, opt).estimate(plan.t);
  // These tests check how each format expresses a plan, whatever its memory: the gate that keeps
  // a plan that does not fit from getting a launch config is NoLaunchConfigForAPlanThatDoesNotFit.
  r.x = {r.p.hf_id, plan.zero_plus_plus, /*force=*/true};
  return r;
}

inline model::Training training(Strategy s, std::int64_t micro, std::int64_t accum) {
  model::Training t;
  t.strategy = s;
  t.micro_batch = micro;
  t.grad_accum = accum;
  t.seq = 2048;
  return t;
}

// --- 1. dense FSDP on one node -------------------------------------------------------------

}  // namespace trainplan::planner::emit_test
