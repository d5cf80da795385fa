// Leave one study out (validation/leave_study_out): the calibration redone without a study,
// on small cuts of the reference CSV so that each case fits in seconds. What is asserted is
// the procedure (which sets are refitted or fall back to their declared defaults, that a
// changed device reaches the devices taking its constants, determinism), not error levels.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "validation/graph_cache.hpp"
#include "validation/leave_study_out.hpp"
#include "validation/reference_csv.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::validation;

namespace {

// The rows of the shared reference CSV whose line contains one of `needles` (plus the header).
std::vector<ReferenceRow> cut(const std::vector<std::string>& needles, int max_per_needle) {
  std::ifstream in(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/published_calibration.csv");
  const std::string path = (std::filesystem::temp_directory_path() / "xpusim_loso_cut.csv").string();
  std::ofstream out(path);
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  std::vector<int> taken(needles.size(), 0);
  while (std::getline(in, line))
    for (size_t i = 0; i < needles.size(); ++i)
      if (line.find(needles[i]) != std::string::npos && taken[i] < max_per_needle) {
        out << line << "\n";
        ++taken[i];
        break;
      }
  out.close();
  return read_reference_csv(path);
}

const ConstantSetRound& set_named(const StudyHoldOut& h, const std::string& name) {
  for (const auto& s : h.sets)
    if (s.set == name) return s;
  FAIL("no constant set " << name);
  return h.sets.front();
}

const StudyHoldOut& study_named(const std::vector<StudyHoldOut>& r, const std::string& prefix) {
  for (const auto& h : r)
    if (h.study.rfind(prefix, 0) == 0) return h;
  FAIL("no study " << prefix);
  return r.front();
}

StudyHoldOutOptions options() {
  StudyHoldOutOptions o;
  o.predict = graph_caching_predictor();
  o.max_evaluations = 120;
  return o;
}

}  // namespace

TEST_CASE("leave one study out: a set fitted only on the study falls back to its declared defaults",
          "[calibrate][leave_one_study_out]") {
  // RiseML's V100 rows fit the V100's tensor efficiency; NVIDIA's PyTorch rows fit its profile.
  const auto rows = cut({"RiseML blog", "NVIDIA/DeepLearningExamples"}, 100);
  const auto r = leave_one_study_out(rows, options());
  REQUIRE(r.size() == 2);
  const StudyHoldOut& nv = study_named(r, "NVIDIA");
  const ConstantSetRound& py = set_named(nv, "framework pytorch_amp_dali");
  CHECK(py.action == "unfitted");
  for (const auto& p : py.params) CHECK(p.fitted == 1.0);  // a scale's neutral value
  CHECK(set_named(nv, "device v100_sxm2_16gb").action == "unchanged");  // its rows are RiseML's only
  CHECK(nv.rows == 4);
  REQUIRE(nv.mape_pct_held_out);
  REQUIRE(nv.mape_pct_in_sample);
  CHECK(*nv.mape_pct_held_out > *nv.mape_pct_in_sample);

  const StudyHoldOut& rise = study_named(r, "RiseML");
  const ConstantSetRound& v100 = set_named(rise, "device v100_sxm2_16gb");
  CHECK(v100.action == "unfitted");
  REQUIRE(v100.params.size() == 1);
  CHECK(v100.params[0].key == "tensor_efficiency");
  CHECK(v100.params[0].initial == Approx(0.325));
  CHECK(v100.params[0].fitted == Approx(0.3));  // the spec's default: no tensor-core device is calibrated
  // The profile's rows are on the V100, whose constants changed: refitted on its 4 rows.
  const ConstantSetRound& py2 = set_named(rise, "framework pytorch_amp_dali");
  CHECK(py2.action == "refit");
  CHECK(py2.rows == 4);
}

TEST_CASE("leave one study out: a device's new values reach the devices that take its constants",
          "[calibrate][leave_one_study_out]") {
  // Without the tf_cnn_benchmarks rows P100 has nothing to fit on and takes its defaults; the
  // V100 takes P100's constants (efficiency_from), so its own fit moves although none of its
  // rows was held out.
  const auto rows = cut({"p100_sxm2,1,dgx1_nvlink,tensorflow,resnet50", "RiseML blog"}, 4);
  const auto r = leave_one_study_out(rows, options());
  const StudyHoldOut& tf = study_named(r, "TensorFlow performance benchmarks");
  CHECK(set_named(tf, "device p100_sxm2").action == "unfitted");
  const ConstantSetRound& v100 = set_named(tf, "device v100_sxm2_16gb");
  CHECK(v100.action == "refit");
  REQUIRE(v100.params.size() == 1);
  CHECK(v100.params[0].fitted != Approx(v100.params[0].initial).epsilon(0.01));
  // And the procedure is deterministic: same inputs, same JSON.
  CHECK(leave_one_study_out_json(r).dump() == leave_one_study_out_json(leave_one_study_out(rows, options())).dump());
}
