#pragma once
// Exact parameter counts of the Hugging Face implementations (tied weights counted once, as
// DeepSpeed's estimator and PEFT's print_trainable_parameters count them).

#include <cstdint>

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::model {

struct ParameterCounts {
  std::int64_t total = 0;           // every unique parameter
  std::int64_t active = 0;          // used per token: MoE counts top-k experts only
  std::int64_t embedding = 0;       // token (+ learned position) embeddings and their norm
  std::int64_t lm_head = 0;         // 0 when tied to the embedding
  std::int64_t blocks = 0;          // all transformer blocks together
  std::int64_t block_linears = 0;   // linear weights+biases inside blocks (what bitsandbytes quantizes)
  std::int64_t experts = 0;         // MoE: the routed experts' linears, all blocks (part of block_linears)
  // Multi-token prediction modules (Architecture::mtp_layers): their blocks, projections and norms
  // (the embedding and head are shared), outside `blocks`; of which routed experts.
  std::int64_t mtp = 0;
  std::int64_t mtp_experts = 0;
  std::int64_t largest_module = 0;  // max over modules of directly-held parameters (DeepSpeed ZeRO-3)
};

[[nodiscard]] std::int64_t norm_parameters(const Architecture& a);
[[nodiscard]] std::int64_t block_parameters(const Architecture& a, Stack stack);
[[nodiscard]] ParameterCounts count_parameters(const Architecture& a);
// What the optimizer updates: every parameter in full fine-tuning, the adapters' otherwise.
[[nodiscard]] std::int64_t trainable_parameters(const Architecture& a, const ParameterCounts& n, const Training& t);

}  // namespace trainplan::model
