#include "trainplan/planner/memory.hpp"

#include <string>

#include "trainplan/core/checked.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/partial.hpp"
#include "memory_checks.hpp"

// The checks a training configuration passes before any memory or time is worked out.

namespace trainplan::planner {

std::string sequences_words(const model::Training& tr) {
  return tr.objective == Objective::sft ? "{micro-batch}" : "2 x {micro-batch} (two sequences a pair)";
}

namespace {

using model::Architecture;
using model::Training;

std::string str(std::int64_t v) { return std::to_string(v); }

// Partial fine-tuning (model/partial.hpp): of a full fine-tune, its layers in the model, under the
// engines whose accounting holds a partly frozen model (Hugging Face models under PyTorch or
// DeepSpeed).
void check_partial(const Architecture& a, const Training& tr) {
  if (!tr.partial.active) return;
  if (tr.method != Method::full)
    throw FieldError("{trainable} chooses the weights a full fine-tune trains; with {method} " +
                     std::string(to_string(tr.method)) + " only the adapters train (use --method full)");
  if (tr.framework == Framework::megatron)
    throw FieldError("{trainable}: partial fine-tuning under {framework} megatron is not modelled (Megatron-LM "
                     "trains every weight); use pytorch or deepspeed");
  if (tr.optimizer == Optimizer::galore_adamw)
    throw FieldError("{trainable}: GaLore's AdamW with a partly frozen model is not modelled");
  try {
    model::check_trained_subset(a, tr.partial, "{trainable}");
  } catch (const InputError& e) {
    throw FieldError(e.what());
  }
}

// The bounds on counts that every product the model forms from them stays exact and finite (see
// memory.hpp).
void check_token_counts(const Training& tr) {
  const std::string b = sequences_words(tr);
  std::int64_t tokens = 0;
  // sequences() doubles the micro-batch of a pair: only once it is bounded.
  const std::int64_t seqs = tr.micro_batch > kMaxTokensPerMicroBatch ? tr.micro_batch : tr.sequences();
  if (tr.micro_batch > kMaxTokensPerMicroBatch || !product_within({seqs, tr.seq}, kMaxTokensPerMicroBatch, tokens))
    throw FieldError(b + " x {seq} = " + product_text({seqs, tr.seq}) +
                     " tokens on each GPU: their input ids alone (8 bytes a token) would need more than "
                     "1 TiB, beyond the memory of any GPU");
  if (!product_within({tr.sequences(), tr.seq, tr.grad_accum}, kMaxTokensPerStep, tokens))
    throw FieldError(b + " x {seq} x {grad-accum} = " + product_text({tr.sequences(), tr.seq, tr.grad_accum}) +
                     " tokens per model replica in one optimizer step, beyond " + str(kMaxTokensPerStep) +
                     " (2^50, more than any training run's whole data)");
}

}  // namespace

// Context parallelism as Megatron-Core and Transformer Engine accept it: the sequence in 2 cp
// chunks for the load-balanced causal split of the ring and all-gather exchanges
// (megatron/training/arguments.py: seq_length % (2 * context_parallel_size)); all-to-all splits
// the heads, query and key/value alike (TE attention: num_heads % cp_size). A fused attention
// kernel: no library splits eager attention's score matrix.
std::optional<std::string> context_parallel_problem(const Architecture& a, const Training& tr) {
  if (tr.cp < 1) return "{cp} must be at least 1 (got " + str(tr.cp) + ")";
  if (tr.cp == 1) return std::nullopt;
  if (tr.attention == Attention::eager)
    return "{cp} " + str(tr.cp) + " needs a fused attention kernel ({attention} flash or sdpa): "
           "context parallelism splits the fused kernel's blocks, not eager attention's scores";
  if (tr.cp_comm == CpComm::all_to_all) {
    const std::int64_t q = a.heads / std::max(1, tr.tp);
    const std::int64_t kv = std::max<std::int64_t>(1, a.kv_heads / std::max(1, tr.tp));
    if (q % tr.cp != 0 || kv % tr.cp != 0)
      return "{cp} " + str(tr.cp) + " with {cp-comm} all-to-all splits the heads: it must divide the " + str(q) +
             " query and " + str(kv) + " key/value heads of model '" + a.name +
             "' on each tensor-parallel rank (use {cp-comm} ring)";
    if (tr.seq % tr.cp != 0) return "{cp} " + str(tr.cp) + " does not divide {seq} " + str(tr.seq);
  } else if (tr.seq % (2 * tr.cp) != 0) {
    return "{seq} " + str(tr.seq) + " is not divisible by 2 x {cp} = " + str(2 * tr.cp) +
           ": the load-balanced split cuts each sequence into 2 cp chunks";
  }
  return std::nullopt;
}

namespace {
// The checkpointing policies a framework or a model cannot run.
void check_checkpointing(const Architecture& a, const Training& tr) {
  if (tr.checkpointing == Checkpointing::full_offload && tr.framework == Framework::megatron)
    throw FieldError("{checkpointing} full-offload is not modelled for the megatron framework (use full)");
  if (tr.checkpointing == Checkpointing::selective_op && tr.framework == Framework::megatron)
    throw FieldError("{checkpointing} selective-op is torchtitan's per-op policy; Megatron-LM has none "
                     "(use selective or full)");
  if (tr.checkpoint_every < 1)
    throw FieldError("{checkpoint-every} must be at least 1 (got " + str(tr.checkpoint_every) + ")");
  if (tr.checkpoint_layers < 0)
    throw FieldError("{checkpoint-layers} must be 0 (every block) or more (got " + str(tr.checkpoint_layers) + ")");
  if (tr.checkpoint_every > 1 && tr.checkpoint_layers > 0)
    throw FieldError("{checkpoint-every} and {checkpoint-layers} choose the checkpointed blocks two ways; give one");
  if (tr.checkpoint_group < 1)
    throw FieldError("{checkpoint-group} must be at least 1 (got " + str(tr.checkpoint_group) + ")");
  if (tr.checkpoint_group > 1 && (tr.checkpoint_every > 1 || tr.checkpoint_layers > 0))
    throw FieldError("{checkpoint-group} checkpoints every block in groups; {checkpoint-every} and "
                     "{checkpoint-layers} checkpoint some blocks only: give one");
  if (tr.checkpoint_group > 1 && tr.checkpointing == Checkpointing::full && a.encoder_decoder)
    throw FieldError("{checkpoint-group}: checkpointing groups of blocks of an encoder-decoder model is not modelled");
  if (tr.checkpoint_every > 1 && tr.checkpointing == Checkpointing::full && tr.framework == Framework::megatron)
    throw FieldError("{checkpoint-every} is torchtitan's layer-selective checkpointing; Megatron-LM's "
                     "--recompute-method block is {checkpoint-layers}, its uniform groups {checkpoint-group}");
  if (tr.checkpoint_every > 1 && tr.checkpointing == Checkpointing::full && a.encoder_decoder)
    throw FieldError("{checkpoint-every}: checkpointing one block in N of an encoder-decoder model is not modelled");
}

// Megatron-Core's CPU offloading of activations, as its TransformerConfig.__post_init__ admits it.
void check_activation_offload(const Architecture& a, const Training& tr) {
  const int n = tr.offload_activation_layers;
  if (n == 0) return;
  if (n < 0) throw FieldError("{offload-activations} must be 0 (none) or more (got " + str(n) + ")");
  if (tr.framework != Framework::megatron)
    throw FieldError("{offload-activations} is Megatron-Core's CPU offloading (Transformer Engine's offload "
                     "context): it needs {framework} megatron");
  if (n >= a.total_layers())
    throw FieldError("{offload-activations} " + str(n) + ": Megatron-Core offloads fewer layers than the model's " +
                     str(a.total_layers()) + " (cpu_offloading_num_layers < num_layers)");
  if (tr.pp > 1)
    throw FieldError("{offload-activations} with {pp} " + str(tr.pp) +
                     ": Megatron-Core has no CPU offloading under pipeline parallelism");
  if (tr.checkpointing != Checkpointing::none)
    throw FieldError("{offload-activations}: Megatron-Core's CPU offloading does not work with activation "
                     "recomputation (use {checkpointing} none)");
}
}  // namespace

void validate_training(const Architecture& a, const Training& tr) {
  if (tr.tp < 1) throw FieldError("{tp} must be at least 1 (got " + str(tr.tp) + ")");
  if (tr.pp < 1) throw FieldError("{pp} must be at least 1 (got " + str(tr.pp) + ")");
  if (tr.pp_virtual < 1)
    throw FieldError("{pp-virtual} must be at least 1 (got " + str(tr.pp_virtual) + ")");
  if (tr.micro_batch < 1)
    throw FieldError("{micro-batch} must be at least 1 (got " + str(tr.micro_batch) + ")");
  if (tr.grad_accum < 1)
    throw FieldError("{grad-accum} must be at least 1 (got " + str(tr.grad_accum) + ")");
  if (tr.seq < 1) throw FieldError("{seq} must be at least 1 (got " + str(tr.seq) + ")");
  check_token_counts(tr);
  if (a.position == model::PositionKind::learned && tr.seq > a.max_seq)
    throw FieldError("{seq} " + str(tr.seq) + " exceeds the " + str(a.max_seq) +
                     " learned positions of model '" + a.name + "'");
  if (a.heads % tr.tp != 0)
    throw FieldError("{tp} " + str(tr.tp) + " does not divide the " + str(a.heads) +
                     " attention heads of model '" + a.name + "'");
  if (tr.pp > a.total_layers())
    throw FieldError("{pp} " + str(tr.pp) + " exceeds the " + str(a.total_layers()) +
                     " layers of model '" + a.name + "'");
  if (tr.pp_virtual > 1 && (tr.pp == 1 || a.total_layers() % (tr.pp * tr.pp_virtual) != 0))
    throw FieldError("{pp-virtual} " + str(tr.pp_virtual) + " needs {pp} > 1 and " +
                     str(a.total_layers()) + " layers divisible by pp x pp-virtual");
  check_checkpointing(a, tr);
  check_activation_offload(a, tr);
  if (tr.quant_block < 64 || tr.quant_block > 4096 || (tr.quant_block & (tr.quant_block - 1)) != 0)
    throw FieldError("{quant-block} must be a power of two from 64 to 4096, as bitsandbytes takes (got " +
                     str(tr.quant_block) + ")");
  if (tr.ep < 1) throw FieldError("{expert-parallel} must be at least 1 (got " + str(tr.ep) + ")");
  // galore_torch projects whole 2-D gradients: full fine-tuning of unflattened parameters (one GPU
  // or DDP; FSDP's flat shards and DeepSpeed's partitions are not matrices).
  if (tr.optimizer == Optimizer::galore_adamw) {
    if (tr.method != Method::full)
      throw FieldError("{optimizer} galore-adamw trains full weights through low-rank gradients; it is not an "
                       "adapter's optimizer (use --method full)");
    if (tr.framework != Framework::pytorch || (tr.strategy != Strategy::single && tr.strategy != Strategy::ddp))
      throw FieldError("{optimizer} galore-adamw projects each weight's whole gradient: one GPU or DDP under "
                       "{framework} pytorch, not " + std::string(to_string(tr.strategy)) + " under " +
                       std::string(to_string(tr.framework)));
    if (tr.galore_rank < 1) throw FieldError("{galore-rank} must be at least 1 (got " + str(tr.galore_rank) + ")");
  }
  if (tr.optimizer_in_backward && tr.framework != Framework::pytorch)
    throw FieldError("{optimizer-in-backward} is torchtune's, under {framework} pytorch (DeepSpeed and Megatron "
                     "step after backward)");
  if (tr.optimizer_in_backward && tr.grad_accum > 1)
    throw FieldError("{optimizer-in-backward} steps each parameter as soon as its gradient is complete, so "
                     "gradients cannot accumulate over micro-batches: it needs {grad-accum} 1 (got " +
                     str(tr.grad_accum) + "; torchtune refuses it too)");
  if (tr.bf16_optimizer_states && !tr.bf16_master)
    throw FieldError("{bf16-optimizer-states} needs {bf16-master-weights} (DeepSpeed keeps bf16 moments only "
                     "beside bf16 master weights)");
  if (tr.bf16_master && (tr.framework != Framework::deepspeed || tr.precision != Precision::bf16_mixed))
    throw FieldError("{bf16-master-weights} is DeepSpeed's, with bf16-mixed precision (got " +
                     std::string(to_string(tr.framework)) + ", " + std::string(to_string(tr.precision)) + ")");
  if (const auto why = context_parallel_problem(a, tr)) throw FieldError(*why);
  if (!optimizer_impl_allows(tr.optimizer_impl, tr.offload) && tr.offload == Offload::none)
    throw FieldError("{optimizer-impl} deepspeed-cpu steps on the host: it needs {offload} optimizer");
  if (!optimizer_impl_allows(tr.optimizer_impl, tr.offload))
    throw FieldError(std::string("{optimizer-impl} ") + std::string(to_string(tr.optimizer_impl)) +
                     " runs on the GPU, but {offload} puts the optimizer on the host (use default "
                     "or deepspeed-cpu)");
  check_partial(a, tr);
  if (tr.ep > 1 && !a.is_moe())
    throw FieldError("{expert-parallel} " + str(tr.ep) + ": model '" + a.name +
                     "' has no experts (it is not a mixture of experts)");
  if (tr.ep > 1 && a.experts % tr.ep != 0)
    throw FieldError("{expert-parallel} " + str(tr.ep) + " does not divide the " + str(a.experts) +
                     " experts of model '" + a.name + "'");
}


}  // namespace trainplan::planner
