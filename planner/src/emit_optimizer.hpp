#pragma once
// What the launch-config emitters (emit.cpp) share with the optimizer section and names
// (emit_optimizer.cpp) and the script-side notes (emit_notes.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainplan/model/training.hpp"

namespace trainplan::planner::emit_detail {

using OJson = nlohmann::ordered_json;

// `what` names options as {field} (FieldError): each front end words them.
[[noreturn]] void refuse(const std::string& format, const std::string& what);

bool is_adam(Optimizer o);
// The optimizers DeepSpeed's "optimizer" section builds itself (engine.py _configure_basic_optimizer).
bool in_deepspeed_section(Optimizer o);
// The Hugging Face Trainer's --optim for the optimizer and its implementation
// (transformers.training_args.OptimizerNames); empty when only DeepSpeed's section has it.
std::string trainer_optim(const model::Training& t);
// The bitsandbytes class of an 8-bit or paged optimizer (bitsandbytes/optim/), else empty.
std::string_view bitsandbytes_class(Optimizer o);
// DeepSpeed's "optimizer" section, or nullopt where the script passes the optimizer (notes say so).
std::optional<OJson> deepspeed_optimizer(const model::Training& t, std::vector<std::string>& notes);

bool is_fp16(Precision p);
bool is_bf16(Precision p);
bool is_pure_16bit(Precision p);  // fp16-true or bf16-true: no fp32 master weights
// What the training script itself must do, beyond the launcher's configuration.
void note_script_changes(const model::Training& t, std::vector<std::string>& notes);

}  // namespace trainplan::planner::emit_detail
