// Per-GPU capabilities: the catalogue's facts, the defaults they imply, the requests they refuse,
// and fit, plan and the emitters following them on a V100.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common/catalog.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/hardware/gpu.hpp"
#include "trainplan/request/catalog.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/emit.hpp"
#include "trainplan/planner/evaluator.hpp"
#include "trainplan/planner/fit.hpp"
#include "trainplan/planner/search.hpp"

namespace trainplan::planner {
namespace {

using hardware::FlashAttentionGen;
using hardware::TensorCoreDtype;

using test::catalog;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct GpuRow {
  std::string name;
  std::string compute_capability;
  bool bf16, fp8, fa2, fa3;
  std::string source;
};

// Compute capabilities: NVIDIA's "CUDA GPUs" table; AMD LLVM targets: LLVM AMDGPU processors.
// bf16 from sm80 (CUDA C++ Programming Guide, "Alternate Floating Point"), fp8 from sm89 (PTX ISA
// mma .e4m3/.e5m2), FlashAttention-2 on sm80+ and MI200/MI300, FlashAttention-3 on Hopper only
// (Dao-AILab/flash-attention README).
const std::vector<GpuRow> kGpus = {
    {"V100-16GB", "7.0", false, false, false, false, "Volta: fp16 tensor cores only"},
    {"V100-32GB", "7.0", false, false, false, false, "Volta: fp16 tensor cores only"},
    {"A100-40GB", "8.0", true, false, true, false, "A100 datasheet"},
    {"A100-80GB", "8.0", true, false, true, false, "A100 datasheet"},
    {"A100-80GB-PCIe", "8.0", true, false, true, false, "A100 datasheet"},
    {"A10G", "8.6", true, false, true, false, "A10 datasheet (GA102)"},
    {"RTX-3090", "8.6", true, false, true, false, "GA102 whitepaper"},
    {"RTX-A6000", "8.6", true, false, true, false, "RTX A6000 datasheet"},
    {"L4", "8.9", true, true, true, false, "L4 datasheet"},
    {"L40S", "8.9", true, true, true, false, "L40S datasheet"},
    {"RTX-4090", "8.9", true, true, true, false, "Ada whitepaper"},
    {"H100-80GB", "9.0", true, true, true, true, "H100 datasheet"},
    {"H100-80GB-PCIe", "9.0", true, true, true, true, "H100 datasheet"},
    {"H200", "9.0", true, true, true, true, "H200 datasheet"},
    {"MI250X", "gfx90a", true, false, true, false, "MI250X datasheet"},
    {"MI300X", "gfx942", true, true, true, false, "MI300X datasheet"},
    {"MI325X", "gfx942", true, true, true, false, "MI325X specifications (MI300X compute)"},
    {"MI355X", "gfx950", true, true, true, false, "MI355X specifications"},
    {"B200", "10.0", true, true, true, false, "DGX B200 datasheet; FlashAttention-3 is Hopper-only"},
    {"B300", "10.3", true, true, true, false, "HGX B300 / Blackwell Ultra datasheet"},
    {"GB200", "10.0", true, true, true, false, "GB200 NVL72 specifications"},
    {"GB300", "10.3", true, true, true, false, "GB300 NVL72 specifications"},
    {"H20", "9.0", true, true, true, true, "Hopper (GH100); no global datasheet"},
    {"H100-NVL", "9.0", true, true, true, true, "H100 datasheet, NVL column"},
    {"RTX-5090", "12.0", true, true, true, false, "RTX Blackwell whitepaper"},
    {"RTX-PRO-6000", "12.0", true, true, true, false, "RTX Blackwell whitepaper"},
};

TEST(GpuCapabilities, EveryCatalogueGpuStatesThemWithASource) {
  EXPECT_EQ(catalog().gpus().size(), kGpus.size()) << "a GPU was added: give it a row here";
  for (const GpuRow& row : kGpus) {
    SCOPED_TRACE(row.name + ": " + row.source);
    const request::ResolvedGpu r = catalog().resolve_gpu(row.name);
    const hardware::GpuCapabilities& k = r.spec.capabilities;
    EXPECT_EQ(k.compute_capability, row.compute_capability);
    EXPECT_EQ(k.bf16, row.bf16);
    EXPECT_EQ(k.fp8, row.fp8);
    EXPECT_EQ(k.runs(FlashAttentionGen::fa2), row.fa2);
    EXPECT_EQ(k.runs(FlashAttentionGen::fa3), row.fa3);
    EXPECT_TRUE(k.has(TensorCoreDtype::fp16));
    // The flags agree with the peak table: a dtype has a peak exactly where its units exist.
    EXPECT_EQ(k.bf16, r.spec.peak.bf16 > 0);
    EXPECT_EQ(k.fp8, r.spec.peak.fp8 > 0);
  }
  for (const request::CatalogGpu& g : catalog().gpus()) {
    SCOPED_TRACE(g.spec.name);
    EXPECT_TRUE(contains(g.source, "capabilities: ")) << g.source;
    EXPECT_FALSE(g.spec.capabilities.compute_capability.empty());
  }
}

TEST(GpuCapabilities, DefaultsFollowTheGpu) {
  struct Row {
    std::string gpu;
    Precision precision;
    Attention attention;
  };
  for (const Row& row : std::vector<Row>{{"V100-32GB", Precision::fp16_mixed, Attention::sdpa},
                                         {"V100-16GB", Precision::fp16_mixed, Attention::sdpa},
                                         {"A100-80GB", Precision::bf16_mixed, Attention::flash},
                                         {"H100-80GB", Precision::bf16_mixed, Attention::flash},
                                         {"MI300X", Precision::bf16_mixed, Attention::flash}}) {
    SCOPED_TRACE(row.gpu);
    const hardware::GpuSpec g = catalog().resolve_gpu(row.gpu).spec;
    EXPECT_EQ(hardware::default_precision(g), row.precision);
    EXPECT_EQ(hardware::default_attention(g), row.attention);
    EXPECT_NO_THROW(hardware::require_supported(g, row.precision, row.attention));
  }
}

// bf16 on a V100 runs emulated (PyTorch accepts it, cuBLAS runs it on the CUDA cores): answered,
// not refused; FlashAttention-2 does not run there at all and is refused, naming the option, the
// GPU and what it supports.
TEST(GpuCapabilities, RequestsTheGpuCannotHonourAreRefusedNamingOptionGpuAndAlternatives) {
  const hardware::GpuSpec v100 = catalog().resolve_gpu("V100-32GB").spec;
  for (Precision p : {Precision::bf16_mixed, Precision::bf16_true}) {
    SCOPED_TRACE(std::string(to_string(p)));
    EXPECT_FALSE(hardware::supports(v100, p));
    EXPECT_TRUE(hardware::emulated_bf16(v100, p));
    EXPECT_NO_THROW(hardware::require_supported(v100, p, Attention::sdpa));
    EXPECT_EQ(hardware::matmul_dtype(v100, p, false), "fp32");
  }
  const hardware::GpuSpec a100 = catalog().resolve_gpu("A100-80GB").spec;
  EXPECT_FALSE(hardware::emulated_bf16(a100, Precision::bf16_mixed));
  EXPECT_FALSE(hardware::emulated_bf16(catalog().resolve_gpu("MI250X").spec, Precision::bf16_mixed));
  const std::string msg =
      error_of([&] { hardware::require_supported(v100, Precision::fp16_mixed, Attention::flash); });
  EXPECT_TRUE(contains(msg, "attention flash")) << msg;
  EXPECT_TRUE(contains(msg, "V100-32GB (Volta, compute capability 7.0)")) << msg;
  EXPECT_TRUE(contains(msg, "FlashAttention-2")) << msg;
  EXPECT_TRUE(contains(msg, "supports sdpa, eager")) << msg;
  for (Precision p : {Precision::fp32, Precision::fp16_mixed, Precision::fp16_true})
    EXPECT_TRUE(hardware::supports(v100, p));
  EXPECT_TRUE(hardware::supports(v100, Attention::eager));
}

// fp32 runs on the CUDA cores unless TF32 is asked for (PyTorch's default has been off since 1.12);
// a GPU without TF32 units runs fp32 either way.
TEST(GpuCapabilities, Fp32RunsOnTheCudaCoresUnlessTf32IsOn) {
  const hardware::GpuSpec a100 = catalog().resolve_gpu("A100-80GB").spec;
  EXPECT_EQ(hardware::matmul_dtype(a100, Precision::fp32, false), "fp32");
  EXPECT_EQ(hardware::matmul_dtype(a100, Precision::fp32, true), "tf32");
  EXPECT_LT(hardware::peak_flops(a100, Precision::fp32, false).value(),
            hardware::peak_flops(a100, Precision::fp32, true).value());
  const hardware::GpuSpec v100 = catalog().resolve_gpu("V100-32GB").spec;
  EXPECT_EQ(hardware::matmul_dtype(v100, Precision::fp32, true), "fp32");
}

struct Problem {
  model::Architecture a;
  model::ParameterCounts n;
  hardware::Cluster c;
};

Problem problem(const std::string& model, const std::string& cluster) {
  Problem p{catalog().resolve_model(model).arch,
            {},
            catalog().resolve_cluster(cluster, std::nullopt).cluster};
  p.n = model::count_parameters(p.a);
  return p;
}

// `trainplan fit 7b V100-32GB`: the request takes the GPU's defaults, so every candidate, and the
// recommended one, trains in fp16-mixed with SDPA.
TEST(GpuCapabilities, FitOnAV100UsesFp16MixedAndSdpa) {
  for (const char* cluster : {"V100-32GB", "8xV100-32GB"}) {
    SCOPED_TRACE(cluster);
    const Problem p = problem("7b", cluster);
    SearchRequest req;
    req.base.precision = hardware::default_precision(p.c.gpu);
    req.base.attention = hardware::default_attention(p.c.gpu);
    const FitResult f = fit(p.a, p.n, req, p.c);
    ASSERT_FALSE(f.candidates.empty());
    for (const Candidate& k : f.candidates) {
      EXPECT_EQ(k.training.precision, Precision::fp16_mixed);
      EXPECT_EQ(k.training.attention, Attention::sdpa);
    }
    if (std::string(cluster) == "8xV100-32GB") {
      ASSERT_TRUE(f.recommended.has_value());
      EXPECT_EQ(f.candidates[*f.recommended].training.precision, Precision::fp16_mixed);
    }
  }
}

TEST(GpuCapabilities, FitAndPlanAnswerEmulatedBf16AndRefuseFlashOnAV100) {
  const Problem p = problem("7b", "8xV100-32GB");
  SearchRequest bf16;
  bf16.base.precision = Precision::bf16_mixed;
  bf16.base.attention = Attention::sdpa;
  EXPECT_FALSE(fit(p.a, p.n, bf16, p.c).candidates.empty());
  SearchRequest flash;
  flash.base.precision = Precision::fp16_mixed;
  flash.base.attention = Attention::flash;
  EXPECT_TRUE(contains(error_of([&] { (void)fit(p.a, p.n, flash, p.c); }), "attention flash"));
  SearchRequest plan;
  plan.base.precision = Precision::bf16_true;
  plan.base.attention = Attention::flash;
  EXPECT_TRUE(contains(error_of([&] { (void)search(p.a, p.n, p.c, plan); }), "attention flash"));
}

// The launch configs of a V100 plan: fp16 with loss scaling, SDPA, never bf16 or FlashAttention-2.
TEST(GpuCapabilities, EmittersWriteFp16AndSdpaForAV100Plan) {
  const Problem p = problem("7b", "8xV100-32GB");
  SearchRequest req;
  req.base.precision = hardware::default_precision(p.c.gpu);
  req.base.attention = hardware::default_attention(p.c.gpu);
  req.base.method = Method::lora;
  req.top = 1;
  const PlanResult r = search(p.a, p.n, p.c, req);
  ASSERT_FALSE(r.plans.empty());
  const Estimate& e = r.plans.front();
  EXPECT_EQ(e.training.precision, Precision::fp16_mixed);

  const nlohmann::json ds = nlohmann::json::parse(emit(EmitFormat::deepspeed, e, p.c, p.a).text);
  EXPECT_TRUE(ds["fp16"]["enabled"]);
  EXPECT_EQ(ds["fp16"]["loss_scale"], 0);  // 0: dynamic loss scaling
  EXPECT_FALSE(ds.contains("bf16"));

  const Emitted acc = emit(EmitFormat::accelerate, e, p.c, p.a);
  EXPECT_TRUE(contains(acc.text, "mixed_precision: fp16")) << acc.text;
  EXPECT_FALSE(contains(acc.text, "bf16")) << acc.text;

  const Emitted run = emit(EmitFormat::torchrun, e, p.c, p.a);
  EXPECT_TRUE(contains(run.text, " --fp16")) << run.text;
  EXPECT_FALSE(contains(run.text, "bf16")) << run.text;
  EXPECT_TRUE(contains(run.text, "--attn_implementation sdpa")) << run.text;
  EXPECT_FALSE(contains(run.text, "flash_attention_2")) << run.text;
  bool scaled = false;
  for (const auto& n : run.notes) scaled = scaled || contains(n, "loss is scaled dynamically");
  EXPECT_TRUE(scaled);

  // A bf16 estimate handed to the emitters for a V100 is refused rather than written.
  Estimate bf16 = e;
  bf16.training.precision = Precision::bf16_mixed;
  EXPECT_TRUE(contains(error_of([&] { (void)emit(EmitFormat::deepspeed, bf16, p.c, p.a); }),
                       "precision bf16-mixed"));
}

// `trainplan fit 8b 1xMI355X`, worked by hand from the datasheet (stas00/ml-engineering @744d01e1,
// data/gpus/MI355X.json) and the ZeRO paper's 16 bytes per parameter of mixed-precision Adam
// (Rajbhandari et al. 2020, arXiv:1910.02054, Sec. 3): 8,030,261,248 x 16 bytes = 119.66 GiB of model
// states on one GPU, inside an MI355X's 287.98 GiB and beyond an H100's 79.1 GiB, at AMD's dense
// bf16 2.5 PFLOP/s.
// The Triton FlashAttention keeps what FlashAttention-2 keeps and runs slower (Dao 2023,
// arXiv:2307.08691, Sec. 4.1: FlashAttention-2 is 1.3-1.5x faster forward, about 2x backward), so
// a long-sequence step takes longer by less than the attention's whole backward; a launch config is
// not written for it.
TEST(GpuCapabilities, TritonAttentionKeepsFlashMemoryAndRunsSlower) {
  const Problem p = problem("llama-3.2-1b", "1xA100-80GB");
  const Evaluator ev(p.a, p.n, p.c);
  model::Training flash;
  flash.seq = 8192;
  flash.attention = Attention::flash;
  model::Training triton = flash;
  triton.attention = Attention::triton;
  const Estimate f = ev.estimate(flash);
  const Estimate t = ev.estimate(triton);
  EXPECT_DOUBLE_EQ(t.memory.device_total.value(), f.memory.device_total.value());
  EXPECT_GT(t.time.compute.value(), f.time.compute.value());
  EXPECT_LT(t.time.compute.value(), 2.0 * f.time.compute.value());
  EXPECT_TRUE(contains(error_of([&] { (void)emit(EmitFormat::deepspeed, t, p.c, p.a, {}); }), "attention triton"));
}

// Attention kernels of the Ampere instruction set (the flash-attn 2.x package behind `flash`,
// PyTorch's SDPA flash kernel) reach 35 % of an H100 where FlashAttention-3 and cuDNN reach 75 %
// (Shah et al. 2024, arXiv:2407.08608, abstract): slower than SDPA's cuDNN kernel on Hopper, as fast
// as what SDPA picks on an A100 (its flash kernel) or an RTX 5090 (compute capability 12.0, no
// wider instructions).
TEST(GpuCapabilities, AmpereInstructionAttentionIsSlowerOnlyWhereNativeKernelsGoFurther) {
  auto compute = [](const std::string& gpu, Attention attention) {
    const Problem p = problem("llama-3.2-1b", "1x" + gpu);
    const Evaluator ev(p.a, p.n, p.c);
    model::Training tr;
    tr.seq = 8192;
    tr.attention = attention;
    return ev.estimate(tr).time.compute.value();
  };
  EXPECT_DOUBLE_EQ(compute("A100-80GB", Attention::flash), compute("A100-80GB", Attention::sdpa));
  EXPECT_DOUBLE_EQ(compute("RTX-5090", Attention::flash), compute("RTX-5090", Attention::sdpa));
  EXPECT_GT(compute("H100-80GB", Attention::flash), 1.05 * compute("H100-80GB", Attention::sdpa));
  EXPECT_GT(compute("B200", Attention::flash), 1.05 * compute("B200", Attention::sdpa));
}

TEST(GpuCapabilities, Llama8bOnOneMI355XByHand) {
  const Problem p = problem("8b", "1xMI355X");
  EXPECT_EQ(p.c.gpu.architecture, "CDNA4");
  EXPECT_NEAR(to_gib(p.c.gpu.usable_memory), 287.98, 1e-9);
  EXPECT_DOUBLE_EQ(hardware::peak_flops(p.c.gpu, Precision::bf16_mixed, false).value(), 2500e12);
  const double states_gib = 16.0 * static_cast<double>(p.n.total) / 1073741824.0;
  EXPECT_NEAR(states_gib, 119.66, 0.01);
  SearchRequest req;
  req.base.precision = hardware::default_precision(p.c.gpu);
  req.base.attention = hardware::default_attention(p.c.gpu);
  req.offload = Offload::none;
  req.checkpointing = Checkpointing::none;
  const FitResult f = fit(p.a, p.n, req, p.c);
  ASSERT_TRUE(f.recommended.has_value());
  const Candidate& best = f.candidates[*f.recommended];
  const MemoryBreakdown& m = best.memory;
  EXPECT_NEAR(to_gib(m.weights + m.gradients + m.optimizer), states_gib, 0.02 * states_gib);
  EXPECT_LE(to_gib(m.device_total), 287.98);
  EXPECT_EQ(best.training.precision, Precision::bf16_mixed);
  // Without checkpointing or offload the same step does not fit an H100.
  const Problem h = problem("8b", "1xH100-80GB");
  SearchRequest hreq = req;
  const FitResult hf = fit(h.a, h.n, hreq, h.c);
  EXPECT_FALSE(hf.recommended.has_value());
}

}  // namespace
}  // namespace trainplan::planner

namespace trainplan::planner {
namespace {

// `trainplan fit 70b 8xB200`, worked by hand from the datasheet (stas00/ml-engineering @744d01e1,
// data/gpus/B200.json) and the ZeRO paper's model-state formula (Rajbhandari et al. 2020,
// arXiv:1910.02054, Sec. 3: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per parameter, and
// ZeRO-3 / FSDP full-shard holds 1/N_d of them).
TEST(GpuCapabilities, Llama70bOnEightB200ByHand) {
  const Problem p = problem("70b", "8xB200");
  EXPECT_EQ(p.c.gpu.architecture, "Blackwell");
  EXPECT_NEAR(to_gib(p.c.gpu.usable_memory), 178.35, 1e-9);  // torch's total capacity on a B200
  EXPECT_DOUBLE_EQ(hardware::peak_flops(p.c.gpu, Precision::bf16_mixed, false).value(), 2250e12);
  // 68,976,648,192 parameters x 16 bytes / 8 GPUs = 128.48 GiB of model states per GPU: inside a
  // B200's 178.35 GiB, beyond an H100's 79.1 GiB.
  const double states_gib = 16.0 * static_cast<double>(p.n.total) / 8.0 / 1073741824.0;
  EXPECT_NEAR(states_gib, 128.48, 0.01);
  SearchRequest req;
  req.base.precision = hardware::default_precision(p.c.gpu);
  req.base.attention = hardware::default_attention(p.c.gpu);
  const FitResult f = fit(p.a, p.n, req, p.c);
  ASSERT_TRUE(f.recommended.has_value());
  const Candidate& best = f.candidates[*f.recommended];
  EXPECT_EQ(best.training.strategy, Strategy::fsdp_full);
  const MemoryBreakdown& m = best.memory;
  EXPECT_NEAR(to_gib(m.weights + m.gradients + m.optimizer), states_gib, 0.02 * states_gib);
  EXPECT_LE(to_gib(m.device_total), 178.35);
  EXPECT_EQ(best.training.precision, Precision::bf16_mixed);
  // The same question on eight H100s has no answer without offloading the optimizer.
  const Problem h = problem("70b", "8xH100-80GB");
  SearchRequest hreq;
  hreq.offload = Offload::none;
  const FitResult hf = fit(h.a, h.n, hreq, h.c);
  EXPECT_FALSE(hf.recommended.has_value());
  for (const Candidate& k : hf.candidates) EXPECT_FALSE(k.fits);
}

// `trainplan fit llama-3.1-405b 64x4xGB200`: 64 compute trays of 4 GPUs in GB200 NVL72 racks, 72
// GPUs to an NVLink domain (NVIDIA GB200 NVL72 specifications; data/gpus/GB200.json). By hand:
// 405,853,388,800 parameters x 16 bytes of mixed-precision Adam (Rajbhandari et al. 2020,
// arXiv:1910.02054, Sec. 3) / 256 GPUs = 23.62 GiB of model states per GPU fully sharded, inside
// a GB200's 184.31 GiB; a replica of the 16-bit weights alone (756 GiB) fits no GPU, so every plan
// shards or splits the model.
TEST(GpuCapabilities, Llama405bOn64GB200TraysByHand) {
  const Problem p = problem("llama-3.1-405b", "64x4xGB200");
  EXPECT_EQ(p.c.world(), 256);
  EXPECT_EQ(p.c.gpus_per_node, 4);
  EXPECT_EQ(p.c.gpus_per_domain(), 72);
  EXPECT_NEAR(to_gib(p.c.gpu.usable_memory), 184.31, 1e-9);
  EXPECT_DOUBLE_EQ(hardware::peak_flops(p.c.gpu, Precision::bf16_mixed, false).value(), 2500e12);
  const double states_gib = 16.0 * static_cast<double>(p.n.total) / 256.0 / 1073741824.0;
  EXPECT_NEAR(states_gib, 23.62, 0.01);
  SearchRequest req;
  req.base.precision = hardware::default_precision(p.c.gpu);
  req.base.attention = hardware::default_attention(p.c.gpu);
  req.base.seq = 8192;
  const FitResult f = fit(p.a, p.n, req, p.c);
  ASSERT_TRUE(f.recommended.has_value());
  const Candidate& best = f.candidates[*f.recommended];
  EXPECT_LE(to_gib(best.memory.device_total), 184.31);
  // Full sharding over all 256: the fp32 master weights (4 bytes) and Adam's two moments (8 bytes)
  // are 12/16 of the states, exactly their shard; the gradients at least their fp32 shard.
  ASSERT_EQ(best.training.strategy, Strategy::fsdp_full);
  ASSERT_EQ(best.training.tp * best.training.pp, 1);
  const MemoryBreakdown& m = best.memory;
  EXPECT_NEAR(to_gib(m.weights + m.optimizer), 12.0 / 16.0 * states_gib, 0.001 * states_gib);
  EXPECT_GE(to_gib(m.gradients), 4.0 / 16.0 * states_gib * 0.999);
}

}  // namespace
}  // namespace trainplan::planner
