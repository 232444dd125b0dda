#pragma once
// The built-in catalogue (data/models, data/gpus, data/clusters), read once for every test in a
// binary.
#include "trainplan/request/catalog.hpp"

namespace trainplan::test {

inline const request::Catalog& catalog() {
  static const request::Catalog c = request::Catalog::builtin();
  return c;
}

}  // namespace trainplan::test
