// The op list of a block (model/block_ops.hpp): the one walk of a transformer block that the
// activation memory, the times and the replay fold. Checked here against what the sources say a
// block runs; the folds themselves are checked against the PyTorch oracle, the Korthikanti tables
// and the H200 runs (validate, test_activations.cpp, tests/planner).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/model/activations.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/flops.hpp"
#include "trainplan/model/fp8.hpp"
#include "trainplan/model/library.hpp"
#include "trainplan/model/model_states.hpp"

namespace trainplan {
namespace {

using test::catalog;

model::Training training(Framework f, int tp = 1) {
  model::Training tr;
  tr.framework = f;
  tr.precision = Precision::bf16_mixed;
  tr.seq = 2048;
  tr.micro_batch = 2;
  tr.tp = tp;
  tr.cuda_sm = 90;  // an H100
  tr.attention = Attention::flash;
  return tr;
}

std::size_t count(const model::BlockOps& ops, model::OpKind kind) {
  return static_cast<std::size_t>(
      std::count_if(ops.ops.begin(), ops.ops.end(), [&](const model::Op& op) { return op.kind == kind; }));
}

bool has(const model::BlockOps& ops, std::string_view name) {
  return std::any_of(ops.ops.begin(), ops.ops.end(), [&](const model::Op& op) { return op.name == name; });
}

// The bytes of a block's saved terms whose name holds `part`.
double bytes(const std::vector<model::ActivationTerm>& ts, std::string_view part) {
  double sum = 0.0;
  for (const auto& t : ts)
    if (t.name.find(part) != std::string::npos) sum += t.bytes.value();
  return sum;
}

// Every linear of the block is one GEMM of the list, for each framework's accounting, and the
// list's forward GEMM FLOPs are model::flop_coefficients' (2 x in x out per token of each linear,
// worked out from the linears, not the GEMMs; balanced routing for MoE within the rounding of tokens per expert).
TEST(BlockOps, EveryLinearIsOneGemmWithTheModelsFlops) {
  for (const char* name : {"llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b", "phi-3-mini-4k", "gpt2"}) {
    SCOPED_TRACE(name);
    const model::Architecture a = catalog().resolve_model(name).arch;
    for (Framework f : {Framework::pytorch, Framework::megatron}) {
      const model::Training tr = training(f);
      const model::BlockOps ops = model::block_ops(a, tr, model::Stack::decoder);
      EXPECT_EQ(count(ops, model::OpKind::gemm), model::block_linears(a, model::Stack::decoder).size());
      double flops = 0.0;
      for (const model::Op& op : ops.ops)
        if (op.kind == model::OpKind::gemm)
          flops += 2.0 * static_cast<double>(op.gemm.m * op.gemm.n * op.gemm.k * op.gemm.count);
      // flop_coefficients sums over the layers.
      const double per_token = flops / static_cast<double>(tr.tokens_per_micro_batch()) *
                               static_cast<double>(a.total_layers());
      EXPECT_NEAR(per_token, model::flop_coefficients(a, tr).linear, (a.is_moe() ? 1e-3 : 1e-9) * per_token);
    }
  }
}

// Tensor parallelism splits the GEMMs as Megatron's column- and row-parallel linears do (Shoeybi et
// al. 2019, arXiv:1909.08053, Sec. 3): q, k, v, gate and up their outputs, o and down their inputs.
TEST(BlockOps, TensorParallelGemmsSplitAsMegatron) {
  const model::Architecture a = catalog().resolve_model("llama-2-13b").arch;  // 40 heads, no GQA
  const model::BlockOps one = model::block_ops(a, training(Framework::megatron, 1), model::Stack::decoder);
  const model::BlockOps four = model::block_ops(a, training(Framework::megatron, 4), model::Stack::decoder);
  ASSERT_EQ(one.ops.size(), four.ops.size());
  for (std::size_t i = 0; i < one.ops.size(); ++i) {
    if (one.ops[i].kind != model::OpKind::gemm) continue;
    const model::GemmShape& g1 = one.ops[i].gemm;
    const model::GemmShape& g4 = four.ops[i].gemm;
    SCOPED_TRACE(to_string(g1.role));
    const bool row = g1.role == model::Role::o || g1.role == model::Role::down;
    EXPECT_EQ(g4.m, g1.m);
    EXPECT_EQ(g4.k, row ? g1.k / 4 : g1.k);
    EXPECT_EQ(g4.n, row ? g1.n : g1.n / 4);
  }
}

// One attention core per attention the block runs: T5's decoder attends to itself and to the
// encoder output; its encoder is bidirectional.
TEST(BlockOps, OneAttentionCorePerAttention) {
  const model::Architecture t5 = catalog().resolve_model("t5-3b").arch;
  const model::Training tr = training(Framework::pytorch);
  const model::BlockOps enc = model::block_ops(t5, tr, model::Stack::encoder);
  const model::BlockOps dec = model::block_ops(t5, tr, model::Stack::decoder);
  ASSERT_EQ(count(enc, model::OpKind::attention_core), 1u);
  EXPECT_FALSE(std::find_if(enc.ops.begin(), enc.ops.end(), [](const model::Op& op) {
                 return op.kind == model::OpKind::attention_core;
               })->attention.causal);
  EXPECT_EQ(count(dec, model::OpKind::attention_core), 2u);
  const model::Architecture llama = catalog().resolve_model("llama-3.1-8b").arch;
  EXPECT_EQ(count(model::block_ops(llama, tr, model::Stack::decoder), model::OpKind::attention_core), 1u);
}

// Llama 4 Scout (Llama4TextAttention): three layers in four rotate q and k and L2-norm them; the
// fourth has neither and scales its queries by a position temperature instead.
TEST(BlockOps, Llama4NopeLayersHaveNoRotaryOps) {
  const model::Architecture a = catalog().resolve_model("llama-4-scout").arch;
  const model::StackOps s = model::stack_ops(a, training(Framework::pytorch), model::Stack::decoder);
  EXPECT_TRUE(has(s.block, "rotary q") && has(s.block, "q norm"));
  EXPECT_FALSE(has(s.block, "query temperature"));
  ASSERT_EQ(s.variants.size(), 1u);
  const model::BlockOps& nope = s.variants[0].ops;
  EXPECT_FALSE(has(nope, "rotary q") || has(nope, "q norm"));
  EXPECT_TRUE(has(nope, "query temperature"));
  EXPECT_DOUBLE_EQ(s.variants[0].share, 0.25);  // 12 of Scout's 48 layers
  EXPECT_DOUBLE_EQ(s.block_share, 0.75);
}

// Eager attention keeps the s x s probabilities, which selective checkpointing drops; a fused
// kernel keeps its output and the log-sum-exp instead (Dao et al. 2022, arXiv:2205.14135, Sec. 3.1).
// Both are kept by the attention core's op.
TEST(BlockOps, TheAttentionCoreKeepsWhatSelectiveCheckpointingDrops) {
  const model::Architecture a = catalog().resolve_model("llama-3.1-8b").arch;
  model::Training tr = training(Framework::pytorch);
  for (Attention at : {Attention::eager, Attention::flash}) {
    tr.attention = at;
    const model::BlockOps ops = model::block_ops(a, tr, model::Stack::decoder);
    const double s = static_cast<double>(tr.seq);
    const double scores = static_cast<double>(a.heads) * s * s * static_cast<double>(tr.micro_batch);
    if (at == Attention::eager) {
      EXPECT_GT(ops.saved_core_bytes().value(), scores);  // at least one byte per score
    } else {
      EXPECT_EQ(ops.saved_core_bytes().value(), 0.0);
    }
    for (const model::SavedTensor& t : ops.saved) {
      ASSERT_LT(t.op, ops.ops.size());
      if (t.core) {
        EXPECT_EQ(ops.ops[t.op].kind, model::OpKind::attention_core);
      }
    }
  }
}

// Megatron-Core's expert capacity (moe_utils.py get_capacity(num_tokens x topk, experts, factor) =
// ceil(t k / E x factor), Megatron-LM @ d98e8a6): an expert's GEMMs multiply at most that many of
// the t k / E tokens a balanced router sends it, exactly that many when padded
// (token_dispatcher.py drop_and_pad), and its permuted tokens and intermediates follow. Mixtral
// (E 8, k 2), 2 x 2048 tokens: 1024 routed per expert.
TEST(BlockOps, MegatronExpertCapacityCapsOrPadsEachExpertsTokens) {
  const model::Architecture a = catalog().resolve_model("mixtral-8x7b").arch;
  const auto expert_m = [&](const model::Training& tr) {
    for (const model::Op& op : model::block_ops(a, tr, model::Stack::decoder).ops)
      if (op.kind == model::OpKind::gemm && op.gemm.expert()) return op.gemm.m;
    return std::int64_t{0};
  };
  const auto permuted = [&](const model::Training& tr) {
    for (const model::Op& op : model::block_ops(a, tr, model::Stack::decoder).ops)
      if (op.name == "token permutation") return op.elements;
    return 0.0;
  };
  const auto saved = [&](const model::Training& tr) {
    return model::block_ops(a, tr, model::Stack::decoder).saved_bytes().value();
  };
  // The experts' grouped GEMM keeps the permuted tokens it multiplies.
  const auto permuted_kept = [&](const model::Training& tr) {
    for (const model::SavedTensor& t : model::block_ops(a, tr, model::Stack::decoder).saved)
      if (t.name == "permuted tokens (routed experts' input)") return t.bytes.value();
    return 0.0;
  };
  const model::Training dropless = training(Framework::megatron);
  ASSERT_EQ(expert_m(dropless), 1024);
  ASSERT_GT(permuted_kept(dropless), 0.0);
  struct Case {
    double factor;
    bool pad;
    std::int64_t tokens;  // get_capacity's, or the routed 1024 where the capacity is above them
  };
  for (const Case c : {Case{1.25, false, 1024}, Case{1.25, true, 1280}, Case{0.5, false, 512}, Case{0.5, true, 512},
                       Case{1.1, true, 1127}}) {
    SCOPED_TRACE(c.factor);
    model::Training tr = dropless;
    tr.moe_capacity_factor = c.factor;
    tr.moe_pad_to_capacity = c.pad;
    EXPECT_EQ(expert_m(tr), c.tokens);
    const double share = static_cast<double>(c.tokens) / 1024.0;
    EXPECT_NEAR(permuted(tr), permuted(dropless) * share, 1e-9 * permuted(dropless));
    EXPECT_NEAR(permuted_kept(tr), permuted_kept(dropless) * share, 1e-9 * permuted_kept(dropless));
    if (c.tokens == 1024) {
      EXPECT_DOUBLE_EQ(saved(tr), saved(dropless));
    } else if (c.tokens > 1024) {
      EXPECT_GT(saved(tr), saved(dropless));
    } else {
      EXPECT_LT(saved(tr), saved(dropless));
    }
  }
  // Each rank routes its own sequence shard under sequence parallelism: 2048 tokens, 512 per expert,
  // a capacity of ceil(512 x 1.1) = 564 from each of the two ranks.
  model::Training sp = training(Framework::megatron, 2);
  sp.sequence_parallel = true;
  sp.moe_capacity_factor = 1.1;
  sp.moe_pad_to_capacity = true;
  EXPECT_EQ(expert_m(sp), 1128);
  // Hugging Face's blocks are dropless whatever the factor.
  model::Training hf = training(Framework::pytorch);
  const std::int64_t hf_m = expert_m(hf);
  hf.moe_capacity_factor = 0.5;
  hf.moe_pad_to_capacity = true;
  EXPECT_EQ(expert_m(hf), hf_m);
}

// PyTorch FSDP under mixed precision gathers each unit's weights in the compute dtype (FSDP
// MixedPrecision(param_dtype=bf16): accelerate's FullyShardedDataParallelPlugin.set_mixed_precision,
// Composer's DEFAULT and PURE), so the block computes as a 16-bit model: no weight casts, a 16-bit
// residual stream. llm-foundry's LayerNorm runs in 16 bits with autocast off (LPLayerNorm), so its
// FSDP block is bf16-true's exactly; transformers' LayerNorm is on autocast's fp32 list, so GPT-2's
// casts its 16-bit input up and hands fp32 to the linears, which cast it back: more bytes and
// kernels. Without FSDP autocast casts the fp32 weights instead; Lightning Fabric, so litgpt,
// gathers fp32 under bf16-mixed (FSDPPrecision.mixed_precision_config: param_dtype float32): its
// block stays the autocast one.
TEST(BlockOps, FsdpGathersTheComputeDtypeExceptUnderLightning) {
  const model::Architecture a = catalog().resolve_model("gpt2").arch;
  auto work = [&](Precision p, Strategy s, Library lib) {
    model::Training tr = training(Framework::pytorch);
    tr.precision = p;
    tr.strategy = s;
    tr.library = lib;
    return model::block_ops(a, tr, model::Stack::decoder).eager_work();
  };
  const model::EagerWork true16 = work(Precision::bf16_true, Strategy::fsdp_full, Library::llm_foundry);
  const model::EagerWork foundry = work(Precision::bf16_mixed, Strategy::fsdp_full, Library::llm_foundry);
  const model::EagerWork hf = work(Precision::bf16_mixed, Strategy::fsdp_full, Library::hf_trainer);
  const model::EagerWork ddp = work(Precision::bf16_mixed, Strategy::ddp, Library::hf_trainer);
  const model::EagerWork lightning = work(Precision::bf16_mixed, Strategy::fsdp_full, Library::litgpt);
  const model::EagerWork lightning_ddp = work(Precision::bf16_mixed, Strategy::ddp, Library::litgpt);
  EXPECT_DOUBLE_EQ(foundry.forward.bytes, true16.forward.bytes);
  EXPECT_DOUBLE_EQ(foundry.backward.bytes, true16.backward.bytes);
  EXPECT_DOUBLE_EQ(foundry.forward_launches, true16.forward_launches);
  // Two LayerNorms, each: an upcast kernel, and a cast back per consuming linear (q/k/v, fc).
  EXPECT_GT(hf.forward.kernels, foundry.forward.kernels + 3.0);
  EXPECT_GT(hf.forward.bytes, foundry.forward.bytes);
  // Without FSDP, and under Lightning's fp32 gathering, autocast casts every weight each forward
  // (litgpt's own model code against itself: its GELU and dropout differ from transformers').
  EXPECT_GT(ddp.forward_launches, hf.forward_launches);
  EXPECT_DOUBLE_EQ(lightning.forward_launches, lightning_ddp.forward_launches);
  EXPECT_DOUBLE_EQ(lightning.forward.bytes, lightning_ddp.forward.bytes);
}

// bitsandbytes before 0.43.2 keeps every 4-bit matmul's input for backward (MatMul4Bit.forward:
// ctx.tensors = (A, B)); 0.43.2 keeps none (commit 9e753741, PR #1270). For Llama-2-7B's block under
// QLoRA on q and v with dropout (each adapter keeps its dropped-out copy instead), the old release
// adds the inputs no other op keeps, in bf16 over 512 tokens: the two norm outputs (to q/k/v and to
// gate/up) and the down projection's input (h = 4096, I = 11008); the o projection reads SDPA's
// output, which the kernel keeps anyway, except under litgpt, whose projection reads a token-major
// copy of it (litgpt/model.py y.reshape(B, T, C)): one more h.
TEST(BlockOps, OldBitsandbytesKeepsEveryFourBitInput) {
  const model::Architecture a = catalog().resolve_model("llama-2-7b").arch;
  auto saved = [&](Library library, int bitsandbytes) {
    model::Training tr = training(Framework::pytorch);
    tr.library = library;
    tr.qlora_stack = model::library_traits(library).qlora_stack;
    tr.method = Method::qlora;
    tr.precision = Precision::bf16_true;
    tr.lora.targets = {"q", "v"};
    tr.lora.dropout = 0.05;
    tr.seq = 512;
    tr.micro_batch = 1;
    tr.bitsandbytes = bitsandbytes;
    return model::block_activations(a, tr, model::Stack::decoder).saved.value();
  };
  const double tokens_bytes = 512.0 * 2.0;
  EXPECT_DOUBLE_EQ(saved(Library::hf_trainer, 4200) - saved(Library::hf_trainer, 4302),
                   (2.0 * 4096 + 11008) * tokens_bytes);
  EXPECT_DOUBLE_EQ(saved(Library::litgpt, 4200) - saved(Library::litgpt, 4302), (3.0 * 4096 + 11008) * tokens_bytes);
  EXPECT_DOUBLE_EQ(saved(Library::hf_trainer, 0), saved(Library::hf_trainer, 4302));  // unset: a current release
}

// Of those inputs, what bitsandbytes before 0.43.2 stores on the 4-bit matmul's context outlives
// backward (autograd releases saved tensors after a node's backward, not its context's attributes):
// each 4-bit linear's input once per tensor. Llama-2-7B under litgpt (a fused qkv linear, fc_1 and
// fc_2 reading one norm output): the two norm outputs, the o projection's token-major copy and the
// down projection's input, (3h + I) per token. Falcon-7B's parallel block reads one norm output in
// its attention and its MLP: 2h + 4h. 0.43.2 holds none.
TEST(BlockOps, OldBitsandbytesHoldsFourBitInputsPastBackward) {
  auto held = [&](const char* name, int bitsandbytes) {
    const model::Architecture a = catalog().resolve_model(name).arch;
    model::Training tr = training(Framework::pytorch);
    tr.library = Library::litgpt;
    tr.qlora_stack = model::library_traits(Library::litgpt).qlora_stack;
    tr.method = Method::qlora;
    tr.precision = Precision::bf16_true;
    tr.lora.targets = {"q", "v"};
    tr.seq = 512;
    tr.micro_batch = 1;
    tr.bitsandbytes = bitsandbytes;
    return model::block_ops(a, tr, model::Stack::decoder).held_bytes().value();
  };
  const double tokens_bytes = 512.0 * 2.0;
  EXPECT_DOUBLE_EQ(held("llama-2-7b", 4200), (3.0 * 4096 + 11008) * tokens_bytes);
  EXPECT_DOUBLE_EQ(held("falcon-7b", 4200), 6.0 * 4544 * tokens_bytes);
  EXPECT_DOUBLE_EQ(held("llama-2-7b", 4302), 0.0);
}

// litgpt's releases up to 0.5.4 (--library-version): pyproject.toml pinned bitsandbytes 0.42.0, whose
// 4-bit matmuls keep their inputs, unless a release is given; litgpt/lora.py returned the chunked LM
// head before Gemma 2's final soft-capping (finetune/lora.py passes lm_head_chunk_size=128), which
// full fine-tuning (model.py, no chunks) and v0.5.5 on (17a58dfa: each chunk soft-capped) apply.
TEST(BlockOps, LitgptReleasesUpTo054PinnedBitsandbytesAndSkippedChunkedSoftCapping) {
  const model::Architecture gemma = catalog().resolve_model("gemma-2-2b").arch;
  ASSERT_GT(gemma.logit_softcap, 0.0);
  auto tr = [](Method method, int release, int bitsandbytes) {
    model::Training t = training(Framework::pytorch);
    t.library = Library::litgpt;
    t.qlora_stack = model::library_traits(Library::litgpt).qlora_stack;
    t.method = method;
    t.library_version = release;
    t.bitsandbytes = bitsandbytes;
    return t;
  };
  EXPECT_EQ(model::bitsandbytes_release(tr(Method::qlora, 407, 0)), 4200);
  EXPECT_TRUE(model::qlora_stack_traits(tr(Method::qlora, 504, 0)).keeps_input);
  EXPECT_FALSE(model::qlora_stack_traits(tr(Method::qlora, 505, 0)).keeps_input);
  EXPECT_FALSE(model::qlora_stack_traits(tr(Method::qlora, 407, 4302)).keeps_input);  // given, it wins
  EXPECT_FALSE(model::qlora_stack_traits(tr(Method::qlora, 0, 0)).keeps_input);       // the newest
  EXPECT_FALSE(model::softcaps_logits(gemma, tr(Method::lora, 407, 0)));
  EXPECT_TRUE(model::softcaps_logits(gemma, tr(Method::full, 407, 0)));
  EXPECT_TRUE(model::softcaps_logits(gemma, tr(Method::lora, 505, 0)));
  EXPECT_TRUE(model::softcaps_logits(gemma, tr(Method::lora, 0, 0)));
  model::Training hf = tr(Method::lora, 407, 0);
  hf.library = Library::hf_trainer;  // no release-dependent traits
  EXPECT_TRUE(model::softcaps_logits(gemma, hf));
}

// Under autocast each linear reading a norm's fp32 output keeps its own 16-bit cast copy, and only
// the linears the block has: GPT-2's MLP has no gate projection, so its norm's output is kept once
// (c_fc's bf16 copy, 768 x 2 bytes a token), as the attention's is (the fused c_attn).
TEST(BlockOps, AMlpWithoutAGateKeepsItsNormOutputOnce) {
  const model::Architecture a = catalog().resolve_model("gpt2").arch;
  const model::Training t = training(Framework::pytorch);
  const model::BlockOps ops = model::block_ops(a, t, model::Stack::decoder);
  const double tokens = 2.0 * 2048.0;
  int outputs = 0;
  for (const model::SavedTensor& s : ops.saved) {
    if (s.name != "norm output (linear input)") continue;
    ++outputs;
    EXPECT_DOUBLE_EQ(s.bytes.value(), 768.0 * 2.0 * tokens);
  }
  EXPECT_EQ(outputs, 2);
}

// torchtitan's releases (--library-version): up to 0.2.1 repeat_kv copied Llama 3.1 8B's 8 K/V heads
// to its 32 query heads before SDPA (models/llama3/model/model.py @v0.2.1; enable_gqa from v0.2.2), so
// SDPA keeps 32-head K and V; before 0.1.0 training.compile left the loss eager (train.py @9dec370),
// which keeps the fp32 log-softmax of the logits where the compiled loss keeps the fp32 logits.
TEST(BlockOps, TorchtitanReleasesCopiedGroupedKvAndLeftTheLossEager) {
  const model::Architecture a = catalog().resolve_model("llama-3.1-8b").arch;
  auto tr = [](int release) {
    model::Training t = training(Framework::pytorch);
    t.library = Library::torchtitan;
    t.library_version = release;
    t.compile = true;
    t.seq = 4096;
    t.micro_batch = 1;
    return t;
  };
  EXPECT_FALSE(model::op_variant(a, tr(0)).kv_always_repeated);
  EXPECT_FALSE(model::op_variant(a, tr(202)).kv_always_repeated);
  EXPECT_TRUE(model::op_variant(a, tr(201)).kv_always_repeated);
  EXPECT_TRUE(model::op_variant(a, tr(100)).kv_always_repeated);
  EXPECT_TRUE(model::op_variant(a, tr(100)).fused_loss);  // compiled with the model from bbb1b616
  EXPECT_FALSE(model::op_variant(a, tr(2)).fused_loss);
  EXPECT_TRUE(model::op_variant(a, tr(2)).kv_always_repeated);
  // The K/V SDPA keeps grow from 8 to 32 heads: 24 x 128 x 2 (K and V) x 2 bytes more a token.
  const double grouped = model::block_ops(a, tr(0), model::Stack::decoder).saved_bytes().value();
  const double copied = model::block_ops(a, tr(201), model::Stack::decoder).saved_bytes().value();
  EXPECT_DOUBLE_EQ(copied - grouped, 4096.0 * 24 * 128 * 2 * 2);
}

// litgpt's own model code (litgpt/model.py at 5895df10 and 26857050) has no dropout layers and runs
// GPT-NeoX-style MLPs' GELU as one F.gelu(x, approximate="tanh"): for phi-2 (resid_pdrop 0.1, Hugging
// Face's composite gelu_new), the block keeps no dropout mask and, of the MLP's activation, only
// its input: one bf16 copy of the 10240-wide up projection per token.
TEST(BlockOps, LitgptRunsItsOwnGeluWithoutDropout) {
  const model::Architecture a = catalog().resolve_model("phi-2").arch;
  ASSERT_GT(a.hidden_dropout, 0.0);
  auto terms = [&](Library library) {
    model::Training tr = training(Framework::pytorch);
    tr.library = library;
    tr.precision = Precision::bf16_true;
    tr.seq = 512;
    tr.micro_batch = 4;
    return model::block_activation_terms(a, tr, model::Stack::decoder);
  };
  const auto litgpt = terms(Library::litgpt);
  const auto hf = terms(Library::hf_trainer);
  EXPECT_DOUBLE_EQ(bytes(litgpt, "up projection output"), 2048.0 * 10240 * 2);
  EXPECT_GT(bytes(hf, "up projection output"), 2.0 * bytes(litgpt, "up projection output"));
  EXPECT_EQ(bytes(litgpt, "dropout mask"), 0.0);
  EXPECT_GT(bytes(hf, "dropout mask"), 0.0);
}

// litgpt's CausalSelfAttention (lit_gpt/model.py at 8641822, litgpt/model.py v0.5.7) computes q, k
// and v with one fused projection; q and k come out of the rotary cat as new tensors, but with
// as many K/V heads as query heads the value reaches SDPA as a view of the projection's output,
// which the fused kernel saves: the whole output (q, k and v wide) is kept, beside q and k.
// Grouped K/V are copied to every head first (expand + reshape, repeat_interleave), so Llama-3-8B's
// value is a copy and the output goes. Its LoRAQKVLinear drops the input out once for every
// adapted part (F.linear(self.lora_dropout(x), self.lora_A)): one bf16 copy and one mask byte per
// element, where transformers' Llama runs a dropout per adapted q and v. Llama-2-7B (32 heads,
// 32 K/V heads of 128) and Llama-3-8B (32 of 128, 8 K/V heads), 512 tokens, bf16.
TEST(BlockOps, LitgptKeepsTheFusedProjectionThroughTheValueViewAndDropsOutOnce) {
  auto terms = [&](const char* model, Library library) {
    const model::Architecture a = catalog().resolve_model(model).arch;
    model::Training tr = training(Framework::pytorch);
    tr.library = library;
    tr.method = Method::lora;
    tr.lora.rank = 8;
    tr.lora.targets = {"q", "v"};
    tr.lora.dropout = 0.05;
    tr.precision = Precision::bf16_true;
    tr.attention = Attention::sdpa;
    tr.seq = 512;
    tr.micro_batch = 1;
    return model::block_activation_terms(a, tr, model::Stack::decoder);
  };
  const double t = 512.0;
  const auto mha = terms("llama-2-7b", Library::litgpt);
  EXPECT_DOUBLE_EQ(bytes(mha, "q, k, v projection output"), t * 3.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(bytes(mha, "rotary q, k"), t * 2.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(bytes(mha, "LoRA dropout"), t * 4096 * (2 + 1));
  EXPECT_DOUBLE_EQ(bytes(terms("llama-2-7b", Library::hf_trainer), "LoRA dropout"), 2.0 * t * 4096 * (2 + 1));
  const auto gqa = terms("llama-3.1-8b", Library::litgpt);
  EXPECT_EQ(bytes(gqa, "q, k, v projection output"), 0.0);
  EXPECT_DOUBLE_EQ(bytes(gqa, "LoRA dropout"), t * 4096 * (2 + 1));
}

// What one compiled forward of Llama-3.2-1B (full, bf16-mixed, 4 x 2048 tokens, SDPA) saved for
// backward on an H200, per block, tensor by tensor through saved_tensors_hooks
// (data/measurements/h200-2026-11-30-compile-fp8/inventory.json, torch 2.11, transformers 5.17,
// torchao 0.18; block totals without the weight copies and the fp32 parameters): compiled bf16,
// 739,311,616 bytes (three 8192 x 8192 MLP intermediates, two 16-bit norm outputs, two fp32 norm
// inputs, q and the K/V repeat_kv expanded under the mask compile materialises, the output, the
// statistics); compiled torchao float8 tensorwise, 537,985,024 (no linear input, 16-bit or FP8:
// the partitioner recomputes them; two MLP intermediates).
TEST(BlockOps, CompiledFloat8KeepsNoLinearInputAsMeasured) {
  const model::Architecture a = catalog().resolve_model("llama-3.2-1b").arch;
  model::Training tr = training(Framework::pytorch);
  tr.attention = Attention::sdpa;
  tr.micro_batch = 4;
  tr.compile = true;
  auto total = [&](const model::Training& t) {
    double sum = 0.0;
    for (const auto& term : model::block_activation_terms(a, t, model::Stack::decoder)) sum += term.bytes.value();
    return sum;
  };
  EXPECT_NEAR(total(tr), 739311616.0, 0.001 * 739311616.0);
  model::Training fp8 = tr;
  fp8.fp8 = Fp8Recipe::torchao_tensorwise;
  EXPECT_NEAR(total(fp8), 537985024.0, 0.001 * 537985024.0);
  EXPECT_TRUE(model::compile_recomputes_fp8_inputs(fp8));
  fp8.compile = false;  // eager Float8Linear keeps its inputs
  EXPECT_FALSE(model::compile_recomputes_fp8_inputs(fp8));
  EXPECT_GT(total(fp8), total(tr));
}

// torchtitan's per-op selective checkpointing as of e7c0cae (models/llama3/parallelize_llama.py
// _save_list, _custom_policy): of a Llama block's plain matmuls (wq, wk, wv, wo, w1, w3, w2 in
// forward order) it saves every other one's output, the 1st, 3rd, 5th and 7th (q, v, gate, down),
// and the output of SDPA's flash and efficient kernels; float8 GEMMs (aten._scaled_mm) and cuDNN
// attention are not in its list.
TEST(BlockOps, TorchtitanPerOpCheckpointingSavesWhatItsPolicyLists) {
  const model::Architecture a = catalog().resolve_model("llama-3.1-8b").arch;
  auto saved_names = [&](model::Training tr) {
    const model::BlockOps ops = model::block_ops(a, tr, model::Stack::decoder);
    const std::vector<bool> saved = model::op_sac_saved(ops, tr);
    std::vector<std::string_view> names;
    for (std::size_t i = 0; i < ops.ops.size(); ++i)
      if (saved[i]) names.push_back(ops.ops[i].name);
    return names;
  };
  model::Training tr = training(Framework::pytorch);
  tr.library = Library::torchtitan;
  tr.checkpointing = Checkpointing::selective_op;
  const std::vector<std::string_view> bf16 = saved_names(tr);
  ASSERT_EQ(bf16.size(), 5u);
  EXPECT_EQ(bf16[0], "q");
  EXPECT_EQ(bf16[1], "v");
  EXPECT_EQ(bf16[2], "attention");
  EXPECT_EQ(bf16[3], "gate");
  EXPECT_EQ(bf16[4], "down");
  model::Training fp8 = tr;
  fp8.fp8 = Fp8Recipe::torchao_tensorwise;
  const std::vector<std::string_view> f8 = saved_names(fp8);
  ASSERT_EQ(f8.size(), 1u);
  EXPECT_EQ(f8[0], "attention");
  // SDPA on an H100 picks cuDNN (torch 2.11, cuDNN 9.19): not in the list.
  model::Training cudnn = fp8;
  cudnn.attention = Attention::sdpa;
  EXPECT_TRUE(saved_names(cudnn).empty());
  // What the block keeps beside its input: q (4096), v (1024), gate (14336), down (4096) wide in
  // bf16 per token, and the attention output (32 heads x 128) with one fp32 log-sum-exp per head.
  const double tokens = static_cast<double>(tr.tokens_per_micro_batch());
  const double per_token = 2.0 * (4096 + 1024 + 14336 + 4096) + 2.0 * 4096 + 4.0 * 32;
  EXPECT_DOUBLE_EQ(model::op_sac_saved_bytes(model::block_ops(a, tr, model::Stack::decoder), tr).value(),
                   tokens * per_token);
}

}  // namespace
}  // namespace trainplan
