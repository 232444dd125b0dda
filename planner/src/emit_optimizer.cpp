#include "emit_optimizer.hpp"

#include <fmt/format.h>

#include "trainplan/planner/emit.hpp"

namespace trainplan::planner::emit_detail {

void refuse(const std::string& format, const std::string& what) {
  throw EmitRefused(fmt::format("{{emit}} {}: {}", format, what));
}

bool is_adam(Optimizer o) { return o == Optimizer::adam || o == Optimizer::adamw; }

bool in_deepspeed_section(Optimizer o) { return is_adam(o) || o == Optimizer::lion || o == Optimizer::lamb; }

// DeepSpeed's "optimizer" section. Adam/AdamW step with DeepSpeed's FusedAdam (DeepSpeedCPUAdam
// when offloaded) unless torch_adam asks for torch's; other names resolve to torch.optim
// (DeepSpeed engine.py _is_supported_optimizer / _configure_basic_optimizer, v0.19.6).
std::optional<OJson> deepspeed_optimizer(const model::Training& t, std::vector<std::string>& notes) {
  const OptimizerImpl impl = t.optimizer_implementation();
  switch (t.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw: {
      OJson params = OJson::object();
      const bool torch_adam = impl != OptimizerImpl::deepspeed_fused && impl != OptimizerImpl::deepspeed_cpu;
      if (t.optimizer_impl != OptimizerImpl::framework_default) params["torch_adam"] = torch_adam;
      if (impl == OptimizerImpl::fused || impl == OptimizerImpl::for_loop)
        notes.push_back(fmt::format(
            "DeepSpeed's torch_adam builds torch.optim.AdamW with its defaults (foreach): for {} "
            "pass the optimizer to deepspeed.initialize instead",
            to_string(impl)));
      return OJson{{"type", t.optimizer == Optimizer::adamw ? "AdamW" : "Adam"}, {"params", params}};
    }
    case Optimizer::sgd:
      return OJson{{"type", "SGD"}, {"params", {{"lr", 1e-3}, {"momentum", 0.0}}}};
    case Optimizer::sgd_momentum:
      return OJson{{"type", "SGD"}, {"params", {{"lr", 1e-3}, {"momentum", 0.9}}}};
    case Optimizer::adafactor:
      return OJson{{"type", "Adafactor"}, {"params", OJson::object()}};  // torch >= 2.5
    case Optimizer::galore_adamw:
      refuse("deepspeed", "GaLore projects each weight's whole gradient; DeepSpeed's partitions are not matrices "
                          "(train it with the Trainer's optim galore_adamw on one GPU or DDP)");
      return std::nullopt;
    case Optimizer::lion:  // FusedLion, DeepSpeedCPULion when offloaded (ops/lion)
      return OJson{{"type", "Lion"}, {"params", OJson::object()}};
    case Optimizer::lamb:  // FusedLamb (ops/lamb); ZeRO-Offload has no CPU LAMB
      if (t.offload != Offload::none)
        refuse("deepspeed", "ZeRO-Offload's CPU optimizers are Adam, Adagrad and Lion; LAMB steps on the GPU only");
      return OJson{{"type", "Lamb"}, {"params", OJson::object()}};
    case Optimizer::adamw_8bit:
    case Optimizer::paged_adamw_8bit:
    case Optimizer::paged_adamw:
    case Optimizer::lion_8bit:
    case Optimizer::paged_lion_8bit:
      if (t.offload != Offload::none)
        refuse("deepspeed", fmt::format("ZeRO-Offload steps the optimizer with DeepSpeed's CPU optimizers; "
                                        "{} (bitsandbytes) cannot run on the host",
                                        to_string(t.optimizer)));
      notes.push_back(fmt::format(
          "no optimizer section: pass bitsandbytes' {} to deepspeed.initialize (the Trainer's "
          "--optim {} does)",
          bitsandbytes_class(t.optimizer), trainer_optim(t)));
      return std::nullopt;
  }
  return std::nullopt;
}

// The Hugging Face Trainer's --optim for the optimizer and its implementation
// (transformers.training_args.OptimizerNames); empty when the DeepSpeed config has it.
std::string trainer_optim(const model::Training& t) {
  switch (t.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw:
      switch (t.optimizer_implementation()) {
        case OptimizerImpl::fused:
          return "adamw_torch_fused";
        case OptimizerImpl::for_loop:
          return "adamw_torch --optim_args foreach=False";
        case OptimizerImpl::foreach:
        case OptimizerImpl::framework_default:
          return "adamw_torch";
        case OptimizerImpl::deepspeed_fused:
        case OptimizerImpl::deepspeed_cpu:
          return "";
      }
      return "adamw_torch";
    case Optimizer::adamw_8bit:
      return "adamw_bnb_8bit";
    case Optimizer::paged_adamw_8bit:
      return "paged_adamw_8bit";
    case Optimizer::paged_adamw:
      return "paged_adamw_32bit";
    case Optimizer::sgd:
    case Optimizer::sgd_momentum:
      return "sgd";
    case Optimizer::adafactor:
      return "adafactor";
    case Optimizer::galore_adamw:  // transformers' Trainer; its optim_target_modules in a note (emit.cpp)
      return fmt::format("{} --optim_args rank={}", t.optimizer_in_backward ? "galore_adamw_layerwise" : "galore_adamw",
                         t.galore_rank);
    case Optimizer::lion:
      return "lion_32bit";
    case Optimizer::lion_8bit:
      return "lion_8bit";
    case Optimizer::paged_lion_8bit:
      return "paged_lion_8bit";
    case Optimizer::lamb:
      return "";  // no Trainer name: DeepSpeed's optimizer section only
  }
  return "";
}

// The bitsandbytes class of an 8-bit optimizer (bitsandbytes/optim/).
std::string_view bitsandbytes_class(Optimizer o) {
  switch (o) {
    case Optimizer::adamw_8bit: return "AdamW8bit";
    case Optimizer::paged_adamw_8bit: return "PagedAdamW8bit";
    case Optimizer::paged_adamw: return "PagedAdamW32bit";
    case Optimizer::lion_8bit: return "Lion8bit";
    case Optimizer::paged_lion_8bit: return "PagedLion8bit";
    case Optimizer::adamw:
    case Optimizer::adam:
    case Optimizer::sgd:
    case Optimizer::sgd_momentum:
    case Optimizer::adafactor:
    case Optimizer::lion:
    case Optimizer::lamb:
    case Optimizer::galore_adamw: return "";
  }
  return "";
}

}  // namespace trainplan::planner::emit_detail
