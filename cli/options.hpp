#pragma once
// The training options shared by fit, estimate and plan: one struct, one setup function.

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "trainplan/io/catalog.hpp"
#include "trainplan/planner/fit.hpp"

namespace trainplan::cli {

struct TrainingOptions {
  std::string model;
  std::string cluster;
  std::optional<std::string> method, precision, optimizer, strategy, checkpointing, attention, offload,
      quant, fsdp_wrap, framework, optimizer_impl, lora_targets, inter_node;
  std::optional<int> tp, pp, pp_virtual, expert_parallel;
  bool sequence_parallel = false;
  bool frozen_base_fp32 = false;
  std::optional<std::int64_t> micro_batch, grad_accum, seq, lora_rank, quant_block;
  std::optional<double> lora_alpha, lora_dropout, host_memory_gib;
  bool json = false;
  // estimate and plan only (add_time_options)
  std::optional<std::int64_t> global_batch, global_batch_tokens;
  std::optional<std::string> profile, tokens, emit;
  std::optional<std::size_t> top;
  bool zero_plus_plus = false;
  bool activations = false;  // estimate: list one block's saved tensors
  bool tp_across_nodes = false;
};

void add_training_options(CLI::App& cmd, TrainingOptions& o);
// --global-batch, --global-batch-tokens, --profile, --tokens, --emit, --zero-plus-plus; with
// `plan`, also --top and --tp-across-nodes.
void add_time_options(CLI::App& cmd, TrainingOptions& o, bool plan);

// Model, cluster and request with every default applied; throws InputError naming the bad option.
struct Resolved {
  io::ResolvedModel model;
  io::ResolvedCluster cluster;
  planner::FitRequest request;
};
[[nodiscard]] Resolved resolve(const io::Catalog& catalog, const TrainingOptions& o);

}  // namespace trainplan::cli
