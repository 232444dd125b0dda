#pragma once
// Launch configurations for a chosen plan, as text: a DeepSpeed JSON config, an accelerate YAML
// config, or a torchrun command line (Megatron-LM's pretrain_gpt.py for the megatron framework,
// a Hugging Face Trainer script otherwise). Pure string builders: the caller prints or saves them.

#include <string>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan::planner {

enum class EmitFormat { deepspeed, accelerate, torchrun };

struct Emitted {
  std::string text;                // the file or command itself
  std::vector<std::string> notes;  // what the format cannot express about the plan
};

[[nodiscard]] Emitted emit_deepspeed(const Estimate& e);
[[nodiscard]] Emitted emit_accelerate(const Estimate& e, const hardware::Cluster& c);
[[nodiscard]] Emitted emit_torchrun(const Estimate& e, const hardware::Cluster& c,
                                    const model::Architecture& a);
[[nodiscard]] Emitted emit(EmitFormat f, const Estimate& e, const hardware::Cluster& c,
                           const model::Architecture& a);

}  // namespace trainplan::planner

namespace trainplan {
template <>
struct EnumTable<planner::EmitFormat> {
  static constexpr std::string_view kWhat = "emit format";
  static constexpr std::array kEntries{
      std::pair{planner::EmitFormat::deepspeed, std::string_view{"deepspeed"}},
      std::pair{planner::EmitFormat::accelerate, std::string_view{"accelerate"}},
      std::pair{planner::EmitFormat::torchrun, std::string_view{"torchrun"}}};
};
}  // namespace trainplan
