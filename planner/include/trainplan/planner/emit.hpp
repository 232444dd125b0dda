#pragma once
// Launch configurations for a chosen plan, as text: a DeepSpeed JSON config, an accelerate YAML
// config, or a torchrun command line (Megatron-LM's pretrain_gpt.py for the megatron framework,
// a Hugging Face Trainer script otherwise). Pure string builders: the caller prints or saves them.
//
// Each emitter writes what its framework accepts and what the plan says, or refuses: a plan the
// format cannot express (TP/PP in a DeepSpeed or accelerate config, optimizer-only offload under
// FSDP, adapters in Megatron-LM, ...) throws EmitRefused naming what is missing. What belongs in the
// training script rather than the launcher (PEFT adapters, the dataset, placeholders to fill) is
// said in the notes.
//
// Refusals and notes name this tool's options by field, "{strategy} zero3" (FieldError's
// templates), never by a front end's spelling: the CLI renders "--strategy zero3", the GUI its
// labels (FieldError::render, FieldError::render_with for the notes). The flags of the launched
// programs themselves (the Trainer's --gradient_checkpointing, Megatron-LM's --optimizer) are
// written as they are.

#include <optional>
#include <string>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/model/architecture.hpp"
#include "trainplan/planner/estimate.hpp"

namespace trainplan::planner {

enum class EmitFormat { deepspeed, accelerate, torchrun };

struct Emitted {
  std::string text;  // the file or command itself
  // What the user must add or fill in, and mappings made; templates naming options as {field}.
  std::vector<std::string> notes;
};

// What the emitters need beyond the estimate.
struct EmitContext {
  std::optional<std::string> hf_id;  // the model's Hugging Face Hub id, when the catalogue has one
  bool zero_plus_plus = false;       // the plan was estimated with ZeRO++ (EstimateOptions)
  // Write a launch config for a plan that does not fit, marked as such inside the file.
  bool force = false;
};

// A plan the format cannot express: a FieldError naming the options to change ("{emit}
// deepspeed: ... plan with {strategy} zero3"), an InputError (the CLI exits 2).
class EmitRefused : public FieldError {
 public:
  using FieldError::FieldError;
};

// A plan that does not fit in memory gets no launch config unless EmitContext::force: a FieldError
// naming {emit} and {force}, which the CLI answers as "no" (exit 1).
class EmitDoesNotFit : public FieldError {
 public:
  using FieldError::FieldError;
};

// The Hugging Face decoder-block class of a model_type (the class its PreTrainedModel lists in
// _no_split_modules), or nullopt when the family is not known here.
[[nodiscard]] std::optional<std::string> hf_block_class(const std::string& model_type);

[[nodiscard]] Emitted emit_deepspeed(const Estimate& e, const EmitContext& x = {});
[[nodiscard]] Emitted emit_accelerate(const Estimate& e, const hardware::Cluster& c,
                                      const model::Architecture& a, const EmitContext& x = {});
[[nodiscard]] Emitted emit_torchrun(const Estimate& e, const hardware::Cluster& c,
                                    const model::Architecture& a, const EmitContext& x = {});
// Refuses, as a FieldError naming the option, what no emitter writes whatever the plan: a
// precision the GPU runs only emulated or an attention it cannot run, the Triton FlashAttention,
// a format the plan's training library does not start jobs from (emit_runnable.cpp).
void require_emittable(EmitFormat f, const model::Training& t, const hardware::GpuSpec& gpu);
// The launch config of one plan in format f. Throws EmitRefused when the format cannot express
// it and EmitDoesNotFit when it does not fit and x.force is off; with x.force such a config opens
// with a warning the format keeps (a "trainplan_warning" key in JSON, a comment elsewhere).
[[nodiscard]] Emitted emit(EmitFormat f, const Estimate& e, const hardware::Cluster& c,
                           const model::Architecture& a, const EmitContext& x = {});

// For plan --emit: the best-ranked of the plans (search order) the format can express, its index,
// and a note saying which plans above it were refused and why. Throws the first plan's
// EmitRefused when the format can express none of them (and a FieldError when there are none).
struct RankedEmit {
  Emitted emitted;
  std::size_t index = 0;
};
[[nodiscard]] RankedEmit emit_first_expressible(EmitFormat f, const std::vector<Estimate>& plans,
                                                const hardware::Cluster& c,
                                                const model::Architecture& a,
                                                const EmitContext& x = {});

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
