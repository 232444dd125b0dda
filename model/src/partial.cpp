#include "trainplan/model/partial.hpp"

#include <charconv>
#include <vector>

#include "trainplan/core/enum_table.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/model/block_ops.hpp"
#include "trainplan/model/parameters.hpp"

namespace trainplan::model {
namespace {

constexpr std::uint32_t kAllRoles = kAttentionRoles | kMlpRoles;

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

bool trains_weight(const Training& tr, Role r) {
  if (tr.method != Method::full) return false;
  if (!tr.partial.active) return true;
  return tr.layer == LayerState::trained && (tr.partial.roles & role_bit(r)) != 0;
}

std::int64_t first_backward_layer(const Architecture& a, const Training& tr) {
  if (!trains_subset(tr) || tr.partial.embedding) return 0;
  // Gradient checkpointing of a Hugging Face model makes the embedding's output require a
  // gradient (transformers 5 modeling_utils.py gradient_checkpointing_enable: needs_embedding_grads
  // -> enable_input_require_grads; LLaMA-Factory calls it under checkpointing with any release),
  // so every layer passes a gradient down and is replayed.
  if (recomputes_blocks(tr.checkpointing) && tr.framework != Framework::megatron) return 0;
  for (std::int64_t i = 0; i < a.layers; ++i)
    if (trains_layer(tr.partial, i)) return i;
  return a.layers;
}

bool entry_layer(const Architecture& a, const Training& tr, std::int64_t layer) {
  if (!trains_subset(tr) || tr.partial.embedding || layer != first_backward_layer(a, tr)) return false;
  return !(recomputes_blocks(tr.checkpointing) && tr.framework != Framework::megatron);
}

LayerState layer_state(const Architecture& a, const Training& tr, std::int64_t layer) {
  if (!trains_subset(tr)) return LayerState::trained;
  if (trains_layer(tr.partial, layer)) return LayerState::trained;
  return layer >= first_backward_layer(a, tr) ? LayerState::frozen : LayerState::no_backward;
}

SubsetParameters subset_parameters(const Architecture& a, const Training& tr, std::int64_t from, std::int64_t to,
                                   bool embedding, bool head) {
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
  const ParameterCounts n = count_parameters(a);
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
                       "': an empty term (terms: layers N or A-B, embedding, head, all, attention, mlp, norms, "
                       "or roles q, k, v, o, gate, up, down, router)");
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
                       "' (terms: layers N or A-B, embedding, head, all, attention, mlp, norms, or roles q, k, v, "
                       "o, gate, up, down, router)");
    }
  }
  if (!any_part) part(kAllRoles, true);
  if (s.layers.none() && !s.embedding && !s.head)
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
  if (s.layers.any()) {
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

void check_trained_subset(const Architecture& a, const TrainedSubset& s, std::string_view what) {
  if (!s.active) return;
  if (a.encoder_decoder)
    throw InputError(std::string(what) + " '" + trained_subset_text(s) + "': partial fine-tuning of " + a.name +
                     ", an encoder-decoder model, is not modelled (decoder-only models only)");
  for (std::size_t i = static_cast<std::size_t>(std::max<std::int64_t>(a.layers, 0)); i < TrainedSubset::kMaxLayers; ++i)
    if (s.layers.test(i))
      throw InputError(std::string(what) + " '" + trained_subset_text(s) + "': layer " + std::to_string(i) + " of " +
                       a.name + ", which has " + std::to_string(a.layers) + " layers (0-" +
                       std::to_string(a.layers - 1) + ")");
}

}  // namespace trainplan::model
