#pragma once
// The nonlinear least-squares solver of the calibration fits (private to trainplan_calibration):
// Levenberg-Marquardt (Levenberg 1944, Marquardt 1963) with Marquardt's scaling of the damping by
// the diagonal of J^T J. A step is taken only when it lowers the sum of squares; the damping
// falls by 3 after a step taken and grows by 4 after one refused (1e-3 at the start, 1e-12 to
// 1e12). Method: docs/calibration.md.

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <optional>

namespace trainplan::calibration {

// Unknowns of a fit: N of them, or Eigen::Dynamic when the count is known at run time only.
template <int N>
using LmVector = Eigen::Matrix<double, N, 1>;

// When the solve ends, and the floor that keeps the damped system solvable where J^T J is
// singular.
struct LmRules {
  int max_iterations = 200;
  double min_step = 1e-10;        // a step that moves no unknown by this much is the last
  double min_cost = 0.0;          // a sum of squares at or below this ends the solve
  double diagonal_floor = 1e-12;  // added to every damped diagonal entry
};

// A box the unknowns stay in: each trial is clamped into [lower, upper] before it is priced.
template <int N>
struct LmBounds {
  LmVector<N> lower;
  LmVector<N> upper;
};

// J of `residuals` at x by forward differences of `step`, from r = residuals(x).
template <int N, class Residuals>
[[nodiscard]] Eigen::MatrixXd forward_difference_jacobian(const Residuals& residuals,
                                                          const LmVector<N>& x,
                                                          const Eigen::VectorXd& r, double step) {
  Eigen::MatrixXd jac(r.size(), x.size());
  for (Eigen::Index j = 0; j < x.size(); ++j) {
    LmVector<N> xp = x;
    xp(j) += step;
    jac.col(j) = (residuals(xp) - r) / step;
  }
  return jac;
}

// Minimises |residuals(x)|^2 from x. `residuals(x)` gives an Eigen::VectorXd; `jacobian(x, r)`
// gives dr/dx at x as an Eigen::MatrixXd, r being residuals(x). The size of a step is the largest
// change of an unknown: the solve's own without bounds, what the box lets through with them.
template <int N, class Residuals, class Jacobian>
[[nodiscard]] LmVector<N> levenberg_marquardt(LmVector<N> x, const Residuals& residuals,
                                              const Jacobian& jacobian, const LmRules& rules,
                                              const std::optional<LmBounds<N>>& bounds = std::nullopt) {
  Eigen::VectorXd r = residuals(x);
  double cost = r.squaredNorm();
  double lambda = 1e-3;
  for (int iter = 0; iter < rules.max_iterations && cost > rules.min_cost; ++iter) {
    const Eigen::MatrixXd jac = jacobian(x, r);
    const Eigen::Matrix<double, N, N> jtj = jac.transpose() * jac;
    const LmVector<N> g = jac.transpose() * r;
    bool improved = false;
    double step = 0.0;
    while (lambda < 1e12) {
      Eigen::Matrix<double, N, N> damped = jtj;
      damped.diagonal() +=
          lambda * jtj.diagonal() + LmVector<N>::Constant(x.size(), rules.diagonal_floor);
      const LmVector<N> delta = damped.ldlt().solve(-g);
      LmVector<N> trial_x = x + delta;
      if (bounds) {
        for (Eigen::Index i = 0; i < x.size(); ++i) {
          trial_x(i) = std::clamp(trial_x(i), bounds->lower(i), bounds->upper(i));
        }
      }
      const Eigen::VectorXd trial = residuals(trial_x);
      const double trial_cost = trial.squaredNorm();
      if (std::isfinite(trial_cost) && trial_cost < cost) {
        step = bounds ? (trial_x - x).cwiseAbs().maxCoeff() : delta.cwiseAbs().maxCoeff();
        x = trial_x;
        r = trial;
        cost = trial_cost;
        lambda = std::max(lambda / 3.0, 1e-12);
        improved = true;
        break;
      }
      lambda *= 4.0;
    }
    if (!improved || step < rules.min_step) break;
  }
  return x;
}

}  // namespace trainplan::calibration
