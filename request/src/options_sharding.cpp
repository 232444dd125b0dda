// The options of how the parameters are sharded (PyTorch's FSDP, DeepSpeed's ZeRO) and of what
// only Megatron-Core runs; part of the option schema options.cpp builds.
#include "option_builders.hpp"

namespace trainplan::request {

using namespace option_schema;

namespace {

// The groups PyTorch's FSDP shards over: FSDP2's post-forward copy and hybrid sharding's group.
void fsdp_group_options(std::vector<Option>& v) {
  v.push_back(applies(integer(describe("reshard-after-forward", "N", "Reshard to", "parallelism",
                                       "FSDP2's fully_shard(reshard_after_forward=N): after forward each rank keeps "
                                       "1/N of every unit (N consecutive ranks, a node), which backward gathers "
                                       "over those N ranks only",
                                       "0: the shard group (True)"),
                              0, 1 << 20, [](auto& r) -> auto& { return r.training.fsdp_reshard_to; }),
                      [](const Request& r, unsigned cmd) {
                        const model::Training& t = r.training;
                        const bool searched = cmd != command::estimate && !r.has("strategy") &&
                                              t.framework == Framework::pytorch;
                        return (t.runs_fsdp2() && shards_parameters(t.strategy)) ||
                               (searched && t.fsdp_version == 2);
                      },
                      "with FSDP2 (--fsdp-version 2) and --strategy fsdp-full, fsdp-hybrid or zero3 under "
                      "--framework pytorch"));
  v.push_back(applies(integer(describe("hybrid-shard", "N", "Hybrid shard", "parallelism",
                                       "hybrid sharding: the ranks one shard group spans, the others replicating "
                                       "it (HSDP's shard dimension, MiCS's mics_shard_size)",
                                       "0: one node"),
                              0, 1 << 20, [](auto& r) -> auto& { return r.training.hybrid_shard; }),
                      [](const Request& r, unsigned cmd) {
                        return r.training.strategy == Strategy::fsdp_hybrid ||
                               (cmd != command::estimate && !r.has("strategy"));
                      },
                      "with --strategy fsdp-hybrid"));
}

}  // namespace

// How PyTorch and DeepSpeed shard, and how wide plan may go.
std::vector<Option> sharding_options() {
  std::vector<Option> v;
  v.push_back(applies(integer(describe("fsdp-version", "N", "FSDP version", "parallelism",
                                       "PyTorch's FSDP: 1 FullyShardedDataParallel, 2 fully_shard", "the library's"),
                              1, 2, [](auto& r) -> auto& { return r.training.fsdp_version; }),
                      [](const Request& r, unsigned cmd) {
                        const bool strategy_searched = cmd != command::estimate && !r.has("strategy") &&
                                                       r.training.framework == Framework::pytorch;
                        return r.training.gathers_parameters() || strategy_searched;
                      },
                      "where PyTorch shards the parameters (fsdp-*, or zero2/zero3 under --framework pytorch)"));
  fsdp_group_options(v);
  v.push_back(applies(flag(describe("sync-each-batch", "", "Sync each batch", "parallelism",
                                    "accelerate's GradientAccumulationPlugin(sync_each_batch=True): every micro-batch "
                                    "reduces the gradients (FSDP keeps them sharded, DDP all-reduces each time)",
                                    "off: no_sync until the last micro-batch"),
                           [](auto& r) -> auto& { return r.training.sync_each_batch; }),
                      [](const Request& r, unsigned cmd) {
                        const model::Training& t = r.training;
                        const Library l = t.library;
                        const bool accelerate_loop =
                            l == Library::hf_trainer || l == Library::accelerate || l == Library::trl ||
                            l == Library::axolotl;
                        const bool data_parallel = t.strategy == Strategy::ddp || t.gathers_parameters() ||
                                                   (cmd != command::estimate && !r.has("strategy"));
                        return accelerate_loop && t.framework == Framework::pytorch && t.grad_accum > 1 &&
                               data_parallel;
                      },
                      "with --grad-accum above 1, DDP or PyTorch FSDP, under accelerate's accumulation "
                      "(hf-trainer, accelerate, trl, axolotl)"));
  v.push_back(only(applies(flag(describe("zero-plus-plus", "", "ZeRO++", "parallelism",
                                         "DeepSpeed ZeRO++ (quantized gathers, hpZ, qgZ)", "off"),
                                [](auto& r) -> auto& { return r.zero_plus_plus; }),
                           [](const Request& r, unsigned cmd) {
                             return r.training.strategy == Strategy::zero3 ||
                                    (cmd == command::plan && !r.has("strategy"));
                           },
                           "with --strategy zero3"),
                   command::estimate | command::plan));
  v.push_back(applies(flag(describe("no-overlap-comm", "", "No overlap_comm", "parallelism",
                                    "DeepSpeed's overlap_comm false: ZeRO reduces the gradients on the compute "
                                    "stream, exposed (DeepSpeed's default below stage 3)",
                                    "off"),
                           [](auto& r) -> auto& { return r.training.no_overlap_comm; }),
                      [](const Request& r, unsigned cmd) {
                        const Strategy s = r.training.strategy;
                        return (r.training.framework != Framework::megatron &&
                                is_zero(s)) ||
                               (cmd != command::estimate && !r.has("strategy"));
                      },
                      "with --strategy zero1, zero2 or zero3 (DeepSpeed)"));
  v.push_back(only(flag(describe("tp-across-nodes", "", "TP across nodes", "parallelism",
                                 "also try tensor parallelism wider than a node", "off"),
                        [](auto& r) -> auto& { return r.tp_across_nodes; }),
                   command::plan));
  return v;
}

// What only Megatron-Core runs: TP communication overlap and the MoE capacity.
std::vector<Option> megatron_options() {
  std::vector<Option> v;
  v.push_back(applies(flag(describe("tp-comm-overlap", "", "TP comm overlap", "parallelism",
                                    "Megatron-Core's --tp-comm-overlap: tensor-parallel collectives pipelined "
                                    "with their GEMMs (needs --sequence-parallel)",
                                    "off"),
                           [](auto& r) -> auto& { return r.training.tp_comm_overlap; }),
                      [](const Request& r, unsigned cmd) {
                        return r.training.framework == Framework::megatron &&
                               (r.training.tp > 1 || (cmd == command::plan && !r.has("tp")));
                      },
                      "with --framework megatron and --tp above 1"));
  const auto megatron = [](const Request& r, unsigned /*cmd*/) { return r.training.framework == Framework::megatron; };
  v.push_back(applies(real(describe("moe-capacity-factor", "F", "Expert capacity", "parallelism",
                                    "MoE: each expert takes at most F times its balanced share of tokens; "
                                    "0: dropless",
                                    "0"),
                           0, 1000, false, false, [](auto& r) -> auto& { return r.training.moe_capacity_factor; }),
                      megatron, "with --framework megatron (transformers' MoE blocks are dropless)"));
  v.push_back(applies(flag(describe("moe-pad-to-capacity", "", "Pad to capacity", "parallelism",
                                    "MoE: pad each expert's input to its capacity", "off"),
                           [](auto& r) -> auto& { return r.training.moe_pad_to_capacity; }),
                      megatron, "with --framework megatron (transformers' MoE blocks are dropless)"));
  return v;
}

}  // namespace trainplan::request
