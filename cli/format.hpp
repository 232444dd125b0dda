#pragma once
// What the CLI prints above and beside its tables; the text helpers and tables are reports/text.hpp.

#include <string>
#include <vector>

#include "trainplan/reports/text.hpp"
#include "trainplan/reports/verdict.hpp"
#include "trainplan/request/request.hpp"
#include "trainplan/planner/memory.hpp"

namespace trainplan::cli {

using reports::cluster_words;
using reports::bytes_text;
using reports::count_text;
using reports::model_words;
using reports::gib_text;
using reports::strategy_label;
using reports::Table;
using reports::thousands;
using reports::verdict_look;
using reports::verdict_text;

// The notes, warnings and the options read from config files, above a table answer.
void print_context(const request::Resolved& r);
// The precision as the answer names it: "bf16-mixed", or with its FP8 recipe
// "bf16-mixed, linears in FP8 (te-current)".
[[nodiscard]] std::string precision_words(const model::Training& t);
// The legal but suspicious parts of the request, on stderr (whatever the output format).
void print_warnings(const request::Resolved& r);

}  // namespace trainplan::cli
