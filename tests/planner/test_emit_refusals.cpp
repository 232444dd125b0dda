// The launch configurations a format cannot express are refused, naming what is missing; a plan
// that does not fit gets none unless forced; the plan command emits the best plan a format can
// express; the model id and the optimizer implementation in each format. The sources of the rules
// are listed in test_emit.cpp.
#include "emit_fixture.hpp"

namespace trainplan::planner {
namespace {

using namespace emit_test;

TEST(Emit, NoLaunchConfigForAPlanThatDoesNotFitUnlessForced) {
  Plan plan{"oom", "llama-2-7b", "2xA100-80GB", training(Strategy::zero2, 64, 1), false, 128};
  plan.t.framework = Framework::deepspeed;
  Emitting r = emitting(plan);
  r.x.force = false;
  ASSERT_FALSE(r.e.fits) << "the premise: this plan does not fit";
  for (const EmitFormat f : {EmitFormat::deepspeed, EmitFormat::accelerate, EmitFormat::torchrun}) {
    SCOPED_TRACE(std::string(to_string(f)));
    try {
      (void)emit(f, r.e, r.p.c, r.p.a, r.x);
      ADD_FAILURE() << "a launch config was written for a plan that does not fit";
    } catch (const EmitDoesNotFit& e) {
      EXPECT_TRUE(contains(e.message_template(), "{force}")) << e.message_template();
      EXPECT_TRUE(contains(e.message_template(), "does not fit")) << e.message_template();
    }
    EmitContext forced = r.x;
    forced.force = true;
    const Emitted out = emit(f, r.e, r.p.c, r.p.a, forced);
    EXPECT_TRUE(any_note(out, "does not fit"));
    if (f == EmitFormat::deepspeed) {
      const nlohmann::json j = nlohmann::json::parse(out.text);  // still valid JSON
      EXPECT_TRUE(contains(j.at("trainplan_warning").get<std::string>(), "does not fit"));
      EXPECT_EQ(j.at("train_batch_size"), plan.global_batch);
    } else {
      EXPECT_EQ(out.text.rfind("# WARNING: written with --force", 0), 0u) << out.text;
    }
  }
  // plan --emit only ever sees plans that fit; one that does not is refused the same way.
  EXPECT_THROW((void)emit_first_expressible(EmitFormat::deepspeed, {r.e}, r.p.c, r.p.a, r.x), EmitDoesNotFit);
}

TEST(Emit, RefusesWhatTheFormatCannotExpress) {
  struct Row {
    std::string name;
    std::string model;
    std::string cluster;
    EmitFormat format;
    std::function<void(model::Training&)> set;
    bool zero_plus_plus;
    std::string expected;  // in the message
  };
  const std::vector<Row> rows{
      {"FSDP cannot offload the optimizer alone", "llama-2-7b", "8xA100-80GB", EmitFormat::accelerate,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; t.offload = Offload::optimizer; },
       false, "FSDP cannot offload the optimizer alone"},
      {"same through the Trainer", "llama-2-7b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; t.offload = Offload::optimizer; },
       false, "FSDP cannot offload the optimizer alone (its CPU offload moves parameters, gradients and the "
              "optimizer step together); plan with {offload} optimizer+params, or {strategy} zero2/zero3"},
      {"Megatron-LM trains no adapters", "llama-2-7b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.framework = Framework::megatron; t.method = Method::lora; },
       false, "Megatron-LM cannot train lora adapters"},
      {"Megatron-LM offloads no parameters", "llama-2-7b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) {
         t.framework = Framework::megatron;
         t.strategy = Strategy::zero1;
         t.offload = Offload::optimizer_params;
       },
       false, "offload parameters"},
      {"ZeRO++ needs ZeRO-3", "llama-2-7b", "2x8xA100-80GB", EmitFormat::deepspeed,
       [](model::Training& t) { t.strategy = Strategy::zero2; t.framework = Framework::deepspeed; },
       true, "ZeRO++ needs ZeRO stage 3 ({strategy} zero3)"},
      {"ZeRO++ is not FSDP", "llama-2-7b", "2x8xA100-80GB", EmitFormat::accelerate,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; }, true,
       "ZeRO++ is DeepSpeed's: plan with {strategy} zero3"},
      {"DeepSpeed keeps fp32 master weights", "llama-2-7b", "8xA100-80GB", EmitFormat::deepspeed,
       [](model::Training& t) { t.strategy = Strategy::zero2; t.precision = Precision::bf16_true; },
       false, "cannot train in bf16-true"},
      {"selective recomputation is Megatron's", "llama-2-7b", "8xA100-80GB", EmitFormat::accelerate,
       [](model::Training& t) { t.strategy = Strategy::fsdp_full; t.checkpointing = Checkpointing::selective; },
       false, "selective recomputation (Megatron-LM's); plan with {checkpointing} full or none"},
      {"DDP offloads nothing", "llama-2-7b", "8xA100-80GB", EmitFormat::deepspeed,
       [](model::Training& t) { t.strategy = Strategy::ddp; t.offload = Offload::optimizer; },
       false, "ZeRO stage 1-3"},
      {"pretrain_gpt.py is decoder-only", "t5-3b", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.framework = Framework::megatron; }, false, "encoder-decoder"},
      {"no ALiBi in Megatron's GPT", "bloom-560m", "8xA100-80GB", EmitFormat::torchrun,
       [](model::Training& t) { t.framework = Framework::megatron; }, false, "ALiBi"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Problem p = problem(row.model, row.cluster);
    model::Training t = training(Strategy::ddp, 1, 1);
    row.set(t);
    // The estimate is built directly: some of these plans make_layout itself would refuse, and
    // the emitters must not rely on that.
    Estimate e;
    e.training = t;
    e.layout.world = p.c.world();
    e.layout.nodes = p.c.nodes;
    e.layout.gpus_per_node = p.c.gpus_per_node;
    e.layout.dp = p.c.world();
    e.layout.shard = p.c.world();
    e.global_batch = t.micro_batch * t.grad_accum * e.layout.dp;
    const EmitContext x{p.hf_id, row.zero_plus_plus};
    const std::string msg = refusal([&] { (void)emit(row.format, e, p.c, p.a, x); });
    EXPECT_TRUE(contains(msg, row.expected)) << msg;
    EXPECT_TRUE(contains(msg, "{emit} " + std::string(to_string(row.format)))) << msg;
    // The planner names fields, never a front end's flags or labels.
    for (const char* flag : {"--emit", "--strategy", "--offload", "--checkpointing", "--framework",
                             "--zero-plus-plus"})
      EXPECT_FALSE(contains(msg, flag)) << msg;
  }
}

// plan --emit writes the best-ranked plan the format can express and says what it skipped.
TEST(Emit, PlanEmitsTheBestExpressiblePlan) {
  Plan tp{"tp", "llama-2-13b", "8xA100-80GB", training(Strategy::ddp, 1, 8), false, 8};
  tp.t.framework = Framework::megatron;
  tp.t.tp = 8;
  Plan zero{"zero", "llama-2-13b", "8xA100-80GB", training(Strategy::zero3, 1, 1), false, 8};
  zero.t.framework = Framework::deepspeed;
  const Emitting a = emitting(tp);
  const Emitting b = emitting(zero);
  const RankedEmit r = emit_first_expressible(EmitFormat::deepspeed, {a.e, b.e}, a.p.c, a.p.a, a.x);
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(nlohmann::json::parse(r.emitted.text)["zero_optimization"]["stage"], 3);
  ASSERT_FALSE(r.emitted.notes.empty());
  EXPECT_TRUE(contains(r.emitted.notes.front(), "plan #2 written")) << r.emitted.notes.front();
  EXPECT_TRUE(contains(r.emitted.notes.front(), "tensor parallelism 8")) << r.emitted.notes.front();
  // Megatron can express the first: it is written, with no such note.
  const RankedEmit m = emit_first_expressible(EmitFormat::torchrun, {a.e, b.e}, a.p.c, a.p.a, a.x);
  EXPECT_EQ(m.index, 0u);
  // None expressible: the first plan's refusal.
  EXPECT_TRUE(contains(refusal([&] {
                         (void)emit_first_expressible(EmitFormat::accelerate, {a.e}, a.p.c, a.p.a, a.x);
                       }),
                       "tensor parallelism 8"));
  EXPECT_THROW((void)emit_first_expressible(EmitFormat::accelerate, {}, a.p.c, a.p.a, a.x), InputError);
}

// A model without a Hub id gets a placeholder and a note, never its catalogue name as an id.
TEST(Emit, ModelIdOnlyWhenKnown) {
  Plan plan{"gpt3", "gpt3-175b", "8xA100-80GB", training(Strategy::fsdp_full, 1, 1), false, 8};
  const Emitting r = emitting(plan);
  ASSERT_FALSE(r.p.hf_id.has_value());
  const Emitted run = emit(EmitFormat::torchrun, r.e, r.p.c, r.p.a, r.x);
  EXPECT_EQ(flag(run.text, "--model_name_or_path"), "MODEL_NAME_OR_PATH");
  EXPECT_FALSE(contains(run.text, "gpt3-175b")) << run.text;
  EXPECT_TRUE(any_note(run, "MODEL_NAME_OR_PATH"));
  // gpt2 family (GPT-3 is written in GPT-2 form): transformers' GPT2Block.
  const auto y = yaml_keys(emit(EmitFormat::accelerate, r.e, r.p.c, r.p.a, r.x).text);
  EXPECT_EQ(y.at("fsdp_config.fsdp_transformer_layer_cls_to_wrap"), "GPT2Block");
}

// The optimizer implementation reaches each format: the Trainer's --optim names
// (transformers OptimizerNames: adamw_torch builds torch.optim.AdamW, foreach by default;
// adamw_torch_fused passes fused=True) and DeepSpeed's torch_adam switch (FusedAdam when false).
TEST(Emit, OptimizerImplementationInEachFormat) {
  const Problem p = problem("llama-2-7b", "8xA100-80GB");
  model::Training tr;
  tr.strategy = Strategy::fsdp_full;
  struct Row {
    OptimizerImpl impl;
    std::string optim;
  };
  for (const Row& r : {Row{OptimizerImpl::framework_default, "--optim adamw_torch_fused "},  // the Trainer's
                       Row{OptimizerImpl::foreach, "--optim adamw_torch "},
                       Row{OptimizerImpl::fused, "--optim adamw_torch_fused "},
                       Row{OptimizerImpl::for_loop, "--optim adamw_torch --optim_args foreach=False"}}) {
    SCOPED_TRACE(std::string(to_string(r.impl)));
    tr.optimizer_impl = r.impl;
    const Estimate e = Evaluator(p.a, p.n, p.c).estimate(tr);
    const std::string cmd = emit_torchrun(e, p.c, p.a).text;
    EXPECT_TRUE(contains(cmd, r.optim)) << cmd;
  }
  tr.strategy = Strategy::zero3;
  tr.framework = Framework::deepspeed;
  tr.optimizer_impl = OptimizerImpl::deepspeed_fused;
  nlohmann::json j = nlohmann::json::parse(emit_deepspeed(Evaluator(p.a, p.n, p.c).estimate(tr)).text);
  EXPECT_EQ(j["optimizer"]["params"]["torch_adam"], false);
  tr.optimizer_impl = OptimizerImpl::foreach;
  j = nlohmann::json::parse(emit_deepspeed(Evaluator(p.a, p.n, p.c).estimate(tr)).text);
  EXPECT_EQ(j["optimizer"]["params"]["torch_adam"], true);
  tr.optimizer_impl = OptimizerImpl::framework_default;
  j = nlohmann::json::parse(emit_deepspeed(Evaluator(p.a, p.n, p.c).estimate(tr)).text);
  EXPECT_EQ(j["optimizer"]["type"], "AdamW");  // the plan's optimizer
  EXPECT_FALSE(j["optimizer"]["params"].contains("torch_adam"));  // DeepSpeed's own default
  EXPECT_THROW((void)parse_enum<EmitFormat>("slurm"), InputError);
}

}  // namespace
}  // namespace trainplan::planner
