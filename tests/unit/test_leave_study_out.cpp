// Leave one study out (validation/leave_study_out): the calibration redone without a study,
// on small cuts of the reference CSV so that each case fits in seconds. What is asserted is
// the procedure (which sets are refitted or fall back to their declared defaults, that a
// changed device reaches the devices taking its constants, a changed profile reaches the
// profiles that name it as their base, determinism), not error levels.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "common/config_paths.hpp"
#include "common/output.hpp"
#include "validation/graph_cache.hpp"
#include "validation/leave_study_out.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::validation;

namespace {

// The rows of the shared reference CSV whose line contains one of `needles` (plus the header).
std::vector<ReferenceRow> cut(const std::vector<std::string>& needles, int max_per_needle,
                              const std::string& csv = "published_calibration.csv") {
  std::ifstream in(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/" + csv);
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

TEST_CASE("leave one study out: a profile's new values reach the profiles that name it as base",
          "[calibrate][leave_one_study_out]") {
  // pytorch_ngc_dataloader (NGC 20.12-21.0x ResNet-50) is `base: pytorch_amp_dali` and keeps
  // every constant it does not set itself; pytorch_amp_dali's rows here are NGC 21.11 BERT's.
  // Without the BERT study the base has nothing to fit on and takes its neutral values, so the
  // ResNet-50 profile's own fit (input_cost_scale) is redone on them, although none of its rows
  // was held out: its shipped value was fitted with the base's constants, BERT included.
  const auto rows = cut({"a9e2c1d5fbf304ce4642d5b6a2f0e61cfcf1d482 (2022-03-02),a100_sxm4_80gb",
                         "resnet50v1.5/README.md@097c7ff917b7c56246590b1246a8f5bd8957c534"},
                        4, "modern_calibration.csv");
  const auto r = leave_one_study_out(rows, options());
  REQUIRE(r.size() == 2);
  const StudyHoldOut& bert = study_named(r, "NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/BERT");
  const ConstantSetRound& base = set_named(bert, "framework pytorch_amp_dali");
  CHECK(base.action == "unfitted");
  const ConstantSetRound& child = set_named(bert, "framework pytorch_ngc_dataloader");
  CHECK(child.action == "refit");
  CHECK(child.rows == 4);
  REQUIRE(child.params.size() == 1);
  CHECK(child.params[0].key == "input_cost_scale");

  // Holding out the ResNet-50 study leaves the base's fit as it is: it has no row there.
  const StudyHoldOut& rn = study_named(r, "NVIDIA/DeepLearningExamples PyTorch/Classification");
  CHECK(set_named(rn, "framework pytorch_amp_dali").action == "unchanged");
  CHECK(set_named(rn, "framework pytorch_ngc_dataloader").action == "unfitted");
}

TEST_CASE("leave one study out: held-out rows of a profile take its base's values of the round",
          "[calibrate][leave_one_study_out]") {
  // Study X holds four pytorch_ngc_dataloader rows (ResNet-50) and two of its base's (BERT);
  // study Y two more BERT rows. Without X the base is refitted on Y's rows and the child has
  // none left (its declared default), and X's ResNet-50 rows must be predicted with both: the
  // base's values fitted without X, not the shipped ones fitted with it.
  const std::string path = (std::filesystem::temp_directory_path() / "xpusim_loso_base.csv").string();
  {
    std::ifstream in(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/modern_calibration.csv");
    std::ofstream out(path);
    std::string line;
    std::getline(in, line);
    out << line << "\n";
    const std::string bert = "a9e2c1d5fbf304ce4642d5b6a2f0e61cfcf1d482 (2022-03-02),a100_sxm4_80gb";
    const std::string resnet = "097c7ff917b7c56246590b1246a8f5bd8957c534";
    std::vector<std::string> r, b;
    while (std::getline(in, line)) {
      if (line.find(resnet) != std::string::npos && r.size() < 4) r.push_back(line.substr(line.find(',')));
      if (line.find(bert) != std::string::npos && b.size() < 4) b.push_back(line.substr(line.find(',')));
    }
    REQUIRE(r.size() == 4);
    REQUIRE(b.size() == 4);
    for (const auto& x : r) out << "study X" << x << "\n";  // first: the first held-out errors are these
    out << "study X" << b[0] << "\n" << "study X" << b[1] << "\n";
    out << "study Y" << b[2] << "\n" << "study Y" << b[3] << "\n";
  }
  const auto rows = read_reference_csv(path);
  const auto r = leave_one_study_out(rows, options());
  const StudyHoldOut& x = study_named(r, "study X");
  const ConstantSetRound& base = set_named(x, "framework pytorch_amp_dali");
  REQUIRE(base.action == "refit");
  const ConstantSetRound& child = set_named(x, "framework pytorch_ngc_dataloader");
  REQUIRE(child.action == "unfitted");
  REQUIRE(x.held_out_errors_pct.size() == 6);

  // The same four rows validated by hand: the base's refitted values for the keys the child's
  // file does not set, then the child's own.
  const YAML::Node own = YAML::LoadFile(config_dir() + "/frameworks/pytorch_ngc_dataloader.yaml");
  std::vector<std::string> ov, child_only;
  for (const auto& p : base.params)
    if (!own[p.key]) ov.push_back("framework." + p.key + "=" + fmt_g(p.fitted, 17));
  REQUIRE(!ov.empty());
  for (const auto& p : child.params) child_only.push_back("framework." + p.key + "=" + fmt_g(p.fitted, 17));
  ov.insert(ov.end(), child_only.begin(), child_only.end());
  std::vector<ReferenceRow> resnet(rows.begin(), rows.begin() + 4);
  auto errors = [&](const std::vector<std::string>& overrides) {
    ValidateOptions vo;
    vo.predict = options().predict;
    for (const auto& d : {std::string("a100_sxm4_80gb"), std::string("v100_sxm2_16gb"),
                          std::string("v100_sxm2_32gb"), vo.baseline_device})
      vo.overrides[d] = overrides;
    std::vector<double> e;
    for (const auto& row : validate_rows(resnet, vo).rows) e.push_back(row.error_pct.value_or(1e9));
    return e;
  };
  const std::vector<double> expected = errors(ov);
  const std::vector<double> shipped_base = errors(child_only);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(x.held_out_errors_pct[i] == Approx(expected[i]).margin(1e-9));
    CHECK(x.held_out_errors_pct[i] != Approx(shipped_base[i]).epsilon(1e-6));  // the base's values matter
  }
}
