#include "trainplan/model/lora.hpp"

#include <algorithm>
#include <set>

#include "trainplan/core/error.hpp"

namespace trainplan::model {
namespace {

// A part of a fused projection: q, k or v of a fused qkv, gate or up of a fused gate_up (Phi-3).
bool is_fused_part(const Architecture& a, const Linear& l) {
  return (!a.fused_qkv_name.empty() && l.hf_name == a.fused_qkv_name) ||
         (!a.fused_gate_up_name.empty() && l.hf_name == a.fused_gate_up_name);
}

std::string valid_names(const Architecture& a) {
  std::set<std::string> names{"all-linear", "q", "k", "v", "o", "up", "down", "lm_head"};
  if (a.mlp == MlpKind::gated) names.insert("gate");
  if (a.is_moe()) names.insert("router");
  for (const Linear& l : block_linears(a, a.encoder_decoder ? Stack::encoder : Stack::decoder))
    names.insert(l.hf_name);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void check_known(const Architecture& a, const std::string& t) {
  if (t == "all-linear" || t == "lm_head") return;
  if (try_parse<Role>(t)) return;
  for (const Linear& l : block_linears(a, Stack::decoder))
    if (l.hf_name == t) return;
  throw InputError("unknown LoRA target '" + t + "' for model '" + a.name +
                   "' (valid: " + valid_names(a) + ")");
}

}  // namespace

std::vector<std::string> split_targets(const std::string& csv) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    const auto b = cur.find_first_not_of(" \t");
    const auto e = cur.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(cur.substr(b, e - b + 1));
    cur.clear();
  };
  for (char ch : csv) {
    if (ch == ',') flush();
    else cur += ch;
  }
  flush();
  if (out.empty()) throw FieldError("{lora-targets}: empty list of target modules");
  return out;
}

std::vector<LoraAdapter> lora_block_adapters(const Architecture& a, const LoraConfig& c,
                                             Stack stack) {
  for (const auto& t : c.targets) check_known(a, t);
  const bool all = std::find(c.targets.begin(), c.targets.end(), "all-linear") != c.targets.end();
  auto named = [&](const std::string& n) {
    return std::find(c.targets.begin(), c.targets.end(), n) != c.targets.end();
  };
  std::vector<LoraAdapter> out;
  const std::vector<Linear> linears = block_linears(a, stack);
  std::set<std::string> fused_done;
  for (const Linear& l : linears) {
    if (l.role == Role::lm_head) continue;
    const Stack s = l.stack;
    if (is_fused_part(a, l) && (all || named(l.hf_name))) {
      // PEFT on the fused projection: one adapter on the whole Linear(h, q + 2 kv), (h, 2 I).
      if (!fused_done.insert(l.hf_name).second) continue;
      std::int64_t width = 0;
      for (const Linear& part : linears)
        if (part.hf_name == l.hf_name && part.stack == l.stack) width += part.out;
      out.push_back({s, l.in, width, 1});
      continue;
    }
    if (all || named(std::string(to_string(l.role))) || (!is_fused_part(a, l) && named(l.hf_name)))
      out.push_back({s, l.in, l.out, l.copies});
  }
  return out;
}

bool lora_adapts(const Architecture& a, const LoraConfig& c, Role role) {
  return adapted_roles(a, c)[static_cast<std::size_t>(role)];
}

AdaptedRoles adapted_roles(const Architecture& a, const LoraConfig& c) {
  auto named = [&](std::string_view n) {
    return std::find(c.targets.begin(), c.targets.end(), n) != c.targets.end();
  };
  AdaptedRoles out{};
  const bool all = named("all-linear");
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Role role = static_cast<Role>(i);
    out[i] = (all && role != Role::lm_head) || named(to_string(role));
  }
  for (const Linear& l : block_linears(a, Stack::decoder))
    if (named(l.hf_name)) out[static_cast<std::size_t>(l.role)] = true;
  return out;
}

bool lora_targets_lm_head(const Architecture& a, const LoraConfig& c) {
  for (const auto& t : c.targets) check_known(a, t);
  return std::find(c.targets.begin(), c.targets.end(), "lm_head") != c.targets.end();
}

std::int64_t lora_parameters(const Architecture& a, const LoraConfig& c) {
  if (c.rank <= 0) throw FieldError("{lora-rank} must be positive (got " + std::to_string(c.rank) + ")");
  std::int64_t p = 0;
  for_each_layer_kind(a, [&](const Architecture& kind, Stack stack, std::int64_t layers, bool) {
    for (const auto& ad : lora_block_adapters(kind, c, stack)) p += layers * ad.parameters(c.rank);
  });
  // Multi-token prediction modules: a block of the main kind each, adapted like the model's (the
  // shared head's adapter is the head's; their projections are not linears PEFT names).
  if (a.mtp_layers > 0)
    for (const auto& ad : lora_block_adapters(a, c, Stack::decoder)) p += a.mtp_layers * ad.parameters(c.rank);
  if (lora_targets_lm_head(a, c)) p += c.rank * (a.hidden + a.vocab);
  return p;
}

}  // namespace trainplan::model
