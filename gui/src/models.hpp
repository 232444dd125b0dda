#pragma once
// Table models over the library's result structs, one per file under models/. Each model keeps a
// copy of what it shows, so it stays valid while the session moves on; the charts read these same
// models.

#include "models/communication_model.hpp"
#include "models/compare_model.hpp"
#include "models/memory_model.hpp"
#include "models/plans_model.hpp"
#include "models/step_time_model.hpp"
#include "models/strategies_model.hpp"
#include "models/sweep_model.hpp"
