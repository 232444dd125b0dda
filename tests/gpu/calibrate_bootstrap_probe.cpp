// Prints what the bootstrap of trainplan-calibrate decided and a digest of the ncclUniqueId, so
// that a test can launch several copies (environment variables or mpirun) and compare them.
// ncclGetUniqueId needs no GPU, so this runs on any machine.
#include <cstdint>
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "bootstrap.hpp"
#include "launch_env.hpp"

namespace tb = trainplan::calibrate;

int main() {
  try {
    tb::Bootstrap boot(tb::detect_launch(tb::process_environment(), tb::built_with_mpi()), 1);
    const ncclUniqueId id = boot.unique_id();
    std::uint64_t digest = 1469598103934665603ull;  // FNV-1a over the 128 bytes
    for (const char c : id.internal) {
      digest = (digest ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    fmt::print("rank {} of {} local {} via {} id {:016x}\n", boot.first_rank(), boot.world_size(),
               boot.launch().local_rank, boot.launch().launcher, digest);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
