#include "cpu_adam.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

namespace trainplan::calibrate {
namespace {

void adamw_range(float* p, const float* g, float* m, float* v, std::size_t n, float lr_decay,
                 float step_size, float bias2_sqrt, const AdamWConfig& cfg) {
  const float b1 = cfg.beta1;
  const float b2 = cfg.beta2;
  for (std::size_t i = 0; i < n; ++i) {
    p[i] *= lr_decay;
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / bias2_sqrt + cfg.eps);
  }
}

}  // namespace

AdamWStepScalars adamw_step_scalars(const AdamWConfig& cfg, int step) {
  if (step < 1) throw std::invalid_argument("adamw_step: step must be >= 1");
  const float bias1 = 1.0f - std::pow(cfg.beta1, static_cast<float>(step));
  const float bias2 = 1.0f - std::pow(cfg.beta2, static_cast<float>(step));
  return {1.0f - cfg.lr * cfg.weight_decay, cfg.lr / bias1, std::sqrt(bias2)};
}

void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> exp_avg,
                std::span<float> exp_avg_sq, int step, const AdamWConfig& cfg, int threads) {
  const std::size_t n = param.size();
  if (grad.size() != n || exp_avg.size() != n || exp_avg_sq.size() != n) {
    throw std::invalid_argument("adamw_step: arrays differ in length");
  }
  const AdamWStepScalars c = adamw_step_scalars(cfg, step);
  const float lr_decay = c.lr_decay;
  const float step_size = c.step_size;
  const float bias2_sqrt = c.bias2_sqrt;

  const auto workers = static_cast<std::size_t>(std::max(1, threads));
  const std::size_t per = (n + workers - 1) / workers;
  std::vector<std::jthread> pool;
  pool.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    const std::size_t begin = std::min(n, w * per);
    const std::size_t count = std::min(n, begin + per) - begin;
    if (count == 0) break;
    pool.emplace_back([=, &cfg] {
      adamw_range(param.data() + begin, grad.data() + begin, exp_avg.data() + begin,
                  exp_avg_sq.data() + begin, count, lr_decay, step_size, bias2_sqrt, cfg);
    });
  }
}

double time_cpu_adam_us(std::int64_t params, int warmup, int iters, int threads) {
  const auto n = static_cast<std::size_t>(params);
  std::vector<float> p(n, 0.5f);
  std::vector<float> g(n);
  std::vector<float> m(n, 0.0f);
  std::vector<float> v(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<float>(i % 1024) * 1e-3f - 0.5f;
  const AdamWConfig cfg;
  int step = 1;
  for (int i = 0; i < warmup; ++i) adamw_step(p, g, m, v, step++, cfg, threads);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) adamw_step(p, g, m, v, step++, cfg, threads);
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / std::max(1, iters);
}

}  // namespace trainplan::calibrate
