// Optimizer names as training files spell them, in one table: the Hugging Face Trainer's `optim`
// (transformers training_args.py OptimizerNames, v4.57), which TrainingArguments, torchrun
// commands, axolotl and LLaMA-Factory share; axolotl's own names (utils/schemas/enums.py
// CustomSupportedOptimizers); the classes torchtune and litgpt instantiate; DeepSpeed's optimizer
// types (runtime/config.py, compared without case).

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "config_reader.hpp"

namespace trainplan::request::config {
namespace {

// `optimizer` empty: not modelled; `nearest` is the modelled optimizer closest in the memory it
// keeps, which --optimizer can choose instead.
struct OptimizerName {
  std::string_view name, optimizer, impl, note, nearest;
};

constexpr std::string_view kPagedLion32 =
    "paged 32-bit Lion keeps Lion's fp32 momentum (paged to the host only when the GPU runs out): "
    "priced as Lion";

constexpr std::array kOptimizerNames{
    // Trainer `optim`: torch's AdamW with its default (foreach on CUDA), fused=True, transformers'
    // own per-parameter AdamW (removed in v4.49, still in older files), Apex's fused AdamW.
    OptimizerName{"adamw_torch", "adamw", "", "", ""},
    OptimizerName{"adamw_torch_fused", "adamw", "fused", "", ""},
    OptimizerName{"adamw_hf", "adamw", "for-loop", "", ""},
    OptimizerName{"adamw_apex_fused", "adamw", "", "Apex's fused AdamW keeps torch AdamW's states: priced as AdamW", ""},
    OptimizerName{"adamw_torch_xla", "", "", "AdamW on a TPU", "adamw"},
    OptimizerName{"adamw_torch_npu_fused", "", "", "AdamW fused for Ascend NPUs", "adamw"},
    OptimizerName{"adamw_anyprecision", "", "", "torchdistx's AnyPrecisionAdamW keeps bf16 moments", "adamw"},
    OptimizerName{"adamw_torch_4bit", "", "", "torchao's 4-bit AdamW", "adamw-8bit"},
    OptimizerName{"adamw_torch_8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"adamw_bnb_8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"adamw_8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"paged_adamw_8bit", "paged-adamw-8bit", "", "", ""},
    OptimizerName{"paged_adamw_32bit", "paged-adamw", "", "", ""},
    OptimizerName{"lion_32bit", "lion", "", "", ""},
    OptimizerName{"lion_8bit", "lion-8bit", "", "", ""},
    OptimizerName{"paged_lion_32bit", "lion", "", kPagedLion32, ""},
    OptimizerName{"paged_lion_8bit", "paged-lion-8bit", "", "", ""},
    OptimizerName{"adafactor", "adafactor", "", "", ""},
    OptimizerName{"sgd", "sgd", "", "", ""},
    OptimizerName{"adagrad", "", "", "Adagrad keeps one fp32 sum of squares per parameter", "sgd-momentum"},
    OptimizerName{"ademamix", "", "", "AdEMAMix keeps three fp32 moments per parameter", "adamw"},
    OptimizerName{"ademamix_8bit", "", "", "8-bit AdEMAMix keeps three 1-byte moments", "adamw-8bit"},
    OptimizerName{"paged_ademamix_32bit", "", "", "AdEMAMix keeps three fp32 moments per parameter", "adamw"},
    OptimizerName{"paged_ademamix_8bit", "", "", "8-bit AdEMAMix keeps three 1-byte moments", "paged-adamw-8bit"},
    OptimizerName{"rmsprop", "", "", "RMSprop keeps one square average per parameter", "sgd-momentum"},
    OptimizerName{"rmsprop_bnb", "", "", "RMSprop keeps one square average per parameter", "sgd-momentum"},
    OptimizerName{"rmsprop_bnb_8bit", "", "", "8-bit RMSprop keeps one 1-byte state", "lion-8bit"},
    OptimizerName{"rmsprop_bnb_32bit", "", "", "RMSprop keeps one square average per parameter", "sgd-momentum"},
    // transformers' GaLore (trainer.py: galore_torch's GaLoreAdamW on optim_target_modules; the
    // _layerwise names step each parameter from its own hook in backward: optimizer-in-backward).
    OptimizerName{"galore_adamw", "galore-adamw", "", "", ""},
    OptimizerName{"galore_adamw_8bit", "", "", "GaLore keeps AdamW's moments in a low-rank projection", "adamw-8bit"},
    OptimizerName{"galore_adafactor", "", "", "GaLore keeps Adafactor's moments in a low-rank projection", "adafactor"},
    OptimizerName{"galore_adamw_layerwise", "galore-adamw", "", "", ""},
    OptimizerName{"galore_adamw_8bit_layerwise", "", "", "layer-wise GaLore steps in the backward pass", "adamw-8bit"},
    OptimizerName{"galore_adafactor_layerwise", "", "", "layer-wise GaLore steps in the backward pass", "adafactor"},
    OptimizerName{"apollo_adamw", "", "", "APOLLO keeps low-rank AdamW states", "adamw"},
    OptimizerName{"apollo_adamw_layerwise", "", "", "APOLLO keeps low-rank AdamW states", "adamw"},
    OptimizerName{"lomo", "", "", "LOMO fuses the update into the backward pass and keeps no state", "sgd"},
    OptimizerName{"adalomo", "", "", "AdaLomo fuses the update into the backward pass", "adafactor"},
    OptimizerName{"grokadamw", "", "", "GrokAdamW keeps a gradient EMA besides AdamW's moments", "adamw"},
    OptimizerName{"schedule_free_adamw", "", "", "schedule-free AdamW keeps its own iterate sequences", "adamw"},
    OptimizerName{"schedule_free_radam", "", "", "schedule-free RAdam keeps its own iterate sequences", "adamw"},
    OptimizerName{"schedule_free_sgd", "", "", "schedule-free SGD keeps one iterate sequence", "sgd-momentum"},
    OptimizerName{"stable_adamw", "", "", "StableAdamW's update differs from AdamW's", "adamw"},
    // axolotl's own names.
    OptimizerName{"optimi_adamw", "adamw", "", "torch-optimi's AdamW keeps torch AdamW's states: priced as AdamW", ""},
    OptimizerName{"ao_adamw_8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"ao_adamw_4bit", "", "", "torchao's 4-bit AdamW", "adamw-8bit"},
    OptimizerName{"ao_adamw_fp8", "", "", "torchao's AdamW with FP8 moments", "adamw-8bit"},
    OptimizerName{"adopt_adamw", "", "", "ADOPT's update differs from AdamW's", "adamw"},
    OptimizerName{"came_pytorch", "", "", "CAME keeps factored moments and a confidence term", "adafactor"},
    OptimizerName{"muon", "", "", "Muon orthogonalises a momentum of each matrix", "sgd-momentum"},
    OptimizerName{"dion", "", "", "Dion orthogonalises a low-rank momentum of each matrix", "sgd-momentum"},
    // Classes (torchtune's _component_, litgpt's class_path and short names).
    OptimizerName{"torch.optim.AdamW", "adamw", "", "", ""},
    OptimizerName{"torch.optim.Adam", "adam", "", "", ""},
    OptimizerName{"torch.optim.SGD", "sgd", "", "", ""},
    OptimizerName{"torch.optim.Adafactor", "adafactor", "", "", ""},
    OptimizerName{"AdamW", "adamw", "", "", ""},
    OptimizerName{"Adam", "adam", "", "", ""},
    OptimizerName{"SGD", "sgd", "", "", ""},
    OptimizerName{"bitsandbytes.optim.AdamW8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"bitsandbytes.optim.PagedAdamW8bit", "paged-adamw-8bit", "", "", ""},
    OptimizerName{"bitsandbytes.optim.PagedAdamW", "paged-adamw", "", "", ""},
    OptimizerName{"bitsandbytes.optim.PagedAdamW32bit", "paged-adamw", "", "", ""},
    OptimizerName{"bitsandbytes.optim.Lion", "lion", "", "", ""},
    OptimizerName{"bitsandbytes.optim.Lion8bit", "lion-8bit", "", "", ""},
    OptimizerName{"bitsandbytes.optim.PagedLion8bit", "paged-lion-8bit", "", "", ""},
    OptimizerName{"torchao.optim.AdamW8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"torchao.prototype.low_bit_optim.AdamW8bit", "adamw-8bit", "", "", ""},
    OptimizerName{"torchao.optim.AdamW4bit", "", "", "torchao's 4-bit AdamW", "adamw-8bit"},
    OptimizerName{"torchao.prototype.low_bit_optim.AdamW4bit", "", "", "torchao's 4-bit AdamW", "adamw-8bit"},
    OptimizerName{"torchao.optim.AdamWFp8", "", "", "torchao's AdamW with FP8 moments", "adamw-8bit"},
    OptimizerName{"torch.optim.Adagrad", "", "", "Adagrad keeps one fp32 sum of squares per parameter", "sgd-momentum"},
    OptimizerName{"torch.optim.RMSprop", "", "", "RMSprop keeps one square average per parameter", "sgd-momentum"},
    // DeepSpeed types (lower case): FusedLamb, FusedLion; 1-bit Adam, 0/1 Adam and 1-bit LAMB keep
    // error-feedback buffers besides the moments.
    OptimizerName{"lamb", "lamb", "", "", ""},
    OptimizerName{"lion", "lion", "", "", ""},
    OptimizerName{"onebitadam", "", "", "1-bit Adam keeps error-feedback buffers besides Adam's moments", "adam"},
    OptimizerName{"zerooneadam", "", "", "0/1 Adam keeps error-feedback buffers besides Adam's moments", "adam"},
    OptimizerName{"onebitlamb", "", "", "1-bit LAMB keeps error-feedback buffers besides LAMB's moments", "lamb"},
    OptimizerName{"muadam", "adam", "", "", ""},
    OptimizerName{"muadamw", "adamw", "", "", ""},
    OptimizerName{"musgd", "sgd", "", "", ""},
};

}  // namespace

void set_optimizer_name(Reader& r, const std::string& key, const Json& raw, bool any_case) {
  if (!raw.is_string()) r.fail(key, raw, "must be an optimizer name");
  std::string name = raw.get<std::string>();
  if (any_case)
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto row = std::find_if(kOptimizerNames.begin(), kOptimizerNames.end(),
                                [&name](const OptimizerName& o) { return o.name == name; });
  if (row == kOptimizerNames.end()) {
    r.unmodelled("optimizer", key, raw, "an optimizer trainplan does not know", "adamw");
    return;
  }
  if (row->optimizer.empty()) {
    r.unmodelled("optimizer", key, raw, std::string(row->note) + "; not modelled", std::string(row->nearest));
    return;
  }
  r.set("optimizer", std::string(row->optimizer), key, raw);
  if (!row->impl.empty()) r.set("optimizer-impl", std::string(row->impl), key, raw);
  if (row->optimizer == "galore-adamw" && name.ends_with("_layerwise")) r.set("optimizer-in-backward", "true", key, raw);
  if (!row->note.empty()) r.warn(key + " = " + raw.get<std::string>() + ": " + std::string(row->note));
}

}  // namespace trainplan::request::config
