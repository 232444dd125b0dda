// Predictions against the reference cases, held to the bands the validation issue sets:
//  * the PyTorch oracle (tools/oracle, data/reference/oracle): parameter counts, FLOPs, gradient
//  and
//    AdamW-state bytes exactly; bytes saved for backward per block and by the head within 5 %;
//  * public measured runs (data/reference/*.json): litgpt peak allocated within 15 %, the KAUST
//    BLOOM-560m nvidia-smi total within 25 %;
//  * the whole oracle set: median absolute error at most 5 %.
// A failure names the case, its source and file (SCOPED_TRACE).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <utility>

#include "paths.hpp"
#include "trainplan/model/parameters.hpp"
#include "trainplan/planner/memory.hpp"
#include "trainplan/request/profile_json.hpp"
#include "trainplan/core/error.hpp"

namespace trainplan {
namespace {

using planner::CaseKind;
using planner::CaseResult;
using planner::Comparison;
using planner::Metric;

const planner::ValidationReport& report() {
  static const planner::ValidationReport r = planner::validate(test::reference_cases());
  return r;
}

std::string trace(const CaseResult& r) { return r.name + " — " + r.source + " (" + r.file + ")"; }

std::string describe(const Comparison& c) {
  std::string s(to_string(c.metric));
  if (c.layer >= 0) s += fmt::format(" layer {}", c.layer);
  return s + fmt::format(": predicted {:.6g}, measured {:.6g} {}, error {:+.2f} %", c.predicted,
                         c.measured, to_string(c.unit), c.error_pct());
}

// Every oracle comparison of the given metrics, predicted exactly (to the unit: values are
// integers).
void expect_oracle_exact(std::initializer_list<Metric> metrics) {
  std::size_t seen = 0;
  for (const CaseResult& r : report().cases) {
    if (r.kind != CaseKind::oracle) continue;
    SCOPED_TRACE(trace(r));
    for (const Comparison& c : r.comparisons) {
      if (std::find(metrics.begin(), metrics.end(), c.metric) == metrics.end()) continue;
      ++seen;
      EXPECT_EQ(std::llround(c.predicted), std::llround(c.measured)) << describe(c);
    }
  }
  EXPECT_EQ(seen, 71u * metrics.size());
}

TEST(Oracle, ParameterCountsExact) {
  // `parameters` counts the trained model, adapters included (PEFT adds them to the base model).
  expect_oracle_exact({Metric::parameters, Metric::trainable_parameters});
}

TEST(Oracle, ForwardFlopsExact) {
  // The mixtral cases count routed experts: top-k MLPs per token, both with the Python loop over
  // experts and with torch._grouped_mm (the oracle registers a formula for it; 2 M K N per
  // product).
  expect_oracle_exact({Metric::flops_forward});
}

TEST(Oracle, BackwardFlopsExact) {
  // The oracle's backward is everything FlopCounterMode sees inside loss.backward(), so the
  // planner's backward + recompute is compared. Counting conventions the planner must follow to
  // match:
  //  * SDPA's backward counts 2.5x its forward (the fused kernels recompute the scores);
  //  * non-reentrant checkpointing stops recomputing a block once every saved tensor is rebuilt,
  //    so each block's last matmul (down_proj) is not re-run;
  //  * with LoRA and frozen embeddings the first block's input needs no gradient: the frozen
  //    projections that read it and the adapters' A matrices skip their input-gradient GEMMs, and
  //    an eager Q.K^T skips the gradient of a frozen K. The oracle's checkpointed LoRA case shows
  //    no such saving (the checkpoint's recomputation makes the input require grad).
  expect_oracle_exact({Metric::flops_backward});
}

TEST(Oracle, GradientAndOptimizerStateBytesExact) {
  // AdamW's exp_avg and exp_avg_sq in the parameters' dtype; the scalar `step` tensors are excluded
  // by the oracle (tools/oracle/README.md).
  expect_oracle_exact({Metric::gradient_bytes, Metric::optimizer_state_bytes});
}

TEST(Oracle, SavedForBackwardPerBlockAndHeadWithinFivePercent) {
  // One prediction per block of a stack, the first block with what it holds beyond the others (RoPE
  // tables, checkpoint inputs; with LoRA, less: its input needs no gradient).
  std::size_t seen = 0;
  std::cout << "bytes saved for backward per block [i] and by the head [head], predicted vs the "
               "oracle (error %):\n";
  for (const CaseResult& r : report().cases) {
    if (r.kind != CaseKind::oracle) continue;
    SCOPED_TRACE(trace(r));
    std::string line = "  " + r.name + ":";
    for (const Comparison& c : r.comparisons) {
      if (c.metric != Metric::saved_for_backward_layer &&
          c.metric != Metric::saved_for_backward_head)
        continue;
      ++seen;
      line += fmt::format(" [{}] {:+.2f}", c.layer >= 0 ? std::to_string(c.layer) : "head",
                          c.error_pct());
      EXPECT_EQ(c.tolerance_pct, 5.0);
      EXPECT_LE(std::abs(c.error_pct()), 5.0) << describe(c);
      // The families added with the 2025-26 catalogue (Qwen3, Qwen3-MoE, OLMo 2, Phi-3, Gemma 2
      // and 3, gpt-oss, Llama 4, DeepSeek-V2 and V3) are held to 2 %.
      for (const char* family : {"qwen3", "olmo2", "phi3", "gemma2", "gemma3", "gpt_oss", "llama4", "deepseek"})
        if (r.name.rfind(family, 0) == 0) {
          EXPECT_LE(std::abs(c.error_pct()), 2.0) << describe(c);
        }
    }
    std::cout << line << "\n";
  }
  // 168 blocks and 71 heads over the 71 cases; the blocks of partial fine-tuning below every
  // trained one save nothing and are held at zero in tests/model/test_partial.cpp.
  EXPECT_EQ(seen, 168u + 71u);
}

// The pass band each source's issue sets; the data files must carry the same (no silent loosening).
struct Band {
  std::string case_prefix;
  Metric metric;
  double tolerance_pct;
  std::size_t cases;
};

TEST(MeasuredRuns, MemoryWithinTheIssuesTolerances) {
  const std::vector<Band> bands = {
      // Lightning-AI/litgpt tutorials/resource-tables.md and finetune_lora.md (8641822): LoRA/QLoRA, A100-40GB, max_memory_allocated: ±15 %.
      {"litgpt-", Metric::peak_allocated, 15.0, 18},
      // KAUST deepspeed/README.md baseline: BLOOM-560m, HF Trainer, nvidia-smi peak, ±25 %.
      {"kaust-", Metric::device_total, 25.0, 1},
  };
  for (const Band& b : bands) {
    std::size_t seen = 0;
    for (const CaseResult& r : report().cases) {
      if (r.kind != CaseKind::measured || !r.name.starts_with(b.case_prefix)) continue;
      SCOPED_TRACE(trace(r));
      for (const Comparison& c : r.comparisons) {
        if (c.metric != b.metric) continue;
        ++seen;
        EXPECT_EQ(c.tolerance_pct, b.tolerance_pct)
            << "the data file's tolerance differs from the issue's";
        EXPECT_LE(std::abs(c.error_pct()), b.tolerance_pct) << describe(c);
      }
    }
    EXPECT_EQ(seen, b.cases) << b.case_prefix;
  }
}

// litgpt's resource tables (resource-tables.md at 8641822, one A100-40GB: LoRA r=8 on query and
// value, bf16-true, nf4 and nf4-dq under bitsandbytes 0.41.1, the longest Alpaca sample) held to
// the training-library issue's 7 %, tighter than the file's 15 %. No constant was fitted on them:
// what moved them there was read in lit-gpt's sources (the value handed to SDPA as a view of the
// fused q/k/v output, one LoRA dropout for the fused projection, 4-bit matmuls keeping their
// inputs, the q/v update index_copy keeps, lit-gpt 0.1.0's RMSNorm in the input's dtype), with
// finetune_lora.md's bf16-mixed row (the frozen fp32 head cast once per 128-position chunk).
// Each peak allocated of the cases whose name starts with `prefix` within `band_pct`; how many.
std::size_t expect_peaks_within(std::string_view prefix, double band_pct) {
  std::size_t seen = 0;
  for (const CaseResult& r : report().cases) {
    if (!r.name.starts_with(prefix)) continue;
    SCOPED_TRACE(trace(r));
    for (const Comparison& c : r.comparisons) {
      if (c.metric != Metric::peak_allocated) continue;
      ++seen;
      EXPECT_LE(std::abs(c.error_pct()), band_pct) << describe(c);
    }
  }
  return seen;
}

TEST(MeasuredRuns, LitgptResourceTableRowsWithinSevenPercent) {
  // phi-1.5, StableLM-3B, Llama-2-7B, Llama-2-13B at every precision given, and finetune_lora.md's
  // StableLM-3B bf16-mixed row
  EXPECT_EQ(expect_peaks_within("litgpt-", 7.0), 18u);
}

// The same rows' training step replayed on an H200 with lit-gpt 8641822's own model code
// (data/reference/replay-h200-litgpt-0.1.0.json, tools/measure/litgpt_replay.py; the 4-bit rows
// need bitsandbytes 0.41.1 and are not replayed): the code's own peak, so a tighter band than the
// published rows', 2 %. No constant was fitted on them.
TEST(MeasuredRuns, LitgptReplayOnAnH200WithinTwoPercent) { EXPECT_EQ(expect_peaks_within("replay-litgpt-", 2.0), 10u); }

// The median (of an even count, the mean of the middle two), as validate's summary takes it.
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// litgpt's config_hub table (data/reference/litgpt-config-hub-a10g.json, used whole: 46 rows on
// A10Gs, litgpt library traits), each row within the training-library issue's 7 %, but for three
// full fine-tuning rows whose configs cannot be the runs published: one A10G at bf16-true with
// torch AdamW holds 8 bytes a parameter, more than the published peak of Llama-3.2-1B and Phi-3
// and more than an A10G for Llama-3.2-3B. Those stay over-predicted (the published peak is below
// the model states alone), and the table's size is held so that a row cannot silently drop out.
// No constant was fitted on them.
TEST(MeasuredRuns, LitgptConfigHubRowsWithinSevenPercent) {
  const std::vector<std::string> impossible = {"hub-litgpt-llama-3.2-1b-full-1xa10g",
                                               "hub-litgpt-llama-3.2-3b-full-1xa10g", "hub-litgpt-phi-3-full-1xa10g"};
  std::size_t rows = 0;
  std::size_t within = 0;
  for (const CaseResult& r : report().cases) {
    if (!r.name.starts_with("hub-litgpt-")) continue;
    ++rows;
    SCOPED_TRACE(trace(r));
    const bool excused = std::find(impossible.begin(), impossible.end(), r.name) != impossible.end();
    for (const Comparison& c : r.comparisons) {
      if (c.metric != Metric::peak_allocated) continue;
      if (excused) {
        EXPECT_GT(c.error_pct(), 100.0) << describe(c);
        continue;
      }
      ++within;
      EXPECT_LE(std::abs(c.error_pct()), 7.0) << describe(c);
    }
  }
  EXPECT_EQ(rows, 46u);
  EXPECT_EQ(within, 43u);
}

// One issue's band over one reference file: every value of `metric` in its cases (less those
// `skip` names) within the tolerance its file states, their median and max |error| within the band.
struct IssueBand {
  std::string file_suffix;
  Metric metric;
  std::size_t cases;
  double median_pct;
  double max_pct;
  bool held_out_only;
};

template <typename Skip>
void expect_band(const IssueBand& b, Skip skip) {
  const std::string what =
      b.file_suffix + " " + std::string(to_string(b.metric)) + (b.held_out_only ? " (held out)" : "");
  std::vector<double> errors;
  for (const CaseResult& r : report().cases) {
    if (!r.file.ends_with(b.file_suffix) || skip(r)) continue;
    SCOPED_TRACE(trace(r));
    for (const Comparison& c : r.comparisons) {
      if (c.metric != b.metric) continue;
      errors.push_back(std::abs(c.error_pct()));
      EXPECT_TRUE(c.within_tolerance()) << describe(c);
      std::cout << "  " << r.name << ": " << describe(c) << "\n";
    }
  }
  ASSERT_EQ(errors.size(), b.cases) << what;
  EXPECT_LE(median_of(errors), b.median_pct) << what;
  EXPECT_LE(*std::max_element(errors.begin(), errors.end()), b.max_pct) << what;
}

// Memory on the H200 runs (tools/measure on one H200, torch 2.11, 2026-11-26), held to the bands
// the allocator issue sets: peak allocated median at most 3 % and reserved (max_memory_reserved,
// the allocator model) median at most 5 % over the 18 runs; the three QLoRA runs (bitsandbytes
// 0.50.2) each within 7 % of peak allocated. The allocator's two constants
// (MemoryConventions::cache_fraction*) were fitted on the 9 runs named below, so the reserved band
// is also held over the file's 9 others alone. Every value is also within the tolerance its file
// states.
bool allocator_fitted_on(const std::string& name) {
  static const std::vector<std::string> fitted = {
      "gpt2-full-bf16-mixed-s1024-b8",          "gpt2-medium-full-bf16-true-s1024-b4",
      "tinyllama-1.1b-full-bf16-true-s2048-b4", "llama-3.2-1b-lora-r16qv-bf16-true-s4096-b2",
      "llama-2-7b-lora-r16qv-bf16-true-s2048-b1", "llama-3.1-8b-lora-r16qv-bf16-true-s1024-b1",
      "gpt2-full-bf16-mixed-s1024-b8-ckpt",     "phi-2-lora-r16qv-bf16-true-s2048-b4-ckpt",
      "llama-2-7b-lora-r16qv-bf16-true-s2048-b4-ckpt"};
  return std::find(fitted.begin(), fitted.end(), name) != fitted.end();
}

TEST(MeasuredRuns, H200MemoryWithinTheIssuesBands) {
  const std::vector<IssueBand> bands = {
      {"measured-h200.json", Metric::peak_allocated, 18, 3.0, 20.0, false},
      {"measured-h200.json", Metric::reserved, 18, 5.0, 20.0, false},
      {"measured-h200.json", Metric::reserved, 9, 5.0, 20.0, true},
      {"measured-h200-qlora.json", Metric::peak_allocated, 3, 7.0, 7.0, false},
      {"measured-h200-qlora.json", Metric::reserved, 3, 7.0, 10.0, false},
      // The 2025-26 families on the same GPU (tools/measure --plan families, 2026-11-27,
      // transformers 5.17.0): QK-norm, sliding/global attention, 256k vocabularies, fused qkv,
      // 128-expert MoE with grouped GEMMs and the per-expert loop. No constant was fitted on them.
      {"measured-h200-families.json", Metric::peak_allocated, 14, 2.0, 5.0, false},
      {"measured-h200-families.json", Metric::reserved, 14, 3.0, 10.0, false},
  };
  for (const IssueBand& b : bands)
    expect_band(b, [&](const CaseResult& r) { return b.held_out_only && allocator_fitted_on(r.name); });
}

// Step times by source, held to the bands the time-model issue sets: Korthikanti et al. 2022
// Table 5 median at most 5 %, Megatron-LM 2021 Table 1 median at most 10 %, the H200 runs
// (tools/measure on one H200) median at most 10 % and max at most 25 %, over all 18 and over the
// 13 that no constant was fitted on; published FSDP throughput (data/reference/fsdp-published.json)
// median at most 7 %. Every value is also within the tolerance its file states.
TEST(MeasuredRuns, StepTimesWithinTheIssuesBands) {
  const std::vector<IssueBand> bands = {
      {"korthikanti-2022-table5.json", Metric::step_time, 8, 5.0, 10.0, false},
      {"megatron-2021-weak-scaling.json", Metric::step_time, 10, 10.0, 15.0, false},
      {"measured-h200.json", Metric::step_time, 18, 10.0, 25.0, false},
      {"measured-h200.json", Metric::step_time, 13, 10.0, 25.0, true},
      // The families runs, none fitted on: GPU-bound dense runs within 25 %; the host-bound MoE
      // steps within the 45 % that five machines spanned for one of them (their tolerance, stated in
      // the file). Median at most 15 %.
      {"measured-h200-families.json", Metric::step_time, 14, 15.0, 45.0, false},
      // Published FSDP throughput of IBM/PyTorch (fms-fsdp) at 96 and 128 GPUs: median 7 %, each
      // within 15 % (4.9 % and +11.8 % at this writing; 10.7 % and +20.5 % before the compute
      // beside hidden collectives was slowed).
      {"fsdp-published.json", Metric::tokens_per_s, 6, 7.0, 15.0, false},
  };
  for (const IssueBand& b : bands)
    expect_band(b, [&](const CaseResult& r) { return b.held_out_only && !r.fitted_by.empty(); });
}

// Every measured run ran: none may be answered "does not fit" (planner::Verdict::no; "tight" is
// an answer that it runs), but those whose peak carries an open mark (litgpt's config_hub rows
// published below what their YAML needs) and the known gap below. llm-foundry's MPT-350M at
// micro-batch 64 on A100-40GBs was refused until its low-precision LayerNorm was priced as it
// saves (16-bit input, one output shared by its consumers); Megatron-Bridge's Llama 3 70B on 64
// GB200s until Megatron FSDP's FP8 parameters were sharded, its CPU offloading of 40 layers'
// activations priced and its recipes' dropout of 0 stated (191 GiB allocated of 184 before, 181 now).
TEST(MeasuredRuns, EveryRunThatRanIsAnsweredRunnable) {
  const std::map<std::string, std::string> known = {
      {"mbridge-25.11-gb200-llama3-70b-fp8cs-64gpu-fsdp",
       "181.1 GiB allocated + 1.9 GiB context of 184.3 GiB fits, but the allocator cache the caching "
       "allocator is expected to strand (half of 16.4 GiB: MemoryConventions::unreleasable_cache_fraction, "
       "not measured) does not: the run, without expandable segments, shows that share below 0.1 here"}};
  std::size_t checked = 0;
  for (const planner::ReferenceCase& c : test::reference_cases()) {
    if (c.kind != CaseKind::measured) continue;
    SCOPED_TRACE(c.name + " (" + c.file + ")");
    bool open = known.contains(c.name);
    for (const planner::Measurement& m : c.measurements) open = open || !m.open.empty();
    const planner::Layout l = planner::make_layout(c.arch, c.training, c.cluster);
    const planner::MemoryBreakdown mem = planner::memory(c.arch, model::count_parameters(c.arch), c.training, l);
    const planner::Verdict v = planner::verdict_of(mem, c.cluster);
    if (!open) {
      EXPECT_NE(v, planner::Verdict::no);
    }
    ++checked;
  }
  EXPECT_GT(checked, 350u);
}

// MosaicML llm-foundry's MPT tables used whole (every bf16 row, data/reference/
// llm-foundry-benchmarks.json, the llm-foundry library with its fused cross-entropy, Composer's FSDP
// gathering bf16 weights, the runs' Triton FlashAttention at its Ampere-instruction rate on H100s;
// no constant fitted on them). The training-library issue asks the median |error| within 10 % and
// the signed bias of short (<= 2048 tokens) and long sequences each within 5 % (3.1 %, +0.6 % and
// -0.4 % at this writing), and the published ZeRO-3/FSDP runs at >= 128 GPUs each within 15 % (the
// 27 rows at 128-512 GPUs: median 4.7 %, worst +14.4 %, the 7B on 512 H100s; it was +20.4 % before
// the compute beside hidden collectives was slowed, TimeConventions::overlap_compute_slowdown).
TEST(MeasuredRuns, LlmFoundryTablesWhole) {
  std::vector<double> all, short_signed, long_signed, at_scale;
  for (const CaseResult& r : report().cases) {
    if (!r.file.ends_with("llm-foundry-benchmarks.json")) continue;
    const auto& c = r.comparisons.at(0);
    all.push_back(std::abs(c.error_pct()));
    const bool long_seq = r.name.find("-s4096-") != std::string::npos || r.name.find("-s8192-") != std::string::npos ||
                          r.name.find("-s16384-") != std::string::npos ||
                          r.name.find("-s32768-") != std::string::npos ||
                          r.name.find("-s65536-") != std::string::npos;
    (long_seq ? long_signed : short_signed).push_back(c.error_pct());
    if (r.name.find("-128gpu-") != std::string::npos || r.name.find("-256gpu-") != std::string::npos ||
        r.name.find("-512gpu-") != std::string::npos)
      at_scale.push_back(std::abs(c.error_pct()));
  }
  ASSERT_EQ(all.size(), 209u);
  ASSERT_EQ(short_signed.size(), 125u);
  ASSERT_EQ(at_scale.size(), 27u);
  ASSERT_EQ(long_signed.size(), 84u);
  EXPECT_LE(median_of(all), 10.0);
  EXPECT_LE(std::abs(median_of(short_signed)), 5.0);
  EXPECT_LE(std::abs(median_of(long_signed)), 5.0);
  EXPECT_LE(median_of(at_scale), 7.0);
  EXPECT_LE(*std::max_element(at_scale.begin(), at_scale.end()), 15.0);
}

// The same tables measure every H100 model's tokens/s per GPU falling from 128 to 512 GPUs (1B
// -9.7 %, 3B -7.5 %, 7B -7.7 %, 13B -2.5 %, 30B -3.8 %, 70B -4.9 %, same micro-batch): the
// prediction falls too, for each (by 0.4-3.0 % at this writing: the rings' latency grows with the
// ranks and slows the compute that hides them; the rest of the measured fall is not explained,
// docs/formulas.md "Overlap"). Before that slowdown the 30B and 70B were predicted to rise.
TEST(MeasuredRuns, LlmFoundryPerGpuThroughputFallsFrom128To512H100s) {
  std::map<std::string, std::pair<const planner::Comparison*, const planner::Comparison*>> by_model;
  for (const CaseResult& r : report().cases) {
    if (!r.name.starts_with("llmfoundry-h100-80gb-mpt-") || r.name.find("-s2048-") == std::string::npos)
      continue;
    const std::string model = r.name.substr(0, r.name.find("-s2048-"));
    if (r.name.find("-128gpu-") != std::string::npos) by_model[model].first = &r.comparisons.at(0);
    if (r.name.find("-512gpu-") != std::string::npos) by_model[model].second = &r.comparisons.at(0);
  }
  ASSERT_EQ(by_model.size(), 6u);
  for (const auto& [model, pair] : by_model) {
    ASSERT_NE(pair.first, nullptr) << model;
    ASSERT_NE(pair.second, nullptr) << model;
    const double measured = (pair.second->measured / 512.0) / (pair.first->measured / 128.0);
    const double predicted = (pair.second->predicted / 512.0) / (pair.first->predicted / 128.0);
    std::cout << fmt::format("  {}: per GPU 128 -> 512: measured {:+.1f} %, predicted {:+.1f} %\n", model,
                             100.0 * (measured - 1.0), 100.0 * (predicted - 1.0));
    EXPECT_LT(measured, 1.0) << model;
    EXPECT_LT(predicted, 1.0) << model;
  }
}

// The same H200 runs predicted with the profile `trainplan calibrate fit` made from the H200
// calibration runs (data/profiles/h200.json) instead of the datasheet: held to the time-model
// issue's bars (median 10 %, max 25 %), and no worse than the datasheet by more than a point (at
// this writing 5.14 % / 21.2 % against 5.17 % / 21.1 %; the eager-kernel constants were fitted on
// the datasheet path).
TEST(MeasuredRuns, H200StepTimesWithTheCalibratedProfile) {
  const hardware::HardwareProfile profile =
      request::read_profile(std::string(TRAINPLAN_REFERENCE_DIR) + "/../profiles/h200.json");
  std::vector<planner::ReferenceCase> h200;
  for (const planner::ReferenceCase& c : test::reference_cases())
    if (c.file.ends_with("measured-h200.json")) h200.push_back(c);
  ASSERT_EQ(h200.size(), 18u);
  const planner::ValidationReport with = planner::validate(h200, {}, &profile);
  const planner::ValidationReport without = planner::validate(h200);
  auto step = [](const planner::Summary& s) {
    for (const auto& m : s.metrics)
      if (m.metric == Metric::step_time) return m;
    return planner::MetricSummary{};
  };
  const planner::MetricSummary p = step(with.measured);
  const planner::MetricSummary d = step(without.measured);
  std::cout << fmt::format("  step time, profile: median {:.2f} %, max {:.2f} %; datasheet: "
                           "median {:.2f} %, max {:.2f} %\n",
                           p.median_abs_pct, p.max_abs_pct, d.median_abs_pct, d.max_abs_pct);
  EXPECT_EQ(p.count, 18u);
  EXPECT_LE(p.median_abs_pct, 10.0);
  EXPECT_LE(p.max_abs_pct, 25.0);
  EXPECT_LE(p.median_abs_pct, d.median_abs_pct + 1.0);
  EXPECT_LE(p.max_abs_pct, d.max_abs_pct + 1.0);
}

TEST(Validate, OracleMedianErrorAtMostFivePercent) {
  const planner::Summary& s = report().oracle;
  EXPECT_EQ(s.cases, 71u);
  EXPECT_LE(s.median_abs_pct, 5.0);
  for (const auto& m : s.metrics)
    std::cout << "  " << to_string(m.metric) << ": median " << m.median_abs_pct << " %, max "
              << m.max_abs_pct << " % (" << m.worst << ")\n";
}

// ---- the arithmetic of comparisons and summaries ------------------------------------------------

Comparison cmp(Metric m, double measured, double predicted, double tol) {
  Comparison c;
  c.metric = m;
  c.unit = planner::Unit::GiB;
  c.measured = measured;
  c.predicted = predicted;
  c.tolerance_pct = tol;
  return c;
}

TEST(Summary, SignedErrorAndTolerance) {
  EXPECT_DOUBLE_EQ(cmp(Metric::peak_allocated, 10.0, 11.0, 15.0).error_pct(), 10.0);
  EXPECT_DOUBLE_EQ(cmp(Metric::peak_allocated, 10.0, 8.0, 15.0).error_pct(), -20.0);
  EXPECT_TRUE(cmp(Metric::peak_allocated, 10.0, 11.5, 15.0).within_tolerance());
  EXPECT_FALSE(cmp(Metric::peak_allocated, 10.0, 8.0, 15.0).within_tolerance());
  EXPECT_TRUE(cmp(Metric::parameters, 7.0, 7.0, 0.0).within_tolerance());
}

TEST(Summary, MedianMaxWorstPerMetricAndKind) {
  std::vector<CaseResult> rs(3);
  rs[0] = {"a",
           CaseKind::oracle,
           "a.json",
           "src",
           {cmp(Metric::parameters, 100, 100, 0), cmp(Metric::flops_forward, 100, 102, 0)},
           ""};
  rs[1] = {"b",
           CaseKind::oracle,
           "b.json",
           "src",
           {cmp(Metric::parameters, 100, 96, 0), cmp(Metric::flops_forward, 100, 101, 0)},
           ""};
  rs[2] = {"c", CaseKind::measured, "c.json", "src", {cmp(Metric::peak_allocated, 10, 13, 15)}, ""};
  const planner::Summary all = planner::summarise(rs);
  EXPECT_EQ(all.cases, 3u);
  EXPECT_EQ(all.compared, 5u);
  EXPECT_DOUBLE_EQ(all.median_abs_pct, 2.0);  // 0, 1, 2, 4, 30
  EXPECT_DOUBLE_EQ(all.max_abs_pct, 30.0);
  EXPECT_EQ(all.outside_tolerance, 4u);
  const planner::Summary oracle = planner::summarise(rs, CaseKind::oracle);
  EXPECT_EQ(oracle.cases, 2u);
  ASSERT_EQ(oracle.metrics.size(), 2u);
  EXPECT_EQ(oracle.metrics[0].metric, Metric::parameters);
  EXPECT_DOUBLE_EQ(oracle.metrics[0].median_abs_pct, 2.0);  // 0 and 4: the middle two averaged
  EXPECT_DOUBLE_EQ(oracle.metrics[0].max_abs_pct, 4.0);
  EXPECT_EQ(oracle.metrics[0].worst, "b");
  EXPECT_DOUBLE_EQ(oracle.metrics[1].median_abs_pct, 1.5);
  EXPECT_EQ(oracle.metrics[1].worst, "a");
  const planner::Summary measured = planner::summarise(rs, CaseKind::measured);
  EXPECT_EQ(measured.cases, 1u);
  EXPECT_DOUBLE_EQ(measured.median_abs_pct, 30.0);
}

TEST(Summary, UnitsOfTheSameQuantityAgree) {
  // The fixture states one peak twice, in GB and in GiB: the predictions differ by 2^30 / 10^9
  // only.
  const auto cases =
      request::read_reference_file(test::kFixtureDir + "/good/minimal.json", test::catalog());
  const CaseResult r = planner::validate_case(cases.front());
  ASSERT_GE(r.comparisons.size(), 2u);
  EXPECT_NEAR(r.comparisons[0].predicted / r.comparisons[1].predicted, 1073741824.0 / 1e9, 1e-12);
}

}  // namespace
}  // namespace trainplan
