#pragma once
// The built-in catalogue (data/models, data/gpus, data/clusters), read once for every test in a
// binary.
#include "trainplan/io/catalog.hpp"

namespace trainplan::test {

inline const io::Catalog& catalog() {
  static const io::Catalog c = io::Catalog::builtin();
  return c;
}

}  // namespace trainplan::test
