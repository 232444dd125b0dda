#pragma once
// The communication terms of one training step (Evaluator::cost): each records its transfers in the
// step's list and returns the time it exposes. Tensor-parallel and expert collectives per layer,
// pipeline transfers and bubble, data-parallel gradient and parameter traffic by strategy, and the
// host copies of offloading.

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"
#include "trainplan/planner/evaluator.hpp"

namespace trainplan::planner {

struct TermSink {
  StepCost& out;
  void add(Transfer kind, CommPurpose purpose, LinkTier tier, int ranks, Bytes bytes, Seconds time,
           Seconds exposed) {
    if (!(bytes.value() > 0.0) && !(time.value() > 0.0)) return;
    for (std::size_t i = 0; i < out.comm_count; ++i) {
      CommTerm& c = out.comm[i];
      if (c.kind == kind && c.purpose == purpose && c.tier == tier) {
        c.bytes += bytes;
        c.time += time;
        c.exposed += exposed;
        return;
      }
    }
    if (out.comm_count >= out.comm.size()) return;
    out.comm[out.comm_count++] = CommTerm{kind, purpose, tier, ranks, bytes, time, exposed};
  }
};

// What every communication term reads: the links, the model, the training, its layout.
struct TermInputs {
  const LinkModel& links;
  const model::Architecture& a;
  const model::Training& tr;
  const Layout& l;
  const TimeConventions& tc;
  double md;  // micro-batches per step
  double c;   // compute dtype bytes
};

// A layer's collectives for one micro-batch: time in forward, backward and recomputation, the
// edges' (TP: vocabulary-parallel embedding and head), and bytes per layer and of the edges.
struct LayerComm {
  Seconds forward;
  Seconds backward;
  Seconds recompute;
  Seconds edge;
  Bytes bytes;
  Bytes edge_bytes;
  Placement group;
};

// What data parallelism moves per step: gradients (reduced) and parameters (gathered), with the
// experts' share among the dp / ep ranks holding the same experts, counted as their share of the
// data-parallel ring's traffic, ((dp/ep - 1)/(dp/ep)) / ((dp - 1)/dp).
struct DataParallelBytes {
  double psi = 0;    // trainable parameters, experts weighted by their share
  double local = 0;  // parameters held, likewise
  Bytes grads;
  Bytes params;
  Bytes root;  // of params, the FSDP root unit's (ModelStates::root_params), in the compute dtype
};

// The buckets a framework reduces the data-parallel gradients in: PyTorch DDP's bucket_cap_mb
// (25 MB), DeepSpeed's reduce_bucket_size (5e8 elements), Megatron's max(40M, 1M x dp) elements
// with overlap_grad_reduce and one bucket without (megatron/core/distributed/
// distributed_data_parallel.py). Each bucket is one collective at its own size.
struct GradientBuckets {
  Bytes bucket;       // at most the gradients
  double full = 1.0;  // buckets of that size
  Bytes rest;         // the last, partial one (0 when the size divides)
};
[[nodiscard]] GradientBuckets gradient_buckets(const model::Training& tr, const TimeConventions& tc,
                                               Bytes grads, double local_params, int dp_ranks);

// Megatron's f/g operators (Shoeybi et al. 2019; with sequence parallelism each all-reduce becomes
// an all-gather and a reduce-scatter, Korthikanti et al. 2022 Sec. 4.2.2).
// `pairs`: the layer's f/g pairs a pass, from its op list (BlockCompute::tensor_parallel_pairs).
[[nodiscard]] LayerComm tensor_parallel_comm(const TermInputs& in, double pairs);

// MoE dispatch and combine all-to-alls among the expert-parallel ranks, half in each direction;
// `per_pass`: the layer's all-to-alls a pass, from its op list (BlockCompute::expert_all_to_alls).
[[nodiscard]] LayerComm expert_comm(const TermInputs& in, double per_pass);

// Context parallelism's exchange of keys and values, one layer and micro-batch, per rank (C: one
// rank's K and V chunk, b x seq/cp tokens x the key and value widths on its GPU):
//  * ring (Liu et al. 2023, arXiv:2310.01889, Sec. 3; TE AttnFuncWithCPAndKVP2P): cp - 1 sends of
//    C forward; backward the K/V chunk and its gradient each go round, 2 (cp - 1) C. Each send
//    overlaps the attention block it feeds: exposed only where the sends outlast attention.
//  * all_gather (Dubey et al. 2024, Sec. 3.3.2): K/V gathered forward (cp C), gathered again and
//    their gradients reduce-scattered backward; exposed.
//  * all_to_all (Jacobs et al. 2023, arXiv:2309.14509, Sec. 3.1): Q, K, V in and the output back,
//    each a rank's b x seq/cp tokens, forward and again backward; exposed.
// Recomputation (selective or full) repeats the forward exchange.
struct ContextParallelComm {
  Seconds forward, backward, recompute;  // every transfer
  Seconds forward_exposed, backward_exposed, recompute_exposed;
  Bytes bytes;  // sent per layer: forward, backward and recompute
  Placement group;
};
[[nodiscard]] ContextParallelComm context_parallel_comm(const TermInputs& in,
                                                        Seconds attention_forward);
[[nodiscard]] Seconds record_context_parallel(TermSink& sink, const TermInputs& in,
                                              const ContextParallelComm& cp, double layers);

// The share of a layer's tensor-parallel time left exposed: 1 - tc.tp_overlap, or under
// --tp-comm-overlap (model::Training::tp_comm_overlap) each pass's collectives in tp chunks
// pipelined with that pass's GEMMs: the first chunk waits, what the GEMMs cannot cover waits too.
[[nodiscard]] double tp_exposed_share(const model::Training& tr, const LayerComm& tp, Seconds gemm_forward,
                                      Seconds gemm_backward, double tp_overlap);

// The tensor-parallel and expert collectives of a stage's layers over the step, exposed unless
// overlapped (`tp_expose`: the share of the tensor-parallel time left exposed, tp_exposed_share).
[[nodiscard]] Seconds record_layer_comm(TermSink& sink, const TermInputs& in, double tp_expose, const LayerComm& tp,
                          const LayerComm& moe, double layers);

// Pipeline: the bubble (Narayanan et al. 2021 Sec. 2.2) and the stage-to-stage transfers: each
// micro-batch crosses each of the stage's v boundaries forward and backward; the fill and drain
// add p - 1 crossings each way. The 1F1B schedule blocks on them.
[[nodiscard]] Seconds pipeline_term(TermSink& sink, const TermInputs& in, Seconds stage_micro_batch,
                      Seconds& bubble);

[[nodiscard]] DataParallelBytes data_parallel_bytes(const TermInputs& in, const ModelStates& ms);
// What a sharding strategy gathers again in backward: all but the root unit where PyTorch's FSDP
// keeps it gathered from forward to backward (FSDP1; torchtitan's FSDP2); everything otherwise.
[[nodiscard]] Bytes regathered_params(const model::Training& tr, const DataParallelBytes& b);

// FSDP2's copies on the compute stream, bytes read and written per micro-batch
// (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): each all-gather's copy-out
// (split_with_sizes_copy) reads the flat all-gather output and writes the parameters; each
// reduce-scatter's copy-in (chunk_cat) reads the unsharded gradients and writes the flat input in
// the reduce dtype. FSDP1 gathers into and reduces from its flat parameter: none. Zero without
// data-parallel replicas, as data_parallel_term.
struct Fsdp2Copies {
  Bytes forward, backward;
};
[[nodiscard]] Fsdp2Copies fsdp2_copies(const TermInputs& in, const DataParallelBytes& b);

// The compute slowed by the collectives it hides (TimeConventions::overlap_compute_slowdown, s):
// compute that runs beside a collective for its hidden time H does H / (1 + s) of its work, so
// H s / (1 + s) of it runs after. H: every collective's time less its exposed part, over the step
// (the host<->device copies run on the copy engines: none), at most the GPU's busy time `busy`.
[[nodiscard]] Seconds overlap_slowdown(const StepCost& cost, Seconds busy, double s);

[[nodiscard]] Seconds data_parallel_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                           Seconds stage_fwd, Seconds stage_bwd, double layers,
                           bool zero_plus_plus);

// DPO's reference forward (Training::runs_reference; 0 otherwise): the frozen model over the same
// sequences every micro-batch, no gradient and no recomputation (TRL disables checkpointing for
// it), priced as the policy's forward phase `stage_fwd`. Under sharded parameters (ZeRO-3, FSDP)
// its units are gathered again, as for the policy's forward and behind the same compute (TRL
// prepares the reference with the policy's engine: prepare_deepspeed at stage 3, prepare_fsdp); an
// adapter method's reference is the policy itself with the adapters off, gathered the same way.
[[nodiscard]] Seconds reference_forward_term(TermSink& sink, const TermInputs& in, const DataParallelBytes& b,
                                             Seconds stage_fwd, double layers, bool zero_plus_plus);

// Optimizer offload (ZeRO-Offload, Ren et al. 2021): gradient partitions to the host every
// micro-batch (hidden behind that backward where possible), updated 16-bit parameters back after
// the step; parameter offload adds the shard's fetch for forward and backward of every
// micro-batch, partly prefetched.
[[nodiscard]] Seconds optimizer_offload_term(TermSink& sink, const TermInputs& in, double opt_params,
                               double local, Seconds stage_fwd, Seconds stage_bwd);

// What `layers` blocks keep (`per_layer` each: a checkpoint, or a layer's saved activations under
// Megatron-Core's CPU offloading) to the host as forward passes each block and back before its
// backward, each copy behind that block's compute (ZeRO-R, Rajbhandari et al. 2019, Sec. 6.1;
// Transformer Engine's double-buffered offload handler).
[[nodiscard]] Seconds checkpoint_offload_term(TermSink& sink, const TermInputs& in, Seconds layer_fwd,
                                Seconds layer_bwd_and_replay, double layers, Bytes per_layer);
// The activations' offload of the step, if any: the checkpoints under full-offload, or the
// `per_layer` activations of Training::offload_activation_layers layers.
[[nodiscard]] Seconds activation_offload_term(TermSink& sink, const TermInputs& in, Seconds layer_fwd,
                                Seconds layer_bwd, Seconds layer_replay, double layers, Bytes per_layer);

}  // namespace trainplan::planner
