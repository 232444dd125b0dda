// `trainplan calibrate import` and `trainplan calibrate fit`, called through their run functions.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cmd_calibrate.hpp"
#include "paths.hpp"
#include "trainplan/core/error.hpp"
#include "trainplan/request/measurements.hpp"
#include "trainplan/request/profile_json.hpp"

namespace trainplan::cli {
namespace {

namespace fs = std::filesystem;
using test::fixture;
using test::synthetic;
using test::TempDir;

struct Output {
  std::string out;
  std::string err;
};

Output import(const CalibrateImportOptions& o) {
  std::ostringstream out;
  std::ostringstream err;
  run_calibrate_import(o, out, err);
  return {out.str(), err.str()};
}

Output fit(const CalibrateFitOptions& o) {
  std::ostringstream out;
  std::ostringstream err;
  run_calibrate_fit(o, out, err);
  return {out.str(), err.str()};
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CalibrateImport, TableAndJson) {
  CalibrateImportOptions o;
  o.files = {
      fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt").string(),
      fixture("real_all_reduce_perf_v2.17.9_16xGH200_4node_int8_wrong_nofooter.txt").string()};
  const Output table = import(o);
  EXPECT_NE(table.out.find("NVIDIA A100-SXM4-80GB"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("232.44"), std::string::npos) << table.out;
  o.json = true;
  const Output json = import(o);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("schema"), "trainplan.measurements/1");
  ASSERT_EQ(j.at("collectives").size(), 4u);  // 2 files x (out-of-place, in-place)
  const auto& a100 = j.at("collectives")[0];
  EXPECT_EQ(a100.at("collective"), "all_reduce");
  EXPECT_EQ(a100.at("ranks"), 8);
  EXPECT_EQ(a100.at("nodes"), 1);
  EXPECT_EQ(a100.at("dtype"), "float");
  EXPECT_EQ(a100.at("in_place"), false);
  ASSERT_EQ(a100.at("points").size(), 30u);
  EXPECT_EQ(a100.at("points")[0].at("bytes"), 8);
  EXPECT_EQ(a100.at("points")[0].at("time_us"), 40.12);
  EXPECT_EQ(a100.at("points")[29].at("busbw_GBps"), 232.44);
  const auto& gh200 = j.at("collectives")[2];
  EXPECT_EQ(gh200.at("nodes"), 4);
  int invalid = 0;
  for (const auto& p : gh200.at("points")) invalid += p.at("valid") == false;
  EXPECT_EQ(invalid, 6);
}

TEST(CalibrateImport, WritesARunDirectoryThatReadsBack) {
  TempDir tmp("import");
  CalibrateImportOptions o;
  o.files = {fixture("real_all_reduce_perf_fmt_pre2.13_16xA100_2node_sharp_noise.txt").string()};
  o.out_dir = (tmp.path() / "run").string();
  const Output r = import(o);
  EXPECT_NE(r.err.find("58 measurements"), std::string::npos) << r.err;
  EXPECT_EQ(entries(tmp.path()), std::vector<std::string>{"run"});
  EXPECT_EQ(entries(tmp.path() / "run"),
            (std::vector<std::string>{"measurements.jsonl", "provenance.json"}));
  const calibration::Run run = request::read_run_dir(tmp.path() / "run");
  ASSERT_EQ(run.measurements.collectives.size(), 58u);
  EXPECT_EQ(run.provenance.tool, "nccl-tests");
  EXPECT_EQ(run.provenance.gpu, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(run.provenance.ranks, 16);
  EXPECT_EQ(run.provenance.nodes, 2);
  EXPECT_EQ(run.provenance.hosts, (std::vector<std::string>{"a0000", "a0001"}));
  EXPECT_EQ(
      run.provenance.sources,
      std::vector<std::string>{"real_all_reduce_perf_fmt_pre2.13_16xA100_2node_sharp_noise.txt"});
  const auto& first = run.measurements.collectives.front();
  EXPECT_EQ(first.scope, hardware::LinkScope::inter_node);
  EXPECT_NEAR(first.time.value(), 22.54e-6, 1e-15);
  // Writing again replaces both files in place.
  (void)import(o);
  EXPECT_EQ(entries(tmp.path() / "run"),
            (std::vector<std::string>{"measurements.jsonl", "provenance.json"}));
}

TEST(CalibrateImport, BadInputNamesTheFile) {
  CalibrateImportOptions o;
  o.files = {synthetic("does_not_exist.txt").string()};
  std::string msg = error_of([&] { (void)import(o); });
  EXPECT_NE(msg.find("cannot read"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does_not_exist.txt"), std::string::npos) << msg;

  o.files = {synthetic("empty.txt").string()};
  msg = error_of([&] { (void)import(o); });
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
  EXPECT_NE(msg.find("empty.txt"), std::string::npos) << msg;

  o.files = {synthetic("osu_allreduce_not_supported.txt").string()};
  msg = error_of([&] { (void)import(o); });
  EXPECT_NE(msg.find("not a log of a known tool"), std::string::npos) << msg;
  EXPECT_NE(msg.find("osu_allreduce_not_supported.txt"), std::string::npos) << msg;

  TempDir tmp("unreadable");
  o.files = {tmp.path().string()};  // a folder
  msg = error_of([&] { (void)import(o); });
  EXPECT_NE(msg.find(tmp.path().string()), std::string::npos) << msg;

  o.files = {fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt").string()};
  o.collective = "allreduce";
  msg = error_of([&] { (void)import(o); });
  EXPECT_NE(msg.find("'allreduce'"), std::string::npos) << msg;
}

TEST(CalibrateImport, FailedWriteLeavesNothing) {
  TempDir tmp("failwrite");
  std::ofstream(tmp.path() / "a-file") << "x";
  CalibrateImportOptions o;
  o.files = {fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt").string()};
  o.out_dir = (tmp.path() / "a-file" / "run").string();  // below a regular file: cannot exist
  EXPECT_THROW((void)import(o), InputError);
  EXPECT_EQ(entries(tmp.path()), std::vector<std::string>{"a-file"});

  // An existing run whose measurements.jsonl is a folder: the first rename fails, no temporary
  // file remains and provenance.json is not replaced.
  fs::create_directories(tmp.path() / "run" / "measurements.jsonl" / "occupied");
  std::ofstream(tmp.path() / "run" / "provenance.json") << "old";
  o.out_dir = (tmp.path() / "run").string();
  EXPECT_THROW((void)import(o), InputError);
  EXPECT_EQ(entries(tmp.path() / "run"),
            (std::vector<std::string>{"measurements.jsonl", "provenance.json"}));
  std::ifstream old(tmp.path() / "run" / "provenance.json");
  std::string content;
  old >> content;
  EXPECT_EQ(content, "old");
}

fs::path imported_run(const TempDir& tmp, const std::string& name,
                      const std::vector<fs::path>& logs) {
  CalibrateImportOptions o;
  for (const auto& l : logs) o.files.push_back(l.string());
  o.out_dir = (tmp.path() / name).string();
  (void)import(o);
  return tmp.path() / name;
}

TEST(CalibrateFit, EndToEndOnTheA100Sweep) {
  TempDir tmp("fit");
  const fs::path run =
      imported_run(tmp, "run", {fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt")});
  CalibrateFitOptions o;
  o.run_dirs = {run.string()};
  o.out = (tmp.path() / "a100.json").string();
  const Output r = fit(o);
  EXPECT_NE(r.out.find("all_reduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("A100-80GB"), std::string::npos) << r.out;  // catalogue name of the device
  const hardware::HardwareProfile p = request::read_profile(o.out);
  EXPECT_EQ(p.name, "a100");
  EXPECT_EQ(p.gpu, "A100-80GB");
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_NEAR(
      p.collective_time(hardware::Collective::all_reduce, 8, 1, Bytes(1073741824.0))->value(),
      8247.6e-6, 1e-12);
  EXPECT_EQ(entries(tmp.path()), (std::vector<std::string>{"a100.json", "run"}));

  o.json = true;
  const Output j = fit(o);
  EXPECT_EQ(request::parse_profile_json(j.out, "stdout"), p);
}

// ABCI's A100 logs at 1-16 nodes, imported and fitted as a user would: the summary shows the
// collective models and what each count's points are held out; the profile written answers a
// node count nobody measured (32) from the inter-node model, above the 16-node time at a latency-
// bound size (the tree's latency grows with log2 of the nodes).
TEST(CalibrateFit, MultiNodeLogsGiveACollectiveModelPerScope) {
  TempDir tmp("fit-multinode");
  std::vector<fs::path> logs;
  for (const char* n : {"1n8r", "2n16r", "4n32r", "8n64r", "16n128r"})
    logs.push_back(fixture(std::string("multinode/abci-anode-a100-all_reduce-") + n + ".txt"));
  const fs::path run = imported_run(tmp, "abci", logs);
  CalibrateFitOptions o;
  o.run_dirs = {run.string()};
  o.out = (tmp.path() / "abci.json").string();
  const Output r = fit(o);
  EXPECT_NE(r.out.find("collective model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inter_node"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tree/LL"), std::string::npos) << r.out;
  const hardware::HardwareProfile p = request::read_profile(o.out);
  ASSERT_EQ(p.collective_models.size(), 2u);
  const auto t16 = p.collective_time(hardware::Collective::all_reduce, 128, 16, Bytes(4.0));
  const auto t32 = p.collective_time(hardware::Collective::all_reduce, 256, 32, Bytes(4.0));
  ASSERT_TRUE(t16 && t32);
  EXPECT_GT(*t32, *t16);
  EXPECT_LT(*t32, *t16 * 1.5);
}

TEST(CalibrateFit, TooFewPoints) {
  TempDir tmp("fewpoints");
  const fs::path run =
      imported_run(tmp, "gb10", {fixture("real_all_gather_perf_v2.18.5_2xGB10_2node_full.txt")});
  CalibrateFitOptions o;
  o.run_dirs = {run.string()};
  o.out = (tmp.path() / "p.json").string();
  const std::string msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("all_gather over 2 ranks on 2 nodes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 valid size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at least 3"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(o.out));
}

void write_run(const fs::path& dir, int ranks, int nodes) {
  calibration::Run run;
  run.provenance.tool = "trainplan-calibrate";
  run.provenance.ranks = ranks;
  run.provenance.nodes = nodes;
  for (double s = 1 << 20; s <= (1 << 30); s *= 4) {
    calibration::CollectiveMeasurement m;
    m.collective = hardware::Collective::all_reduce;
    m.scope = hardware::LinkScope::world;
    m.ranks = ranks;
    m.nodes = nodes;
    m.dtype = "bfloat16";
    m.bytes = Bytes(s);
    m.time = Seconds(50e-6 + s / 90e9);
    run.measurements.collectives.push_back(m);
  }
  request::write_run_dir(dir, run);
}

TEST(CalibrateFit, MismatchedWorldSizes) {
  TempDir tmp("world");
  write_run(tmp.path() / "a", 16, 2);
  write_run(tmp.path() / "b", 32, 4);
  CalibrateFitOptions o;
  o.run_dirs = {(tmp.path() / "a").string(), (tmp.path() / "b").string()};
  o.out = (tmp.path() / "p.json").string();
  const std::string msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("different world sizes"), std::string::npos) << msg;
  EXPECT_NE(msg.find((tmp.path() / "b").string()), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(o.out));
}

TEST(CalibrateFit, NoMeasurementsUnknownKeysAndMissingRuns) {
  TempDir tmp("badruns");
  const fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  std::ofstream(empty / "measurements.jsonl");
  std::ofstream(empty / "provenance.json") << R"({"schema":"trainplan.run/1"})";
  CalibrateFitOptions o;
  o.run_dirs = {empty.string()};
  o.out = (tmp.path() / "p.json").string();
  std::string msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("no measurements"), std::string::npos) << msg;

  std::ofstream(empty / "measurements.jsonl")
      << R"({"kind":"collective","collective":"all_reduce","scope":"world","ranks":8,"nodes":1,"bytes":8,"time_us":40,"latency_us":3})"
      << "\n";
  msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("'latency_us'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 1"), std::string::npos) << msg;

  std::ofstream(empty / "provenance.json") << R"({"schema":"trainplan.run/1","gpu_name":"x"})";
  msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("'gpu_name'"), std::string::npos) << msg;

  o.run_dirs = {(tmp.path() / "missing").string()};
  msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(o.out));
}

TEST(CalibrateFit, FailedWriteLeavesNoPartialProfile) {
  TempDir tmp("profilewrite");
  const fs::path run =
      imported_run(tmp, "run", {fixture("real_all_reduce_perf_fmt2.13_1proc_8xA100.txt")});
  fs::create_directories(tmp.path() / "profile.json");  // the target is a folder
  CalibrateFitOptions o;
  o.run_dirs = {run.string()};
  o.out = (tmp.path() / "profile.json").string();
  EXPECT_THROW((void)fit(o), InputError);
  EXPECT_EQ(entries(tmp.path()), (std::vector<std::string>{"profile.json", "run"}));
  EXPECT_TRUE(fs::is_empty(tmp.path() / "profile.json"));
  o.out = (tmp.path() / "no-such-folder" / "profile.json").string();
  EXPECT_THROW((void)fit(o), InputError);
  EXPECT_EQ(entries(tmp.path()), (std::vector<std::string>{"profile.json", "run"}));
}

TEST(CalibrateFit, GemmNeedsAPeak) {
  TempDir tmp("gemm");
  calibration::Run run;
  for (std::int64_t s : {1024, 2048, 4096, 8192}) {
    calibration::GemmMeasurement g;
    g.dtype = hardware::GemmDtype::bf16;
    g.m = g.n = g.k = s;
    g.time = Seconds(1e-3);
    g.rate = tflops(700.0 * static_cast<double>(s) / (static_cast<double>(s) + 100.0));
    run.measurements.gemms.push_back(g);
  }
  request::write_run_dir(tmp.path() / "run", run);
  CalibrateFitOptions o;
  o.run_dirs = {(tmp.path() / "run").string()};
  o.out = (tmp.path() / "p.json").string();
  const std::string msg = error_of([&] { (void)fit(o); });
  EXPECT_NE(msg.find("--peak-tflops bf16="), std::string::npos) << msg;

  o.gpu = "H100-80GB";  // the catalogue knows its peaks and SM count
  (void)fit(o);
  hardware::HardwareProfile p = request::read_profile(o.out);
  ASSERT_EQ(p.gemm.size(), 1u);
  EXPECT_DOUBLE_EQ(to_tflops(p.gemm[0].peak), 989.0);
  EXPECT_EQ(p.gemm[0].sm_count, 132);

  o.gpu = "my-accelerator";
  o.peak_tflops = {"bf16=800"};  // above every measured point (at most 692 TFLOP/s)
  o.sm_count = 100;
  const Output r = fit(o);
  EXPECT_NE(r.err.find("not in the catalogue"), std::string::npos) << r.err;
  p = request::read_profile(o.out);
  EXPECT_EQ(p.gpu, "my-accelerator");
  EXPECT_DOUBLE_EQ(to_tflops(p.gemm[0].peak), 800.0);
  EXPECT_EQ(p.gemm[0].sm_count, 100);

  // A peak the measurements beat names the point that beats it; nothing is written.
  std::filesystem::remove(o.out);
  o.peak_tflops = {"bf16=500"};
  EXPECT_NE(error_of([&] { (void)fit(o); }).find("above the stated peak 500"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(o.out));
  o.peak_tflops = {"bf16:500"};
  EXPECT_NE(error_of([&] { (void)fit(o); }).find("DTYPE=TFLOPS"), std::string::npos);
  o.peak_tflops = {"bf17=500"};
  EXPECT_NE(error_of([&] { (void)fit(o); }).find("'bf17'"), std::string::npos);
}

TEST(CalibrateCli, SubcommandsParse) {
  CLI::App app;
  CLI::App* calibrate = setup_calibrate(app);
  ASSERT_NE(calibrate, nullptr);
  EXPECT_NE(calibrate->get_subcommand("import"), nullptr);
  EXPECT_NE(calibrate->get_subcommand("fit"), nullptr);
  // Bad input reaches main as InputError (exit code 2 there), not as a CLI11 parse error.
  std::vector<std::string> args{"calibrate", "import",
                                synthetic("osu_allreduce_not_supported.txt").string()};
  std::reverse(args.begin(), args.end());
  EXPECT_THROW(app.parse(args), InputError);
}

}  // namespace
}  // namespace trainplan::cli
