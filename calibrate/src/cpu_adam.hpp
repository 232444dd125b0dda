// CPU AdamW throughput, the optimizer step that ZeRO-Offload and FSDP CPU offload run on the host.
#pragma once

#include <cstdint>
#include <span>

namespace trainplan::calibrate {

// torch.optim.AdamW defaults except lr (Loshchilov & Hutter 2019, Algorithm 2).
struct AdamWConfig {
  float lr = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

// The constants of step `step` (>= 1): p <- p * lr_decay - step_size * m / (sqrt(v) / bias2_sqrt
// + eps), with lr_decay = 1 - lr * weight_decay, step_size = lr / (1 - beta1^step) and
// bias2_sqrt = sqrt(1 - beta2^step). Shared by the CPU step and the GPU kernel.
struct AdamWStepScalars {
  float lr_decay = 1.0f;
  float step_size = 0.0f;
  float bias2_sqrt = 1.0f;
};
[[nodiscard]] AdamWStepScalars adamw_step_scalars(const AdamWConfig& cfg, int step);

// One AdamW step (decoupled weight decay, bias-corrected moments) over fp32 arrays, `step` >= 1,
// split across `threads` std::threads.
void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> exp_avg,
                std::span<float> exp_avg_sq, int step, const AdamWConfig& cfg, int threads);

// Mean time of one step over `iters` steps after `warmup`, in microseconds.
[[nodiscard]] double time_cpu_adam_us(std::int64_t params, int warmup, int iters, int threads);

}  // namespace trainplan::calibrate
