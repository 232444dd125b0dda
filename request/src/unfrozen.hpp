#pragma once
// Partial fine-tuning named by parameter-name patterns (--trainable match:PATTERN, axolotl's
// unfrozen_parameters), resolved against the model's parameter names.

#include <string>
#include <vector>

#include "trainplan/model/architecture.hpp"
#include "trainplan/model/training.hpp"

namespace trainplan::request {

// The subset the patterns unfreeze in `a` under t's transformers release, added to t.partial, as
// axolotl's freeze_layers_except reads them (src/axolotl/utils/freeze.py at 067b021c: a `.` not
// followed by `+` is a literal dot, the pattern matches from the start of the name (re.match), a
// trailing [start:end] range unfreezes rows of the parameter, whose gradient is still whole).
// Patterns that match nothing and parts that differ between layers are warnings (naming `label`);
// a family whose names are not known, a bad pattern, or nothing left to train is an InputError.
[[nodiscard]] model::TrainedSubset resolve_trainable_patterns(const model::Architecture& a, const model::Training& t,
                                                              const std::vector<std::string>& patterns,
                                                              const std::string& label,
                                                              std::vector<std::string>& warnings);

}  // namespace trainplan::request
