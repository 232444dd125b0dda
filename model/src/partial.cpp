#include "trainplan/model/partial.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan::model {
namespace {

constexpr std::uint32_t kAllRoles = kAttentionRoles | kMlpRoles;
constexpr std::string_view kTerms =
    "terms: layers N, A-B, last:N, first:N or spread:N, embedding, head, all, attention, mlp, norms, roles q, k, "
    "v, o, gate, up, down, router, or match:PATTERN";

bool trains_layer(const TrainedSubset& s, std::int64_t layer) {
  return layer >= 0 && static_cast<std::size_t>(layer) < TrainedSubset::kMaxLayers &&
         s.layers.test(static_cast<std::size_t>(layer));
}

std::int64_t to_int(std::string_view t, std::string_view what, std::string_view spec) {
  std::int64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size() || v < 0)
    throw InputError(std::string(what) + " '" + std::string(spec) + "': '" + std::string(t) +
                     "' is not a layer index (0-based, e.g. 24 or 24-31)");
  return v;
}

}  // namespace

bool checkpointed_layer(const Training& tr) {
  return tr.layer_checkpointed && !(trains_subset(tr) && tr.checkpoint_trained_only && tr.layer != LayerState::trained);
}

bool picks_some_blocks(const Training& tr) {
  return tr.checkpointing == Checkpointing::full && (tr.checkpoint_every > 1 || tr.checkpoint_layers > 0);
}

namespace {
// The decoder's blocks in one of `chunks` equal pipeline chunks (the last may hold fewer).
std::int64_t blocks_per_chunk(const Architecture& a, std::int64_t chunks) {
  return std::max<std::int64_t>(1, (a.layers + chunks - 1) / chunks);
}
std::int64_t stages(const Training& tr) { return std::max(1, tr.pp); }
std::int64_t virtual_chunks(const Training& tr) { return stages(tr) * std::max(1, tr.pp_virtual); }
}  // namespace

bool checkpoint_picks(const Architecture& a, const Training& tr, std::int64_t layer) {
  if (!picks_some_blocks(tr)) return true;
  if (tr.checkpoint_layers > 0)  // the first K of each (virtual) pipeline chunk
    return layer % blocks_per_chunk(a, virtual_chunks(tr)) < tr.checkpoint_layers;
  return (layer % blocks_per_chunk(a, stages(tr)) + 1) % tr.checkpoint_every == 0;
}

SomeBlocksOffer some_blocks_offer(const Architecture& a, const Training& tr) {
  if (a.encoder_decoder) return {};
  if (tr.framework == Framework::megatron) return {SomeBlocks::first_layers, blocks_per_chunk(a, virtual_chunks(tr))};
  if (tr.library == Library::torchtitan) return {SomeBlocks::one_in_n, blocks_per_chunk(a, stages(tr))};
  return {};
}

CheckpointGroups checkpoint_groups(const Architecture& a, const Training& tr) {
  if (tr.checkpointing != Checkpointing::full || tr.checkpoint_group <= 1 || picks_some_blocks(tr)) return {};
  const std::int64_t per_chunk = blocks_per_chunk(a, virtual_chunks(tr));
  const std::int64_t groups = (per_chunk + tr.checkpoint_group - 1) / tr.checkpoint_group;
  return {static_cast<double>(groups) / static_cast<double>(per_chunk),
          static_cast<double>(std::min(tr.checkpoint_group, per_chunk))};
}

std::string checkpointing_text(const Training& tr) {
  std::string s(to_string(tr.checkpointing));
  if (tr.checkpointing == Checkpointing::full && tr.checkpoint_layers > 0)
    s += " (first " + std::to_string(tr.checkpoint_layers) + " blocks of each stage)";
  else if (tr.checkpointing == Checkpointing::full && tr.checkpoint_every > 1)
    s += " (1 block in " + std::to_string(tr.checkpoint_every) + ")";
  else if (tr.checkpointing == Checkpointing::full && tr.checkpoint_group > 1)
    s += " (groups of " + std::to_string(tr.checkpoint_group) + " blocks)";
  return s;
}

double checkpoint_picked_share(const Architecture& a, const Training& tr) {
  if (!picks_some_blocks(tr) || a.layers <= 0) return 1.0;
  std::int64_t picked = 0;
  for (std::int64_t i = 0; i < a.layers; ++i) picked += checkpoint_picks(a, tr, i) ? 1 : 0;
  return static_cast<double>(picked) / static_cast<double>(a.layers);
}

bool trains_weight(const Training& tr, Role r) {
  if (tr.method != Method::full) return false;
  if (!tr.partial.active) return true;
  return tr.layer == LayerState::trained && (tr.partial.roles & role_bit(r)) != 0;
}

std::int64_t first_backward_layer(const Architecture& a, const Training& tr) {
  if (!trains_subset(tr) || tr.partial.embedding) return 0;
  // transformers' gradient checkpointing makes the embedding's output require a gradient
  // (transformers 5 modeling_utils.py gradient_checkpointing_enable: needs_embedding_grads ->
  // enable_input_require_grads), so every layer passes a gradient down and is replayed;
  // LLaMA-Factory's own checkpointing (checkpoint_trained_only) does not.
  if (recomputes_blocks(tr.checkpointing) && tr.framework != Framework::megatron && !tr.checkpoint_trained_only)
    return 0;
  for (std::int64_t i = 0; i < a.layers; ++i)
    if (trains_layer(tr.partial, i)) return i;
  return a.layers;
}

bool entry_layer(const Architecture& a, const Training& tr, std::int64_t layer) {
  if (!trains_subset(tr) || tr.partial.embedding || layer != first_backward_layer(a, tr)) return false;
  // Checkpointed, its input is made to require a gradient (transformers' enable_input_require_grads,
  // LLaMA-Factory's requires_grad_ on the checkpointed layer's input).
  return !(recomputes_blocks(tr.checkpointing) && tr.framework != Framework::megatron);
}

namespace {
bool trains_any(const Training& tr, std::uint32_t roles) { return (tr.partial.roles & roles) != 0; }
constexpr std::uint32_t kQkvRoles = role_bit(Role::q) | role_bit(Role::k) | role_bit(Role::v) | role_bit(Role::q_a) |
                                    role_bit(Role::kv_a) | role_bit(Role::kv_b);
}  // namespace

bool entry_attention_backward(const Training& tr) { return trains_any(tr, kQkvRoles); }

bool entry_input_gradient(const Training& tr, Role r) {
  const bool attention = trains_any(tr, kAttentionRoles);
  switch (r) {
    case Role::q: case Role::k: case Role::v: case Role::q_a: case Role::kv_a: return false;
    case Role::kv_b: case Role::o: return entry_attention_backward(tr);
    case Role::gate: case Role::up: case Role::router: return attention;
    case Role::down: return attention || trains_any(tr, role_bit(Role::gate) | role_bit(Role::up) | role_bit(Role::router));
    case Role::lm_head: return true;
  }
  return true;
}

LayerState layer_state(const Architecture& a, const Training& tr, std::int64_t layer) {
  if (!trains_subset(tr)) return LayerState::trained;
  if (trains_layer(tr.partial, layer)) return LayerState::trained;
  return layer >= first_backward_layer(a, tr) ? LayerState::frozen : LayerState::no_backward;
}

SubsetParameters subset_parameters(const Architecture& a, const ParameterCounts& n, const Training& tr,
                                   std::int64_t from, std::int64_t to, bool embedding, bool head) {
  const TrainedSubset& s = tr.partial;
  SubsetParameters out;
  // The two kinds of layer that differ in parameters (an MoE model's expert and dense layers).
  struct Kind {
    double all = 0.0;
    double experts = 0.0;
    double tensors = 0.0;
  };
  const auto kind_of = [&](const Architecture& k) {
    Kind out_k;
    for (const Linear& l : block_linears(k, Stack::decoder)) {
      if ((s.roles & role_bit(l.role)) == 0) continue;
      out_k.all += static_cast<double>(l.parameters());
      if (l.copies > 1) out_k.experts += static_cast<double>(l.parameters());
      out_k.tensors += static_cast<double>(l.copies) * (l.bias ? 2.0 : 1.0);
    }
    if (s.norms) {
      const double norm_tensors = a.norm == NormKind::layernorm ? 2.0 : 1.0;
      out_k.all += static_cast<double>(block_parameters(k, Stack::decoder));
      for (const Linear& l : block_linears(k, Stack::decoder)) out_k.all -= static_cast<double>(l.parameters());
      out_k.tensors += norm_tensors * static_cast<double>(a.norms_per_layer);
    }
    return out_k;
  };
  const Kind expert_kind = kind_of(a);
  const Kind dense_kind = a.dense_layers() > 0 ? kind_of(dense_variant(a)) : expert_kind;
  for (std::int64_t i = std::max<std::int64_t>(0, from); i < std::min(to, a.layers); ++i) {
    if (!trains_layer(s, i)) continue;
    const Kind& k = a.dense_layer(i) ? dense_kind : expert_kind;
    out.all += k.all;
    out.experts += k.experts;
    out.tensors += k.tensors;
  }
  // A tied head is the embedding's weight: it trains with either.
  const bool tied_trains = a.tie_embeddings && (s.embedding || s.head);
  if (embedding && (s.embedding || tied_trains)) {
    out.all += static_cast<double>(n.embedding);
    out.tensors += 1.0;
  }
  if (head && s.head && !a.tie_embeddings) {
    out.all += static_cast<double>(n.lm_head);
    out.tensors += 1.0;
  }
  return out;
}

TrainedSubset parse_trained_subset(std::string_view text, std::string_view what) {
  TrainedSubset s;
  s.active = true;
  bool any_part = false;
  const auto part = [&](std::uint32_t roles, bool norms) {
    s.roles |= roles;
    s.norms = s.norms || norms;
    any_part = true;
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    std::string_view term = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
    while (!term.empty() && term.back() == ' ') term.remove_suffix(1);
    if (term.empty())
      throw InputError(std::string(what) + " '" + std::string(text) +
                       "': an empty term (" + std::string(kTerms) + ")");
    if (term == "embedding") {
      s.embedding = true;
    } else if (term == "head") {
      s.head = true;
    } else if (term == "all") {
      part(kAllRoles, true);
    } else if (term == "attention") {
      part(kAttentionRoles, false);
    } else if (term == "mlp") {
      part(kMlpRoles, false);
    } else if (term == "norms") {
      part(0, true);
    } else if (const std::size_t colon = term.find(':'); colon != std::string_view::npos) {
      const std::string_view kind = term.substr(0, colon);
      const std::int64_t n = to_int(term.substr(colon + 1), what, text);
      if (n < 1 || n >= static_cast<std::int64_t>(TrainedSubset::kMaxLayers) ||
          (kind != "last" && kind != "first" && kind != "spread"))
        throw InputError(std::string(what) + " '" + std::string(text) + "': '" + std::string(term) +
                         "' is not last:N, first:N or spread:N with N from 1 to " +
                         std::to_string(TrainedSubset::kMaxLayers - 1));
      (kind == "last" ? s.last : kind == "first" ? s.first : s.spread) = static_cast<std::int32_t>(n);
    } else if (term.front() >= '0' && term.front() <= '9') {
      const std::size_t dash = term.find('-');
      const std::int64_t lo = to_int(term.substr(0, dash), what, text);
      const std::int64_t hi = dash == std::string_view::npos ? lo : to_int(term.substr(dash + 1), what, text);
      if (hi < lo)
        throw InputError(std::string(what) + " '" + std::string(text) + "': the range '" + std::string(term) +
                         "' ends before it starts");
      if (hi >= static_cast<std::int64_t>(TrainedSubset::kMaxLayers))
        throw InputError(std::string(what) + " '" + std::string(text) + "': layer " + std::to_string(hi) +
                         " is beyond the " + std::to_string(TrainedSubset::kMaxLayers) +
                         " layers partial fine-tuning can name");
      for (std::int64_t i = lo; i <= hi; ++i) s.layers.set(static_cast<std::size_t>(i));
    } else if (const auto r = try_parse<Role>(term); r && *r != Role::lm_head) {
      part(role_bit(*r), false);
    } else {
      throw InputError(std::string(what) + " '" + std::string(text) + "': unknown term '" + std::string(term) +
                       "' (" + std::string(kTerms) + ")");
    }
  }
  if (!any_part) part(kAllRoles, true);
  if (s.layers.none() && s.last == 0 && s.first == 0 && s.spread == 0 && !s.embedding && !s.head)
    throw InputError(std::string(what) + " '" + std::string(text) +
                     "': names nothing to train (give layers, embedding or head)");
  return s;
}

std::string trained_subset_text(const TrainedSubset& s) {
  std::string out;
  const auto add = [&](const std::string& t) { out += (out.empty() ? "" : ",") + t; };
  for (std::size_t i = 0; i < TrainedSubset::kMaxLayers; ++i) {
    if (!s.layers.test(i) || (i > 0 && s.layers.test(i - 1))) continue;
    std::size_t j = i;
    while (j + 1 < TrainedSubset::kMaxLayers && s.layers.test(j + 1)) ++j;
    add(j == i ? std::to_string(i) : std::to_string(i) + "-" + std::to_string(j));
  }
  if (s.first > 0) add("first:" + std::to_string(s.first));
  if (s.last > 0) add("last:" + std::to_string(s.last));
  if (s.spread > 0) add("spread:" + std::to_string(s.spread));
  if (s.layers.any() || s.first > 0 || s.last > 0 || s.spread > 0) {
    if (s.roles != kAllRoles || !s.norms) {  // all of a layer, the default, goes unsaid
      if ((s.roles & kAttentionRoles) == kAttentionRoles) add("attention");
      if ((s.roles & kMlpRoles) == kMlpRoles) add("mlp");
      for (const auto& [r, name] : EnumTable<Role>::kEntries) {
        const std::uint32_t bit = role_bit(r);
        const bool grouped = ((s.roles & kAttentionRoles) == kAttentionRoles && (bit & kAttentionRoles)) ||
                             ((s.roles & kMlpRoles) == kMlpRoles && (bit & kMlpRoles));
        if ((s.roles & bit) && !grouped) add(std::string(name));
      }
      if (s.norms) add("norms");
    }
  }
  if (s.embedding) add("embedding");
  if (s.head) add("head");
  return out;
}

TrainedSubset resolve_trained_subset(const Architecture& a, TrainedSubset s, std::string_view what) {
  if (!s.active || (s.first == 0 && s.last == 0 && s.spread == 0)) return s;
  const std::int64_t L = a.layers;
  const auto fail = [&](const std::string& why) {
    throw InputError(std::string(what) + " '" + trained_subset_text(s) + "': " + why + " (" + a.name + " has " +
                     std::to_string(L) + " layers)");
  };
  if (std::max({s.first, s.last, s.spread}) > L) fail("names more layers than the model has");
  if (s.spread > 0 && L % s.spread != 0) fail("spread:" + std::to_string(s.spread) + " must divide the layers");
  const auto set = [&](std::int64_t i) {
    if (i >= 0 && i < static_cast<std::int64_t>(TrainedSubset::kMaxLayers)) s.layers.set(static_cast<std::size_t>(i));
  };
  for (std::int64_t i = 0; i < s.first; ++i) set(i);
  for (std::int64_t i = L - s.last; i < L; ++i) set(i);
  // LLaMA-Factory _setup_freeze_tuning: stride = L / N, layers stride-1, 2 stride-1, ...
  if (s.spread > 0)
    for (std::int64_t stride = L / s.spread, i = stride - 1; i < L; i += stride) set(i);
  s.first = s.last = s.spread = 0;
  return s;
}

void check_trained_subset(const Architecture& a, const TrainedSubset& s, std::string_view what) {
  if (!s.active) return;
  if (s.first > 0 || s.last > 0 || s.spread > 0)
    throw InputError(std::string(what) + " '" + trained_subset_text(s) +
                     "': layers named relative to the model are resolved against it first");
  if (a.encoder_decoder)
    throw InputError(std::string(what) + " '" + trained_subset_text(s) + "': partial fine-tuning of " + a.name +
                     ", an encoder-decoder model, is not modelled (decoder-only models only)");
  for (std::size_t i = static_cast<std::size_t>(std::max<std::int64_t>(a.layers, 0)); i < TrainedSubset::kMaxLayers; ++i)
    if (s.layers.test(i))
      throw InputError(std::string(what) + " '" + trained_subset_text(s) + "': layer " + std::to_string(i) + " of " +
                       a.name + ", which has " + std::to_string(a.layers) + " layers (0-" +
                       std::to_string(a.layers - 1) + ")");
}


std::vector<ParameterName> hf_parameter_names(const Architecture& a, int transformers) {
  using K = ParameterName::Kind;
  static constexpr std::array<std::string_view, 10> kLlamaLayout{
      "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "olmo2"};
  std::vector<ParameterName> out;
  if (std::find(kLlamaLayout.begin(), kLlamaLayout.end(), a.family) == kLlamaLayout.end()) return out;
  out.push_back({"model.embed_tokens.weight", K::embedding, -1, 0});
  const bool v5 = transformers >= 500;
  const std::string moe = !v5 && a.family == "mixtral" ? "block_sparse_moe" : "mlp";
  for (std::int64_t i = 0; i < a.layers; ++i) {
    const std::string at = "model.layers." + std::to_string(i) + ".";
    const Architecture kind = a.dense_layer(i) ? dense_variant(a) : a;
    bool fused_done = false;
    for (const Linear& l : block_linears(kind, Stack::decoder)) {
      const std::uint32_t bit = role_bit(l.role);
      if (kAttentionRoles & bit) {
        out.push_back({at + "self_attn." + l.hf_name + ".weight", K::linear, i, bit});
      } else if (l.role == Role::router) {
        out.push_back({at + moe + ".gate.weight", K::linear, i, bit});
      } else if (l.copies <= 1) {
        out.push_back({at + "mlp." + l.hf_name + ".weight", K::linear, i, bit});
      } else if (v5) {  // fused experts: gate_up_proj and down_proj, 3-D
        if (l.role == Role::down) {
          out.push_back({at + "mlp.experts.down_proj", K::linear, i, bit});
        } else if (!fused_done) {
          out.push_back({at + "mlp.experts.gate_up_proj", K::linear, i, role_bit(Role::gate) | role_bit(Role::up)});
          fused_done = true;
        }
      } else {
        for (std::int64_t e = 0; e < l.copies; ++e)
          out.push_back({at + moe + ".experts." + std::to_string(e) + "." + l.hf_name + ".weight", K::linear, i, bit});
      }
    }
    out.push_back({at + "input_layernorm.weight", K::norm, i, 0});
    out.push_back({at + "post_attention_layernorm.weight", K::norm, i, 0});
  }
  out.push_back({"model.norm.weight", K::final_norm, -1, 0});
  if (!a.tie_embeddings) out.push_back({"lm_head.weight", K::head, -1, 0});
  return out;
}

}  // namespace trainplan::model
