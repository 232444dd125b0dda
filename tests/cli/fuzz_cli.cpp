// Random input into every option of fit, estimate and plan, and random model and cluster specs and
// config.json files: the binary must answer each with exit 0, 1 or 2 (never 3, an internal error),
// no signal, no hang, and output that ends in a newline.
//
//   cli_fuzz TRAINPLAN DATA [RUNS] [SEED]
//
// The seed is fixed, so a failure reproduces; each failure prints its command line.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "process.hpp"

namespace {

using Rng = std::mt19937_64;

template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

// Numbers and strings a careless or hostile user types.
const std::vector<std::string>& hostile_values() {
  static const std::vector<std::string> v{"0",
                                          "-0",
                                          "1",
                                          "-1",
                                          "2",
                                          "3",
                                          "7",
                                          "8",
                                          "64",
                                          "4096",
                                          "2147483647",
                                          "2147483648",
                                          "-2147483649",
                                          "4294967296",
                                          "9223372036854775807",
                                          "9223372036854775808",
                                          "-9223372036854775808",
                                          "99999999999999999999",
                                          "0.5",
                                          "1.5",
                                          "-0.5",
                                          "1e-300",
                                          "1e308",
                                          "1e400",
                                          "-1e400",
                                          "nan",
                                          "NaN",
                                          "-nan",
                                          "inf",
                                          "-inf",
                                          "Infinity",
                                          "0x10",
                                          "1e3",
                                          "1,000",
                                          " 8",
                                          "8 ",
                                          "",
                                          " ",
                                          "-",
                                          "--",
                                          "=",
                                          "abc",
                                          "none",
                                          "true",
                                          "%s%n%x",
                                          "\xce\xa9",
                                          "\xf0\x9f\x9a\x80",
                                          "\xff\xfe",
                                          "a\tb",
                                          "../..",
                                          "300B",
                                          "1T",
                                          "2.5e12",
                                          "-5B",
                                          "1e400T",
                                          "99999999999999999999T",
                                          "0B",
                                          "8x200Gbps",
                                          "0x200Gbps",
                                          "q,v",
                                          "all-linear",
                                          ",,,",
                                          "q,,v"};
  return v;
}

// Values each enumerated option accepts, so that runs also reach the model behind the parser.
struct OptionSpec {
  std::string name;
  std::vector<std::string> good;
};

const std::vector<OptionSpec>& options() {
  static const std::vector<OptionSpec> o{
      {"--method", {"full", "lora", "qlora"}},
      {"--precision", {"fp32", "fp16-mixed", "bf16-mixed", "fp16-true", "bf16-true"}},
      {"--optimizer",
       {"adamw", "adam", "sgd", "sgd-momentum", "adamw-8bit", "paged-adamw-8bit", "adafactor"}},
      {"--optimizer-impl",
       {"default", "foreach", "fused", "for-loop", "deepspeed-fused", "deepspeed-cpu"}},
      {"--strategy",
       {"single", "ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"}},
      {"--tp", {"1", "2", "4", "8"}},
      {"--pp", {"1", "2", "4"}},
      {"--pp-virtual", {"1", "2"}},
      {"--expert-parallel", {"1", "2", "8"}},
      {"--micro-batch", {"1", "2", "4", "16"}},
      {"--grad-accum", {"1", "4"}},
      {"--seq", {"128", "512", "2048", "4096", "32768"}},
      {"--checkpointing", {"none", "selective", "full", "full-offload"}},
      {"--attention", {"flash", "sdpa", "eager"}},
      {"--offload", {"none", "optimizer", "optimizer+params"}},
      {"--lora-rank", {"8", "16", "64"}},
      {"--lora-alpha", {"16", "32"}},
      {"--lora-dropout", {"0", "0.05", "0.1"}},
      {"--lora-targets", {"q,v", "all-linear", "q_proj,v_proj"}},
      {"--quant", {"nf4", "nf4-dq", "fp4", "int8"}},
      {"--quant-block", {"64", "128"}},
      {"--bitsandbytes", {"0.42.0", "0.43.2", "current"}},
      {"--fsdp-wrap", {"block", "none"}},
      {"--fsdp-version", {"1", "2"}},
      {"--reshard-after-forward", {"0", "1", "4", "8"}},
      {"--hybrid-shard", {"0", "4", "16"}},
      {"--framework", {"pytorch", "deepspeed", "megatron"}},
      {"--inter-node", {"8x200Gbps", "400Gbps", "4x400Gbps"}},
      {"--host-memory", {"256", "1024"}},
      {"--global-batch", {"8", "64", "1024"}},
      {"--global-batch-tokens", {"65536", "4194304"}},
      {"--profile", {"@DATA@/../../../data/profiles/h200.json"}},
      {"--tokens", {"300B", "1T", "2.5e12"}},
      {"--emit", {"deepspeed", "accelerate", "torchrun"}},
      {"--top", {"1", "5"}},
  };
  return o;
}

const std::vector<std::string>& flags() {
  static const std::vector<std::string> f{"--json",
                                          "--sequence-parallel",
                                          "--zero-plus-plus",
                                          "--frozen-base-fp32",
                                          "--tp-across-nodes",
                                          "--activations"};
  return f;
}

std::string random_string(Rng& rng) {
  static const std::string alphabet = "abcxyzAZ019-_./:,+@ \t\"'\\{}[]";
  const std::size_t n =
      chance(rng, 0.1) ? 40000 : std::uniform_int_distribution<std::size_t>(0, 24)(rng);
  std::string s;
  for (std::size_t i = 0; i < n; ++i)
    s += alphabet[std::uniform_int_distribution<std::size_t>(0, alphabet.size() - 1)(rng)];
  return s;
}

// hostility: the chance that a value is hostile rather than one the option accepts.
std::string value(Rng& rng, const OptionSpec& o, const std::string& data, double hostility) {
  if (!chance(rng, hostility)) {
    std::string v = pick(rng, o.good);
    if (v.starts_with("@DATA@")) v = data + v.substr(6);
    return v;
  }
  return chance(rng, 0.8) ? pick(rng, hostile_values()) : random_string(rng);
}

// A JSON literal for a config key: mostly plausible, sometimes hostile.
std::string json_value(Rng& rng) {
  static const std::vector<std::string> v{"0",
                                          "-1",
                                          "1",
                                          "2",
                                          "4",
                                          "8",
                                          "32",
                                          "64",
                                          "128",
                                          "4096",
                                          "11008",
                                          "32000",
                                          "1e12",
                                          "1e400",
                                          "1000000000000",
                                          "18446744073709551615",
                                          "-9223372036854775808",
                                          "4096.5",
                                          "\"4096\"",
                                          "null",
                                          "true",
                                          "[]",
                                          "{}",
                                          "\"\"",
                                          "0.1",
                                          "2.5"};
  return pick(rng, v);
}

// A config.json with random values for the keys the readers look at.
std::string random_config(Rng& rng) {
  static const std::vector<std::string> types{"llama",  "mistral", "mixtral", "qwen2",    "gemma",
                                              "falcon", "bloom",   "gpt2",    "gpt_neox", "mpt",
                                              "phi",    "t5",      "mamba",   "42"};
  static const std::vector<std::string> keys{"hidden_size",
                                             "num_hidden_layers",
                                             "num_attention_heads",
                                             "num_key_value_heads",
                                             "vocab_size",
                                             "intermediate_size",
                                             "max_position_embeddings",
                                             "head_dim",
                                             "n_embd",
                                             "n_layer",
                                             "n_head",
                                             "n_inner",
                                             "n_positions",
                                             "d_model",
                                             "d_ff",
                                             "d_kv",
                                             "num_layers",
                                             "num_heads",
                                             "num_local_experts",
                                             "num_experts_per_tok",
                                             "sliding_window",
                                             "tie_word_embeddings",
                                             "attention_bias",
                                             "hidden_act",
                                             "expansion_ratio",
                                             "max_seq_len",
                                             "n_heads",
                                             "n_layers",
                                             "num_decoder_layers",
                                             "partial_rotary_factor",
                                             "rotary_pct",
                                             "attention_dropout",
                                             "resid_pdrop",
                                             "dropout_rate",
                                             "feed_forward_proj"};
  std::string t = pick(rng, types);
  std::string s = "{\"model_type\": " + (t == "42" ? t : "\"" + t + "\"");
  const int n = std::uniform_int_distribution<int>(0, 8)(rng);
  for (int i = 0; i < n; ++i) s += ", \"" + pick(rng, keys) + "\": " + json_value(rng);
  if (chance(rng, 0.1)) s.pop_back();  // sometimes not even JSON
  return s + "}";
}

std::string random_cluster_file(Rng& rng) {
  static const std::vector<std::string> gpus{"\"A100-80GB\"", "\"H100\"", "\"R100\"", "\"GB200\"", "42", "null"};
  std::string s = "{\"gpu\": " + pick(rng, gpus) + ", \"nodes\": " + json_value(rng) +
                  ", \"gpus_per_node\": " + json_value(rng);
  if (chance(rng, 0.5)) s += ", \"host_memory_GiB\": " + json_value(rng);
  if (chance(rng, 0.2)) s += ", \"nvlink_domain_gpus\": " + json_value(rng);
  if (chance(rng, 0.3))
    s += ", \"inter_node\": {\"links_per_node\": " + json_value(rng) +
         ", \"link_Gbps\": " + json_value(rng) + ", \"fabric\": \"infiniband\"}";
  return s + "}";
}

std::string model_spec(Rng& rng, const std::string& data, const std::string& work, int run,
                       double hostility) {
  static const std::vector<std::string> names{
      "7b",         "13b",        "gpt2",  "llama-2-7b", "mixtral-8x7b", "t5-3b",
      "falcon-7b",  "bloom-560m", "phi-2", "gemma-2b",   "mpt-7b",       "meta-llama/Llama-2-7b-hf",
      "llama-2-13", "",           "/",     "."};
  if (!chance(rng, hostility)) return chance(rng, 0.8) ? pick(rng, names) : data + "/tiny-llama";
  if (chance(rng, 0.7)) {
    const std::string path = work + "/config-" + std::to_string(run) + ".json";
    std::ofstream(path, std::ios::trunc) << random_config(rng);
    return path;
  }
  return random_string(rng);
}

std::string cluster_spec(Rng& rng, const std::string& work, int run, double hostility) {
  static const std::vector<std::string> specs{"A100",   "4xA100",  "8xA100-80GB", "2x8xH100-80GB",
                                              "H200",   "16xH100", "8xV100-16GB", "8xMI300X",
                                              "4xR100", "12xA100", "64x4xGB200"};
  if (!chance(rng, hostility)) return pick(rng, specs);
  const double p = std::uniform_real_distribution<double>(0, 1)(rng);
  if (p < 0.4) return pick(rng, hostile_values()) + "x" + pick(rng, specs);
  if (p < 0.7) {
    const std::string path = work + "/cluster-" + std::to_string(run) + ".json";
    std::ofstream(path, std::ios::trunc) << random_cluster_file(rng);
    return path;
  }
  return random_string(rng);
}

std::vector<std::string> random_command(Rng& rng, const std::string& data, const std::string& work,
                                        int run) {
  static const std::vector<std::string> subs{"fit", "estimate", "plan"};
  // A third of the runs are nearly valid, so that they reach the models behind the parser.
  static const std::vector<double> hostilities{0.03, 0.25, 0.8};
  const double hostility = pick(rng, hostilities);
  std::vector<std::string> args{pick(rng, subs)};
  if (chance(rng, 0.97)) args.push_back(model_spec(rng, data, work, run, hostility));
  if (chance(rng, 0.97)) args.push_back(cluster_spec(rng, work, run, hostility));
  const int n = std::uniform_int_distribution<int>(0, 6)(rng);
  for (int i = 0; i < n; ++i) {
    if (chance(rng, 0.15)) {
      args.push_back(pick(rng, flags()));
      continue;
    }
    const OptionSpec& o = pick(rng, options());
    if (chance(rng, 0.2)) {
      args.push_back(o.name + "=" + value(rng, o, data, hostility));
    } else {
      args.push_back(o.name);
      args.push_back(value(rng, o, data, hostility));
    }
  }
  return args;
}

std::string shown(const std::vector<std::string>& args) {
  std::string s = "trainplan";
  for (const auto& a : args) {
    const std::string v =
        a.size() > 60 ? a.substr(0, 60) + "...(" + std::to_string(a.size()) + " chars)" : a;
    s += " '" + v + "'";
  }
  return s;
}

bool ends_cleanly(const std::string& s) { return s.empty() || s.back() == '\n'; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: cli_fuzz TRAINPLAN DATA [RUNS] [SEED]\n";
    return 2;
  }
  const std::string trainplan = argv[1];
  const std::string data = argv[2];
  const int runs = argc > 3 ? std::stoi(argv[3]) : 600;
  Rng rng(argc > 4 ? std::stoull(argv[4]) : 13);
  const auto work =
      std::filesystem::temp_directory_path() / ("trainplan-fuzz-" + std::to_string(getpid()));
  std::filesystem::create_directories(work);
  int failures = 0;
  int by_code[4] = {0, 0, 0, 0};
  const auto start = std::chrono::steady_clock::now();
  for (int run = 0; run < runs; ++run) {
    const std::vector<std::string> args = random_command(rng, data, work.string(), run);
    const auto r = trainplan::test::run_process(trainplan, args, std::chrono::seconds(10));
    std::string problem = trainplan::test::answer_problem(r, "10 s");
    if (problem.empty() && (!ends_cleanly(r.out) || !ends_cleanly(r.err)))
      problem = "output does not end in a newline";
    if (!r.timed_out && r.signal == 0 && r.exit_code >= 0 && r.exit_code <= 3)
      ++by_code[r.exit_code];
    if (problem.empty()) continue;
    ++failures;
    std::cout << "FAIL run " << run << ": " << problem << "\n  " << shown(args)
              << "\n  stderr: " << r.err.substr(0, 400) << "\n";
  }
  std::filesystem::remove_all(work);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << runs << " runs in " << seconds << " s: exit 0 " << by_code[0] << ", exit 1 "
            << by_code[1] << ", exit 2 " << by_code[2] << "; " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
