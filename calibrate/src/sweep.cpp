#include "sweep.hpp"

#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "trainplan/hardware/collective.hpp"

namespace trainplan::calibrate {

// The factors themselves live in one place, hardware/collective.hpp.
double bus_factor(Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce: return hardware::bus_factor(hardware::Collective::all_reduce, n);
    case Collective::kAllGather: return hardware::bus_factor(hardware::Collective::all_gather, n);
    case Collective::kReduceScatter:
      return hardware::bus_factor(hardware::Collective::reduce_scatter, n);
    case Collective::kAllToAll: return hardware::bus_factor(hardware::Collective::all_to_all, n);
    case Collective::kBroadcast: return hardware::bus_factor(hardware::Collective::broadcast, n);
    case Collective::kSendRecv: return hardware::bus_factor(hardware::Collective::send_recv, n);
  }
  return 1.0;
}

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                      double step_factor) {
  if (min_bytes < 1) throw std::invalid_argument("--min-bytes must be at least 1");
  if (max_bytes < min_bytes) {
    throw std::invalid_argument(fmt::format("--max-bytes ({}) is smaller than --min-bytes ({})",
                                            max_bytes, min_bytes));
  }
  if (!(step_factor > 1.0)) throw std::invalid_argument("--step-factor must be greater than 1");
  std::vector<std::int64_t> sizes;
  double s = static_cast<double>(min_bytes);
  while (s <= static_cast<double>(max_bytes)) {
    const auto bytes = static_cast<std::int64_t>(std::llround(s));
    if (sizes.empty() || bytes > sizes.back()) sizes.push_back(bytes);
    s *= step_factor;
  }
  return sizes;
}

std::optional<LeadingNumber> leading_number(const std::string& text) {
  LeadingNumber n;
  try {
    n.value = std::stod(text, &n.end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return n;
}

std::int64_t parse_size(const std::string& text) {
  const std::optional<LeadingNumber> number = leading_number(text);
  if (!number) throw std::invalid_argument("bad size '" + text + "' (expected e.g. 8, 64K, 32M, 4G)");
  const double value = number->value;
  std::string suffix = text.substr(number->end);
  std::int64_t unit = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") {
    unit = kKiB;
  } else if (suffix == "M" || suffix == "m" || suffix == "MiB") {
    unit = kMiB;
  } else if (suffix == "G" || suffix == "g" || suffix == "GiB") {
    unit = kGiB;
  } else if (!suffix.empty() && suffix != "B") {
    throw std::invalid_argument("bad size suffix in '" + text + "' (use K, M or G: binary units)");
  }
  const double bytes = value * static_cast<double>(unit);
  if (!(bytes >= 1.0) || bytes > 1e15) throw std::invalid_argument("size out of range: '" + text + "'");
  return static_cast<std::int64_t>(std::llround(bytes));
}

std::string format_bytes(std::int64_t bytes) {
  struct Unit {
    std::int64_t size;
    const char* name;
  };
  constexpr Unit kUnits[] = {{kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};
  for (const auto& u : kUnits) {
    if (bytes >= u.size) {
      if (bytes % u.size == 0) return fmt::format("{} {}", bytes / u.size, u.name);
      return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(u.size),
                         u.name);
    }
  }
  return fmt::format("{} B", bytes);
}

std::size_t element_size(CollDtype t) {
  switch (t) {
    case CollDtype::kFloat:
      return 4;
    case CollDtype::kBf16:
    case CollDtype::kHalf:
      return 2;
  }
  return 4;
}

std::optional<CollectiveShape> collective_shape(Collective c, std::int64_t bytes, int n,
                                                std::size_t elem_size) {
  if (n < 1 || bytes < 1 || elem_size == 0) return std::nullopt;
  const auto total = static_cast<std::size_t>(bytes) / elem_size;
  const auto ranks = static_cast<std::size_t>(n);
  CollectiveShape s;
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      s.send_count = total;
      s.recv_count = total;
      s.chunk = total;
      break;
    case Collective::kAllGather:
      s.chunk = total / ranks;
      s.send_count = s.chunk;
      s.recv_count = s.chunk * ranks;
      break;
    case Collective::kReduceScatter:
      s.chunk = total / ranks;
      s.send_count = s.chunk * ranks;
      s.recv_count = s.chunk;
      break;
    case Collective::kAllToAll:
      s.chunk = total / ranks;
      s.send_count = s.chunk * ranks;
      s.recv_count = s.chunk * ranks;
      break;
  }
  if (s.chunk == 0) return std::nullopt;
  const std::size_t moved = std::max(s.send_count, s.recv_count);
  s.bytes = static_cast<std::int64_t>(moved * elem_size);
  return s;
}

ModelShapes parse_model_shapes(const std::string& text) {
  std::vector<std::int64_t> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t pos = 0;
    long long x = 0;
    try {
      x = std::stoll(item, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != item.size() || x < 1) {
      throw std::invalid_argument("--model-shapes: '" + item +
                                  "' is not a positive integer (expected h,I,heads,kv_heads,"
                                  "vocab,tokens)");
    }
    v.push_back(x);
  }
  if (v.size() != 6) {
    throw std::invalid_argument("--model-shapes takes 6 numbers h,I,heads,kv_heads,vocab,tokens; got '" +
                                text + "'");
  }
  ModelShapes s{v[0], v[1], v[2], v[3], v[4], v[5]};
  if (s.hidden % s.heads != 0) {
    throw std::invalid_argument(fmt::format("--model-shapes: heads ({}) does not divide h ({})",
                                            s.heads, s.hidden));
  }
  if (s.heads % s.kv_heads != 0) {
    throw std::invalid_argument(fmt::format(
        "--model-shapes: kv_heads ({}) does not divide heads ({})", s.kv_heads, s.heads));
  }
  return s;
}

std::vector<GemmShape> model_gemm_shapes(const ModelShapes& s, int tp) {
  if (tp < 1) throw std::invalid_argument("--tp must be at least 1");
  const std::int64_t t = tp;
  const std::int64_t d = s.hidden / s.heads;
  const auto need = [&](std::int64_t value, const char* what) {
    if (value % t != 0) {
      throw std::invalid_argument(fmt::format("--tp {} does not divide {} ({})", tp, what, value));
    }
    return value / t;
  };
  const std::int64_t q_heads = need(s.heads, "heads");
  // Megatron replicates KV heads when tp > kv_heads; each rank then holds one.
  const std::int64_t kv_local = s.kv_heads >= t ? need(s.kv_heads, "kv_heads") : 1;
  const std::int64_t ffn = need(s.intermediate, "the intermediate size");
  // Vocabulary padded to a multiple of 128 * tp, as Megatron-LM does (--make-vocab-size-divisible-by).
  const std::int64_t pad = 128 * t;
  const std::int64_t vocab = (s.vocab + pad - 1) / pad * pad / t;
  const std::int64_t T = s.tokens;
  return {
      {T, (q_heads + 2 * kv_local) * d, s.hidden, GemmLabel::kQkv},
      {T, s.hidden, q_heads * d, GemmLabel::kOut},
      {T, 2 * ffn, s.hidden, GemmLabel::kMlpUp},
      {T, s.hidden, ffn, GemmLabel::kMlpDown},
      {T, vocab, s.hidden, GemmLabel::kLmHead},
  };
}

std::vector<GemmShape> generic_gemm_shapes(bool quick) {
  std::vector<GemmShape> shapes;
  const std::vector<std::int64_t> square =
      quick ? std::vector<std::int64_t>{4096, 8192}
            : std::vector<std::int64_t>{1024, 2048, 4096, 8192, 16384};
  for (const auto n : square) shapes.push_back({n, n, n, GemmLabel::kSquare});
  if (!quick) {
    // Small M (short micro-batches, decode-like) and small K (LoRA-like) at a wide N.
    for (const std::int64_t m : {16, 64, 256, 1024}) {
      shapes.push_back({m, 8192, 8192, GemmLabel::kSkinny});
    }
    for (const std::int64_t k : {64, 256, 1024}) {
      shapes.push_back({8192, 8192, k, GemmLabel::kSkinny});
    }
  }
  return shapes;
}

double gemm_flops(const GemmShape& g) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
}

std::vector<AttentionShape> attention_shapes(bool quick) {
  // Tokens per step held constant (batch * seq = 16384), as a training run would.
  constexpr std::int64_t kTokens = 16384;
  struct Heads {
    std::int64_t heads, kv_heads, head_dim;
  };
  const std::vector<std::int64_t> seqs = quick ? std::vector<std::int64_t>{2048, 8192}
                                               : std::vector<std::int64_t>{1024, 2048, 4096,
                                                                           8192, 16384};
  const std::vector<Heads> heads = quick ? std::vector<Heads>{{32, 8, 128}}
                                         : std::vector<Heads>{{32, 8, 128}, {32, 32, 128},
                                                              {16, 16, 64}};
  std::vector<AttentionShape> shapes;
  for (const auto& h : heads) {
    for (const auto s : seqs) {
      for (const bool causal : {true, false}) {
        shapes.push_back({std::max<std::int64_t>(1, kTokens / s), h.heads, h.kv_heads, h.head_dim,
                          s, causal});
      }
    }
  }
  return shapes;
}

double attention_flops(const AttentionShape& a, AttentionPass pass) {
  const double s = static_cast<double>(a.seq);
  double fwd = 4.0 * static_cast<double>(a.batch) * static_cast<double>(a.heads) * s * s *
               static_cast<double>(a.head_dim);
  if (a.causal) fwd *= 0.5;
  switch (pass) {
    case AttentionPass::kFwd:
      return fwd;
    case AttentionPass::kBwd:
      return 2.5 * fwd;
  }
  return fwd;
}

std::vector<std::int64_t> optimizer_param_counts(bool quick) {
  if (quick) return {100'000'000};
  return {100'000'000, 1'000'000'000};
}

std::vector<std::int64_t> optimizer_tensor_sizes(std::int64_t params, std::int64_t tensor_params) {
  if (params < 1 || tensor_params < 1) {
    throw std::invalid_argument(
        fmt::format("optimizer sweep: {} parameters in tensors of {} (both must be at least 1)",
                    params, tensor_params));
  }
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(params / tensor_params), tensor_params);
  if (params % tensor_params != 0) sizes.push_back(params % tensor_params);
  return sizes;
}

OptimizerDtypes optimizer_dtypes(OptimizerPrecision p) {
  switch (p) {
    case OptimizerPrecision::kFp32Master:
      return {"fp32", "bf16", "fp32"};
    case OptimizerPrecision::kBf16:
      return {"bf16", "bf16", "bf16"};
  }
  return {"?", "?", "?"};
}

std::int64_t adamw_bytes_per_param(OptimizerPrecision p) {
  struct Sizes {
    std::int64_t param, grad, state;
  };
  Sizes s{4, 2, 4};
  switch (p) {
    case OptimizerPrecision::kFp32Master:
      s = {4, 2, 4};
      break;
    case OptimizerPrecision::kBf16:
      s = {2, 2, 2};
      break;
  }
  return 2 * s.param + s.grad + 4 * s.state;
}

std::vector<std::int64_t> elementwise_sizes(bool quick) {
  if (quick) return {16 * kMiB, 64 * kMiB};
  return {4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB};
}

ElementwiseDtypes elementwise_dtypes(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::kCopy:
    case ElementwiseOp::kAdd:
    case ElementwiseOp::kRmsNorm:
      return {"bf16", "bf16"};
    case ElementwiseOp::kCast:
      return {"fp32", "bf16"};
  }
  return {"?", "?"};
}

std::int64_t elementwise_bytes(ElementwiseOp op, std::int64_t elements) {
  switch (op) {
    case ElementwiseOp::kCopy:
      return 4 * elements;
    case ElementwiseOp::kCast:
    case ElementwiseOp::kAdd:
      return 6 * elements;
    case ElementwiseOp::kRmsNorm:
      return 4 * elements + 2 * kRmsNormWidth;
  }
  return 0;
}

std::vector<std::int64_t> launch_gemm_sizes() { return {64, 256, 1024}; }

}  // namespace trainplan::calibrate
