#include "trainplan/request/request_files.hpp"

#include <algorithm>
#include <set>

#include "trainplan/core/error.hpp"
#include "trainplan/request/config_file.hpp"

namespace trainplan::request {

Request make_request(const std::vector<std::string>& files, const std::vector<GivenValue>& values, unsigned cmd,
                     Request base) {
  Request r = std::move(base);
  std::vector<ConfigRead> reads;
  for (const std::string& path : files) reads.push_back(read_training_config(path));
  // What a file only implies goes first, so that any file that says otherwise wins, whichever
  // order they came in (Setting::yields).
  for (const ConfigRead& read : reads)
    for (const Setting& s : read.settings)
      if (s.yields) set_option(r, s.option, s.value, s.source);
  for (const ConfigRead& read : reads) {
    r.file_notes.push_back(read.path + ": read as " + read.kind);
    for (const Setting& s : read.settings)
      if (!s.yields) set_option(r, s.option, s.value, s.source);
    for (const std::string& w : read.warnings) r.file_notes.push_back("warning: " + w);
  }
  for (const GivenValue& v : values) set_option(r, v.option, v.value, v.source);
  for (const ConfigRead& read : reads)
    if (read.precision_from_checkpoint && !r.has("precision")) r.precision_from_checkpoint = read.precision_from_checkpoint;
  std::set<std::string> given;
  for (const auto& [name, source] : r.given) given.insert(name);
  for (const Option& o : options())
    if (!o.in(cmd)) given.insert(o.name);  // this command does not use it: nothing to resolve
  for (const ConfigRead& read : reads)
    for (const ConfigRead::Unmodelled& u : read.unmodelled) {
      const bool elsewhere = std::any_of(reads.begin(), reads.end(),
                                         [&](const ConfigRead& o) { return o.find(u.option) != nullptr; });
      if (!given.contains(u.option) && !elsewhere)
        throw InputError(u.text + " (--" + u.option + " " + u.nearest + " answers for the nearest modelled " +
                         u.option + ")");
    }
  for (const LeftOpen& open : left_open(reads, given)) {
    const Option* o = find_option(open.option);
    const std::string omitted = o ? when_omitted(*o, cmd) : std::string();
    r.file_notes.push_back(open.text + "; nothing else gives " + open.option +
                           (omitted.empty() ? std::string(": left out") : ": " + omitted));
  }
  return r;
}

}  // namespace trainplan::request
