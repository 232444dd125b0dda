#include "trainplan/planner/optimizer_step.hpp"

#include <algorithm>

#include "trainplan/model/partial.hpp"
#include "trainplan/planner/compute.hpp"

namespace trainplan::planner {
namespace {

constexpr double kFp32 = 4.0;

// Bytes of the stepped weights, of the moments, and of the gradient the step reads.
struct StepDtypes {
  double master;
  double moments;
  double grad;
  double copy;  // a 16-bit copy written after the fp32 master update (0 when the model is fp32)
};

StepDtypes step_dtypes(const model::Training& tr) {
  const double w = param_bytes(tr.precision);
  switch (tr.framework) {
    case Framework::pytorch:
      // Autocast trains an fp32 model: weights, gradients and moments all in the parameter dtype.
      return {w, w, w, 0.0};
    case Framework::deepspeed:
    case Framework::megatron: {
      // fp32 master weights and main gradients beside the 16-bit model; DeepSpeed's
      // bf16_master_weights_and_grads and bf16_optimizer_states make them bf16.
      const double c = compute_bytes(tr.precision);
      const double master = tr.bf16_master ? 2.0 : w;
      const double grad = tr.bf16_master ? 2.0 : (is_mixed(tr.precision) ? kFp32 : w);
      return {master, tr.bf16_optimizer_states ? 2.0 : w, grad, is_mixed(tr.precision) ? master + c : 0.0};
    }
  }
  return {w, w, w, 0.0};
}

bool is_adam(Optimizer o) { return o == Optimizer::adam || o == Optimizer::adamw; }

bool fused_kernel(OptimizerImpl impl) {
  switch (impl) {
    case OptimizerImpl::fused:
    case OptimizerImpl::deepspeed_fused:
      return true;
    case OptimizerImpl::framework_default:
    case OptimizerImpl::foreach:
    case OptimizerImpl::for_loop:
    case OptimizerImpl::deepspeed_cpu:
      return false;
  }
  return false;
}

}  // namespace

double optimizer_step_bytes(const model::Training& tr) {
  const StepDtypes d = step_dtypes(tr);
  const double w = d.master;
  const double m = d.moments;
  const double g = d.grad;
  const OptimizerImpl impl = tr.optimizer_implementation();
  if (impl == OptimizerImpl::deepspeed_cpu) return 0.0;  // the step runs on the host
  switch (tr.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw:
      if (fused_kernel(impl)) return 2.0 * w + 4.0 * m + g + d.copy;
      return 6.0 * w + 12.0 * m + 3.0 * g + d.copy;
    case Optimizer::adamw_8bit:
    case Optimizer::paged_adamw_8bit:
      // bitsandbytes' fused 8-bit kernel: weights and gradient once each way, 1-byte moments.
      return 2.0 * w + g + 4.0 * 1.0 + d.copy;
    case Optimizer::sgd:
      return 2.0 * w + 2.0 * g + d.copy;
    case Optimizer::sgd_momentum:
    case Optimizer::lion:  // one momentum, read and written, as SGD's
      return 2.0 * w + 2.0 * m + 2.0 * g + d.copy;
    case Optimizer::paged_adamw:
      // bitsandbytes' fused 32-bit kernel: weights and gradient once each way, two fp32 moments.
      return 2.0 * w + g + 4.0 * 4.0 + d.copy;
    case Optimizer::lion_8bit:
    case Optimizer::paged_lion_8bit:
      // bitsandbytes' fused 8-bit kernel: weights and gradient once each way, one 1-byte moment.
      return 2.0 * w + g + 2.0 * 1.0 + d.copy;
    case Optimizer::lamb:
      // DeepSpeed's FusedLamb: Adam's fused pass and one more read of the weights and the update
      // for the per-layer norms of the trust ratio (ops/lamb/fused_lamb.py).
      return 4.0 * w + 4.0 * m + g + d.copy;
    case Optimizer::adafactor:
      return 4.0 * w + 2.0 * g + d.copy;  // the update tensor; factored moments are small
    case Optimizer::galore_adamw:
      // galore_torch: the gradient projected down (read), the low-rank moments updated, the
      // update projected back to full size (written, read) and applied: like Adafactor's update
      // tensor; the projections' small GEMMs and the SVD every update interval are not priced.
      return 4.0 * w + 2.0 * g + d.copy;
  }
  return 2.0 * w + 2.0 * g + d.copy;
}

Bytes optimizer_step_transient(const model::Training& tr, double stepped_params,
                               double largest_tensor) {
  if (!is_adam(tr.optimizer)) return Bytes(0.0);
  const double w = step_dtypes(tr).moments;  // foreach's sqrt(v)
  switch (tr.optimizer_implementation()) {
    case OptimizerImpl::foreach:
      return Bytes(w * stepped_params);
    case OptimizerImpl::for_loop:
      return Bytes(w * std::min(largest_tensor, stepped_params));
    case OptimizerImpl::framework_default:
    case OptimizerImpl::fused:
    case OptimizerImpl::deepspeed_fused:
    case OptimizerImpl::deepspeed_cpu:
      return Bytes(0.0);
  }
  return Bytes(0.0);
}

double trainable_tensors(const model::Architecture& a, const BlockShape& block,
                         const model::Training& tr, double layers) {
  // Partial fine-tuning: the subset's tensors, in the stage's share of the layers.
  if (model::trains_subset(tr))
    return model::subset_parameters(a, model::count_parameters(a), tr, 0, a.layers, true, true).tensors * layers /
           static_cast<double>(std::max<std::int64_t>(1, a.total_layers()));
  if (tr.method != Method::full) {
    double adapted = 0.0;
    for (std::size_t i = 0; i < block.linears.size(); ++i)
      if (block.adapted[i]) adapted += static_cast<double>(block.linears[i].copies);
    return 2.0 * adapted * layers;
  }
  double per_block = 0.0;
  for (const model::Linear& l : block.linears)
    per_block += static_cast<double>(l.copies) * (l.bias ? 2.0 : 1.0);
  const double norm_tensors = a.norm == model::NormKind::layernorm ? 2.0 : 1.0;
  per_block += norm_tensors * a.norms_per_layer;
  const double edges = 1.0 + (a.position == model::PositionKind::learned ? 1.0 : 0.0) +
                       (a.final_norm ? norm_tensors : 0.0) + (a.tie_embeddings ? 0.0 : 1.0);
  return per_block * layers + edges;
}

bool optimizer_states_fp32(const model::Training& tr) { return step_dtypes(tr).master >= kFp32; }

OptimizerStepTime optimizer_step_time(const model::Training& tr, BytesPerSecond hbm,
                                      double fp32_tflops, double params, double tensors,
                                      const TimeConventions& tc,
                                      std::optional<BytesPerSecond> measured) {
  OptimizerStepTime out;
  const double bytes = params * optimizer_step_bytes(tr);
  const double fraction = step_dtypes(tr).master < kFp32 ? tc.multi_tensor_bandwidth_16bit
                                                        : tc.multi_tensor_bandwidth_fp32;
  // A measured rate (the calibration's own multi-tensor kernel) stands in for the streaming rate:
  // torch's kernels reach the same share of it as of the datasheet's achieved streaming rate.
  const BytesPerSecond rate =
      measured ? *measured * (fraction / tc.hbm_efficiency) : hbm * fraction;
  if (bytes > 0.0) out.kernels = Bytes(bytes) / rate;
  const OptimizerImpl impl = tr.optimizer_implementation();
  if (fused_kernel(impl) && is_adam(tr.optimizer) && fp32_tflops > 0.0)
    out.kernels += Seconds(params * tc.fused_adam_flops_per_element / (fp32_tflops * 1e12));
  switch (impl) {
    case OptimizerImpl::foreach:
      out.host = tc.optimizer_host_per_tensor * tensors;
      break;
    case OptimizerImpl::fused:
      out.host = tc.fused_optimizer_host_per_tensor * tensors;
      break;
    case OptimizerImpl::for_loop:
      // One launch per formula step per tensor, each issued from Python.
      out.host = tc.optimizer_host_per_tensor * tensors +
                 tc.host_per_forward_kernel * (tensors * tc.for_loop_kernels_per_tensor);
      break;
    case OptimizerImpl::framework_default:
    case OptimizerImpl::deepspeed_fused:  // one flat fp32 partition per parameter group
    case OptimizerImpl::deepspeed_cpu:
      break;
  }
  return out;
}

}  // namespace trainplan::planner
