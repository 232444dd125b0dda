#pragma once
// The GPT models of the Megatron-LM papers as architectures: 4h GeLU MLP, LayerNorm, biases,
// learned positions, vocabulary 51200, tied embeddings (Narayanan et al. 2021, arXiv:2104.04473,
// Sec. 5; Korthikanti et al. 2022, arXiv:2205.05198, Sec. 6).

#include <cstdint>
#include <string>

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::test {

inline model::Architecture megatron_gpt(const std::string& name, std::int64_t h,
                                        std::int64_t layers, std::int64_t heads) {
  model::Architecture a;
  a.name = name;
  a.family = "gpt2";
  a.hidden = h;
  a.layers = layers;
  a.heads = heads;
  a.kv_heads = heads;
  a.head_dim = h / heads;
  a.intermediate = 4 * h;
  a.vocab = 51200;
  a.max_seq = 2048;
  a.mlp = model::MlpKind::plain;
  a.activation = model::Activation::gelu;
  a.norm = model::NormKind::layernorm;
  a.position = model::PositionKind::learned;
  a.tie_embeddings = true;
  a.qkv_bias = a.out_bias = a.mlp_bias = true;
  a.hidden_dropout = 0.1;
  a.attention_dropout = 0.1;
  a.fused_qkv_name = "c_attn";
  return a;
}

// Megatron-LM training of the papers: fp16 mixed precision, data-parallel all-reduce, the fused
// softmax attention of the time (no FlashAttention), micro-batches per step from the global batch.
inline model::Training megatron_training(int tp, int pp, int virtual_stages, int dp,
                                         std::int64_t global_batch, std::int64_t micro_batch,
                                         Checkpointing ck, bool sequence_parallel) {
  model::Training tr;
  tr.framework = Framework::megatron;
  tr.precision = Precision::fp16_mixed;
  tr.optimizer = Optimizer::adam;
  tr.strategy = Strategy::ddp;
  tr.tp = tp;
  tr.pp = pp;
  tr.pp_virtual = virtual_stages;
  tr.sequence_parallel = sequence_parallel;
  tr.micro_batch = micro_batch;
  tr.grad_accum = global_batch / (micro_batch * dp);
  tr.seq = 2048;
  tr.checkpointing = ck;
  tr.attention = Attention::eager;
  return tr;
}

}  // namespace trainplan::test
