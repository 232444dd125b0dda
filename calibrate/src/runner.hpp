// The whole run: bootstrap is done by the caller; this creates RUN_DIR, writes provenance, runs
// the selected suites (collectives on every rank, the rest on world rank 0) and logs each point.
#pragma once

#include <stdexcept>
#include <string>

#include "bootstrap.hpp"
#include "options.hpp"

namespace trainplan::calibrate {

class NoCudaDevice : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Number of CUDA devices; throws NoCudaDevice saying what cudaGetDeviceCount reported otherwise.
[[nodiscard]] int require_cuda_device();

void run_calibrate(const Options& o, Bootstrap& boot, const std::string& command);

}  // namespace trainplan::calibrate
