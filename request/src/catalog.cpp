#include "trainplan/request/catalog.hpp"
#include "trainplan/request/cluster_shape.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "trainplan/core/checked.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/embedded.hpp"
#include "trainplan/request/files.hpp"
#include "trainplan/request/hf_config.hpp"

namespace trainplan::request {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

bool same(const std::string& a, const std::string& b) { return lower(a) == lower(b); }

// Bounds on what a cluster may say: far beyond any machine, small enough that products stay in int.
constexpr std::int64_t kMaxCount = kMaxClusterGpus;  // nodes, GPUs per node, GPUs in all
constexpr std::int64_t kMaxLinks = 1'024;        // NICs per node
constexpr double kMaxLinkGbps = 100'000;         // one NIC; today's fastest are 800 Gb/s
constexpr std::size_t kMaxNameLength = 4'096;    // a model name, Hugging Face id or path (PATH_MAX)
constexpr double kMaxHostGiB = 1'048'576;         // CPU memory of one node: 1 PiB

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> string_list(ObjectReader& r, const std::string& key) {
  std::vector<std::string> out;
  if (!r.has(key)) {
    r.ignore({key});
    return out;
  }
  const Json& v = r.raw(key);
  if (!v.is_array()) throw InputError(r.what() + ": key '" + key + "' must be a list of strings");
  for (const auto& e : v) {
    if (!e.is_string()) throw InputError(r.what() + ": key '" + key + "' must be a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

CatalogModel parse_model(const Json& j, const std::string& what) {
  ObjectReader r(j, what);
  CatalogModel m;
  m.name = r.string("name");
  m.hf_id = r.optional_string("hf_id");
  m.aliases = string_list(r, "aliases");
  m.parameters = r.optional_integer("parameters", 1);
  m.parameters_source = r.optional_string("parameters_source").value_or("");
  m.source = r.string("source");
  m.arch = architecture_from_hf_config(r.raw("config"), m.name, what + " (config)");
  r.reject_unknown();
  return m;
}

hardware::InterNodeLink parse_inter_node_json(const Json& j, const std::string& what) {
  ObjectReader r(j, what);
  hardware::InterNodeLink l;
  l.links_per_node = static_cast<int>(r.integer("links_per_node", 1, kMaxLinks));
  l.link_Gbps = r.number("link_Gbps");
  if (!(l.link_Gbps > 0 && l.link_Gbps <= kMaxLinkGbps))
    throw InputError(what + ": key 'link_Gbps' must be a rate above 0 and at most " +
                     std::to_string(static_cast<int>(kMaxLinkGbps)) + " Gb/s (got " + std::to_string(l.link_Gbps) + ")");
  l.fabric = r.string("fabric");
  r.reject_unknown();
  return l;
}

template <class E>
std::vector<E> enum_list(ObjectReader& r, const std::string& key) {
  std::vector<E> out;
  for (const std::string& v : string_list(r, key)) out.push_back(r.enumeration_of<E>(key, v));
  return out;
}

// Every key is required: a GPU file that left one out would get a silent default.
hardware::GpuCapabilities parse_capabilities(const Json& j, const std::string& what) {
  static const std::regex kCapability(R"(^(\d+\.\d+|gfx[0-9a-f]+)$)");
  ObjectReader r(j, what);
  if (!r.has("tensor_core_dtypes") || !r.has("flash_attention"))
    throw InputError(what + ": keys 'tensor_core_dtypes' and 'flash_attention' are required "
                            "(lists; [] for none)");
  hardware::GpuCapabilities k;
  k.compute_capability = r.string("compute_capability");
  if (!std::regex_match(k.compute_capability, kCapability))
    throw InputError(what + ": key 'compute_capability' must be NVIDIA's major.minor (\"8.0\") or "
                            "an AMD LLVM target (\"gfx942\"), not '" + k.compute_capability + "'");
  k.tensor_core_dtypes = enum_list<hardware::TensorCoreDtype>(r, "tensor_core_dtypes");
  k.bf16 = r.boolean("bf16");
  k.fp8 = r.boolean("fp8");
  k.flash_attention = enum_list<hardware::FlashAttentionGen>(r, "flash_attention");
  if (k.bf16 != k.has(hardware::TensorCoreDtype::bf16))
    throw InputError(what + ": key 'bf16' disagrees with 'tensor_core_dtypes'");
  if (k.fp8 != k.has(hardware::TensorCoreDtype::fp8))
    throw InputError(what + ": key 'fp8' disagrees with 'tensor_core_dtypes'");
  r.reject_unknown();
  return k;
}

CatalogGpu parse_gpu(const Json& j, const std::string& what) {
  ObjectReader r(j, what);
  CatalogGpu g;
  hardware::GpuSpec& s = g.spec;
  s.name = r.string("name");
  g.aliases = string_list(r, "aliases");
  s.vendor = r.string("vendor");
  s.architecture = r.string("architecture");
  s.form_factor = r.optional_string("form_factor").value_or("");
  s.memory = mib(static_cast<double>(r.integer("memory_MiB", 1)));
  s.usable_memory = gib(r.number("usable_memory_GiB"));
  if (s.usable_memory > s.memory * 1.001 || s.usable_memory.value() <= 0)  // 2-decimal GiB rounding
    throw InputError(what + ": key 'usable_memory_GiB' must be positive and at most memory_MiB");
  {
    ObjectReader p(r.raw("peak_dense_TFLOPS"), what + " peak_dense_TFLOPS");
    s.peak.fp32 = p.optional_number("fp32").value_or(0);
    s.peak.tf32 = p.optional_number("tf32").value_or(0);
    s.peak.fp16 = p.optional_number("fp16").value_or(0);
    s.peak.bf16 = p.optional_number("bf16").value_or(0);
    s.peak.fp8 = p.optional_number("fp8").value_or(0);
    s.peak.int8 = p.optional_number("int8").value_or(0);
    p.reject_unknown();
  }
  s.hbm_bandwidth = gbps(r.number("hbm_bandwidth_GBps"));
  if (!(s.hbm_bandwidth.value() > 0.0) || !(s.peak.fp32 > 0.0))
    throw InputError(what + ": keys 'hbm_bandwidth_GBps' and 'peak_dense_TFLOPS.fp32' must be positive");
  s.sm_count = static_cast<int>(r.optional_integer("sm_count", 1, std::numeric_limits<int>::max()).value_or(0));
  {
    ObjectReader in(r.raw("intra_node"), what + " intra_node");
    s.intra_node.link = in.string("link");
    s.intra_node.topology = parse_enum<hardware::IntraTopology>(in.string("topology"));
    s.intra_node.bandwidth = gbps(in.number("bandwidth_GBps"));
    if (!(s.intra_node.bandwidth.value() > 0.0))
      throw InputError(what + " intra_node: key 'bandwidth_GBps' must be positive");
    in.reject_unknown();
  }
  {
    ObjectReader pc(r.raw("pcie"), what + " pcie");
    pc.ignore({"generation"});
    s.pcie_bandwidth = gbps(pc.number("bandwidth_GBps"));
    if (!(s.pcie_bandwidth.value() > 0.0)) throw InputError(what + " pcie: key 'bandwidth_GBps' must be positive");
    pc.reject_unknown();
  }
  if (r.has("host_link")) {
    ObjectReader hl(r.raw("host_link"), what + " host_link");
    hl.ignore({"link"});
    s.host_bandwidth = gbps(hl.number("bandwidth_GBps"));
    if (!(s.host_bandwidth.value() > 0.0)) throw InputError(what + " host_link: key 'bandwidth_GBps' must be positive");
    hl.reject_unknown();
  }
  s.default_gpus_per_node = static_cast<int>(r.integer("default_gpus_per_node", 1, kMaxCount));
  s.nvlink_domain_gpus = static_cast<int>(r.optional_integer("nvlink_domain_gpus", 1, kMaxCount).value_or(0));
  if (s.nvlink_domain_gpus > 0 && s.nvlink_domain_gpus % s.default_gpus_per_node != 0)
    throw InputError(what + ": key 'nvlink_domain_gpus' " + std::to_string(s.nvlink_domain_gpus) +
                     " is not a whole number of nodes of " + std::to_string(s.default_gpus_per_node) +
                     " (default_gpus_per_node)");
  s.default_inter_node = parse_inter_node_json(r.raw("default_inter_node"), what + " default_inter_node");
  s.capabilities = parse_capabilities(r.raw("capabilities"), what + " capabilities");
  // The 16-bit tensor-core dtypes it lists have a peak (the training dtypes; others may be unknown).
  const std::pair<hardware::TensorCoreDtype, double> peaks[] = {{hardware::TensorCoreDtype::fp16, s.peak.fp16},
                                                                {hardware::TensorCoreDtype::bf16, s.peak.bf16}};
  for (const auto& [dtype, peak] : peaks)
    if (s.capabilities.has(dtype) && !(peak > 0.0))
      throw InputError(what + ": capabilities list " + std::string(to_string(dtype)) +
                       " tensor cores but peak_dense_TFLOPS." + std::string(to_string(dtype)) + " is not positive");
  const Json& src = r.raw("sources");
  if (!src.is_object()) throw InputError(what + ": key 'sources' must be an object");
  if (!src.contains("capabilities") || !src["capabilities"].is_string())
    throw InputError(what + ": key 'sources' must cite the capabilities ('capabilities': text)");
  for (const auto& [k, v] : src.items())
    if (v.is_string()) g.source += (g.source.empty() ? "" : "; ") + k + ": " + v.get<std::string>();
  r.reject_unknown();
  return g;
}

std::vector<std::pair<std::string, std::string>> parse_alias_table(const Json& j, const std::string& what,
                                                                   const std::string& key) {
  ObjectReader r(j, what);
  r.ignore({"name", "source"});
  const Json& t = r.raw(key);
  if (!t.is_object()) throw InputError(what + ": key '" + key + "' must be an object");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : t.items()) {
    if (!v.is_string()) throw InputError(what + ": alias '" + k + "' must name a string");
    out.emplace_back(k, v.get<std::string>());
  }
  r.reject_unknown();
  return out;
}

bool looks_like_path(const std::string& s) {
  std::error_code ec;
  return s.find('/') != std::string::npos || s.ends_with(".json") || std::filesystem::exists(s, ec);
}

}  // namespace

std::vector<std::string> nearest_names(const std::string& query, const std::vector<std::string>& names,
                                       std::size_t max) {
  const std::string q = lower(query);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& n : names) {
    const std::string ln = lower(n);
    std::size_t d = edit_distance(q, ln);
    if (!q.empty() && (ln.find(q) != std::string::npos || q.find(ln) != std::string::npos)) d = std::min<std::size_t>(d, 1);
    if (d <= std::max<std::size_t>(3, q.size() / 3)) scored.emplace_back(d, n);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [d, n] : scored)
    if (out.size() < max && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

Catalog Catalog::builtin() {
  Catalog c;
  for (const EmbeddedFile& f : embedded_data()) {
    const std::string what = "data/" + std::string(f.path);
    const Json j = parse_json(f.text, what);
    if (f.path == "models/size_aliases.json") c.sizes_ = parse_alias_table(j, what, "aliases");
    else if (f.path == "gpus/families.json") c.families_ = parse_alias_table(j, what, "families");
    else if (f.path.starts_with("models/")) c.models_.push_back(parse_model(j, what));
    else if (f.path.starts_with("gpus/")) c.gpus_.push_back(parse_gpu(j, what));
  }
  return c;
}

ResolvedModel Catalog::resolve_model(const std::string& spec) const {
  if (spec.empty()) throw InputError("empty model name; expected a catalogue name, Hugging Face id or config.json path");
  if (spec.size() > kMaxNameLength)
    throw InputError("model name is " + std::to_string(spec.size()) + " characters long; expected a catalogue name, "
                     "Hugging Face id or config.json path (at most " + std::to_string(kMaxNameLength) + ")");
  for (const auto& m : models_) {
    bool hit = same(m.name, spec) || (m.hf_id && same(*m.hf_id, spec));
    for (const auto& al : m.aliases) hit = hit || same(al, spec);
    if (hit) return {m.arch, "", &m};
  }
  for (const auto& [alias, target] : sizes_) {
    if (!same(alias, spec)) continue;
    for (const auto& m : models_)
      if (m.name == target) return {m.arch, alias + " = " + m.name + " (size alias)", &m};
  }
  if (looks_like_path(spec)) {
    HfArchitecture read = read_hf_config(spec);
    return {std::move(read.arch), joined_notes(read.notes), nullptr};
  }
  std::vector<std::string> names;
  for (const auto& m : models_) {
    names.push_back(m.name);
    if (m.hf_id) names.push_back(*m.hf_id);
  }
  for (const auto& [alias, target] : sizes_) names.push_back(alias);
  const auto near = nearest_names(spec, names);
  std::string msg = "unknown model '" + text_excerpt(spec) + "'";
  if (!near.empty()) {
    msg += " (did you mean: ";
    for (std::size_t i = 0; i < near.size(); ++i) msg += (i ? ", " : "") + near[i];
    msg += "?)";
  }
  msg += "; `trainplan models` lists the catalogue, or pass a config.json path";
  throw InputError(msg);
}

ResolvedGpu Catalog::resolve_gpu(const std::string& name) const {
  for (const auto& g : gpus_) {
    bool hit = same(g.spec.name, name);
    for (const auto& al : g.aliases) hit = hit || same(al, name);
    if (hit) return {g.spec, ""};
  }
  for (const auto& [family, target] : families_) {
    if (!same(family, name)) continue;
    for (const auto& g : gpus_)
      if (g.spec.name == target) return {g.spec, family + " = " + g.spec.name + " (family default)"};
  }
  std::vector<std::string> names;
  for (const auto& g : gpus_) names.push_back(g.spec.name);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  const auto near = nearest_names(name, names, 3);
  std::string msg = "unknown GPU '" + text_excerpt(name) + "'";
  if (!near.empty()) msg += " (did you mean " + near.front() + "?)";
  throw InputError(msg + "; known GPUs: " + list);
}

namespace {

// A count in a cluster or link spec: digits only, at most a million (no cluster has more).
int spec_count(const std::string& digits, const std::string& what) {
  long long v = 0;
  for (const char ch : digits) {
    v = v * 10 + (ch - '0');
    if (v > kMaxCount)
      throw InputError(what + ": the count '" + digits + "' is too large (at most 1,000,000)");
  }
  return static_cast<int>(v);
}

// Specs are short; a long one is a mistake (and would only slow the pattern match down).
void check_spec_length(const std::string& text, const std::string& what) {
  constexpr std::size_t kMaxSpec = 256;
  if (text.size() > kMaxSpec)
    throw InputError(what + " is " + std::to_string(text.size()) +
                     " characters long; expected a short spec such as 2x8xH100-80GB");
}

// "cl.JSON" is a cluster file as much as "cl.json".
bool has_json_suffix(const std::string& spec) {
  if (spec.size() < 5) return false;
  std::string ext = spec.substr(spec.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".json";
}

// What a cluster spec or file says before its GPU is looked up: the counts (and a file's host
// memory), the GPU's name, and what only a file gives.
struct ClusterSpec {
  hardware::Cluster cluster;
  std::string gpu_name;
  bool explicit_nodes = false;  // NODESxGPUSxGPU or a file: the GPUs are never regrouped into nodes
  std::optional<hardware::InterNodeLink> inter_node;
  std::optional<hardware::GpuSpec> inline_gpu;  // a GPU the catalogue lacks, described in the file
  std::optional<int> nvlink_domain;              // a file's nvlink_domain_gpus
};

ClusterSpec read_cluster_file(const std::string& spec) {
  ClusterSpec out;
  hardware::Cluster& c = out.cluster;
  const std::string what = "cluster file '" + spec + "'";
  const Json j = parse_json(read_text_file(spec, "cluster file", kMaxConfigBytes), what);
  ObjectReader r(j, what);
  r.ignore({"name", "source"});
  // The GPU by catalogue name, or described inline as a data/gpus file describes one (a GPU the
  // catalogue lacks), checked the same way.
  if (r.has("gpu") && r.raw("gpu").is_object()) {
    out.inline_gpu = parse_gpu(r.raw("gpu"), what + " gpu").spec;
    out.gpu_name = out.inline_gpu->name;
  } else {
    out.gpu_name = r.string("gpu");
  }
  c.nodes = static_cast<int>(r.integer("nodes", 1, kMaxCount));
  c.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", 1, kMaxCount));
  if (r.has("inter_node")) out.inter_node = parse_inter_node_json(r.raw("inter_node"), what + " inter_node");
  else r.ignore({"inter_node"});
  if (const auto d = r.optional_integer("nvlink_domain_gpus", 1, kMaxCount)) out.nvlink_domain = static_cast<int>(*d);
  if (const auto host = r.optional_number("host_memory_GiB")) {
    if (!(*host > 0.0 && *host <= kMaxHostGiB))
      throw InputError(what + ": key 'host_memory_GiB' must be positive and at most " +
                       std::to_string(static_cast<int>(kMaxHostGiB)) + " GiB per node (got " + std::to_string(*host) + ")");
    c.host_memory = gib(*host);
  }
  r.reject_unknown();
  out.explicit_nodes = true;
  return out;
}

// A cluster file, NODESxGPUSxGPU, GPUSxGPU or a GPU alone.
const std::regex kNodes(R"(^(\d+)[xX](\d+)[xX](.+)$)");
const std::regex kGpus(R"(^(\d+)[xX](.+)$)");

ClusterSpec parse_cluster_spec(const std::string& spec) {
  if (spec.empty())
    throw InputError(
        "empty cluster; expected a spec such as 4xA100-80GB or 2x8xH100-80GB, or a cluster JSON path");
  if (spec.size() > kMaxNameLength)
    throw InputError("cluster is " + std::to_string(spec.size()) +
                     " characters long; expected a short spec such as 2x8xH100-80GB or a cluster JSON path");
  if (has_json_suffix(spec)) return read_cluster_file(spec);
  check_spec_length(spec, "cluster");
  const ClusterShape shape = cluster_shape(spec);
  ClusterSpec out;
  out.cluster.nodes = shape.nodes;
  out.cluster.gpus_per_node = shape.gpus_per_node;
  out.gpu_name = shape.gpu;
  out.explicit_nodes = std::regex_match(spec, kNodes);
  return out;
}

// The NVLink domain: the file's, else the GPU's rack-scale domain (GB200 NVL72), else the node.
// It holds whole nodes; a domain of one node is the node. A GPU's own domain that the nodes
// typed do not tile (5xGB200 as one node of 5) leaves the node as the domain, said in a note.
void resolve_nvlink_domain(ResolvedCluster& out, std::optional<int> given, const std::string& spec) {
  hardware::Cluster& c = out.cluster;
  const int domain = given.value_or(c.gpu.nvlink_domain_gpus);
  if (domain <= 0 || domain == c.gpus_per_node) return;
  if (domain % c.gpus_per_node != 0) {
    if (given)
      throw InputError(fmt::format("cluster file '{}': key 'nvlink_domain_gpus' {} is not a whole "
                                   "number of its nodes of {} GPUs",
                                   spec, domain, c.gpus_per_node));
    if (c.world() > c.gpus_per_node)
      out.notes.push_back(fmt::format("nodes of {} do not tile the {}'s NVLink domain of {}: "
                                      "NVLink ends at the node here",
                                      c.gpus_per_node, c.gpu.name, domain));
    return;
  }
  c.nvlink_domain = domain;
  if (c.world() > c.gpus_per_node)
    out.notes.push_back(fmt::format("NVLink domains of {} GPUs ({} nodes of {}): collectives inside "
                                    "one run over NVLink, only what leaves it over the network",
                                    c.gpus_per_domain(), c.gpus_per_domain() / c.gpus_per_node,
                                    c.gpus_per_node));
}

}  // namespace

hardware::InterNodeLink parse_inter_node(const std::string& text) {
  // Each message names the option as "{inter-node}": the CLI says --inter-node, the GUI its field.
  const auto bad = [&](const std::string& why) { return FieldError("{inter-node} '" + text + "': " + why); };
  if (text.size() > 256) throw bad("expected a short spec such as 8x200Gbps");
  static const std::regex kPattern(R"(^(?:(\d+)[xX])?(\d+(?:\.\d+)?)\s*Gb(?:ps|it/s|/s)?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kPattern)) throw bad("expected NICS x RATE, e.g. 8x200Gbps or 400Gbps");
  hardware::InterNodeLink l;
  l.links_per_node = 1;
  if (m[1].matched) {
    if (m[1].length() > 7) throw bad("the NIC count is too large (at most " + std::to_string(kMaxLinks) + " per node)");
    l.links_per_node = std::stoi(m[1].str());
  }
  if (l.links_per_node > kMaxLinks)
    throw bad("the NIC count is too large (at most " + std::to_string(kMaxLinks) + " per node)");
  // At most 256 characters of digits: std::stod cannot overflow a double here.
  l.link_Gbps = std::stod(m[2].str());
  l.fabric = "infiniband";
  if (l.links_per_node < 1 || !(l.link_Gbps > 0)) throw bad("counts and rates must be positive");
  if (l.link_Gbps > kMaxLinkGbps)
    throw bad("a NIC of at most " + std::to_string(static_cast<int>(kMaxLinkGbps)) + " Gb/s expected");
  return l;
}

ResolvedCluster Catalog::resolve_cluster(const std::string& spec,
                                         const std::optional<std::string>& inter_node) const {
  ClusterSpec given = parse_cluster_spec(spec);
  ResolvedCluster out;
  hardware::Cluster& c = out.cluster;
  c = std::move(given.cluster);
  c.description = spec;
  if (c.nodes < 1 || c.gpus_per_node < 1)
    throw InputError("cluster '" + spec + "': node and GPU counts must be at least 1");
  if (static_cast<std::int64_t>(c.nodes) * c.gpus_per_node > kMaxCount)
    throw InputError("cluster '" + spec + "': " + std::to_string(c.nodes) + " nodes x " + std::to_string(c.gpus_per_node) +
                     " GPUs is more than 1,000,000 GPUs");
  ResolvedGpu g;
  try {
    if (given.inline_gpu) {
      g.spec = *given.inline_gpu;
      g.note = "GPU " + given.inline_gpu->name + " as the cluster file '" + spec +
               "' describes it (not catalogued)";
    } else {
      g = resolve_gpu(given.gpu_name);
    }
  } catch (const InputError& e) {
    if (!spec.ends_with(".json")) throw;
    throw InputError("cluster file '" + spec + "': key 'gpu': " + e.what());
  }
  c.gpu = g.spec;
  if (!g.note.empty()) out.notes.push_back(g.note);
  // "16xA100" on GPUs that come 8 to a node means two nodes.
  const int per_node = c.gpu.default_gpus_per_node;
  if (!given.explicit_nodes && c.gpus_per_node > per_node) {
    if (c.gpus_per_node % per_node != 0)
      throw InputError("cluster '" + spec + "': " + std::to_string(c.gpus_per_node) + " GPUs do not fill nodes of " +
                       std::to_string(per_node) + "; write NODESxGPUSxGPU, e.g. 2x8x" + c.gpu.name);
    c.nodes = c.gpus_per_node / per_node;
    c.gpus_per_node = per_node;
    out.notes.push_back(spec + " = " + std::to_string(c.nodes) + " nodes x " + std::to_string(per_node) +
                        " GPUs (nodes of " + std::to_string(per_node) + ")");
  }
  c.inter_node =
      inter_node ? parse_inter_node(*inter_node) : given.inter_node.value_or(c.gpu.default_inter_node);
  resolve_nvlink_domain(out, given.nvlink_domain, spec);
  return out;
}

std::string ClusterShape::spec() const {
  return file.empty() ? fmt::format("{}x{}x{}", nodes, gpus_per_node, gpu) : file;
}

ClusterShape cluster_shape(const std::string& spec) {
  ClusterShape out;
  if (has_json_suffix(spec)) {
    out.file = spec;
    return out;
  }
  const std::string what = "cluster '" + spec + "'";
  std::smatch m;
  if (std::regex_match(spec, m, kNodes)) {
    out.nodes = spec_count(m[1].str(), what);
    out.gpus_per_node = spec_count(m[2].str(), what);
    out.gpu = m[3].str();
  } else if (std::regex_match(spec, m, kGpus)) {
    out.gpus_per_node = spec_count(m[1].str(), what);
    out.gpu = m[2].str();
  } else {
    out.gpus_per_node = 1;
    out.gpu = spec;
  }
  return out;
}

}  // namespace trainplan::request
