#pragma once
// LoRA adapters (Hu et al. 2021, arXiv:2106.09685): an adapted Linear(in, out) gains A (r x in) and
// B (out x r), i.e. r * (in + out) trainable parameters.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trainplan/model/architecture.hpp"

namespace trainplan::model {

struct LoraConfig {
  std::int64_t rank = 16;
  double alpha = 32.0;
  // Dropout on each adapter's input (PEFT lora_dropout; litgpt defaults to 0.05): when positive, every
  // adapted linear keeps its own dropped-out input copy and mask for backward.
  double dropout = 0.05;
  // Target tokens: logical roles (q, k, v, o, gate, up, down, router, lm_head), the family's Hugging
  // Face module names (q_proj, query_key_value, c_attn, ...), or "all-linear" (every block linear).
  // A logical role on a fused projection adapts that part only (litgpt's split LoRA); naming the fused
  // module itself adapts the whole projection (PEFT on the fused Linear).
  std::vector<std::string> targets{"q", "v"};
};

struct LoraAdapter {
  Stack stack;
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t copies = 1;  // experts
  [[nodiscard]] std::int64_t parameters(std::int64_t rank) const { return copies * rank * (in + out); }
};

// The adapters of one block of the stack (plus lm_head once, when targeted, with stack decoder and
// copies = 1: callers count it once, not per layer). Throws InputError naming an unknown target and
// listing the valid names for the model.
[[nodiscard]] std::vector<LoraAdapter> lora_block_adapters(const Architecture& a, const LoraConfig& c,
                                                           Stack stack);
[[nodiscard]] bool lora_targets_lm_head(const Architecture& a, const LoraConfig& c);

// Whether the block linear of this role carries an adapter.
[[nodiscard]] bool lora_adapts(const Architecture& a, const LoraConfig& c, Role role);

// lora_adapts for every role at once (one pass over the block's linears), indexed by Role.
using AdaptedRoles = std::array<bool, static_cast<std::size_t>(Role::kv_b) + 1>;
[[nodiscard]] AdaptedRoles adapted_roles(const Architecture& a, const LoraConfig& c);

// Total trainable adapter parameters over the whole model.
[[nodiscard]] std::int64_t lora_parameters(const Architecture& a, const LoraConfig& c);

// "q,v" -> {"q","v"}; trims blanks; throws InputError on an empty list.
[[nodiscard]] std::vector<std::string> split_targets(const std::string& csv);

}  // namespace trainplan::model
