// xpusim._core, the compiled part of the `xpusim` Python package (python/xpusim/__init__.py):
// predict(), graph() and the compare/validate documents over the same library calls as the
// CLI, returning the JSON documents the CLI prints (schema_version and xpusim_version
// included), converted to dicts and lists. Bad input raises xpusim.Error (a ValueError) with the CLI's message text,
// a field error naming the Python keyword (`batch: must be > 0`); UnavailableError raises
// xpusim.UnavailableError (a RuntimeError). The layer above cli/ in docs/architecture.md terms:
// it calls every layer below and nothing includes it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <sstream>
#include <string>

#include "common/error.hpp"
#include "common/config_paths.hpp"
#include "common/records.hpp"
#include "common/version.hpp"
#include "compare/compare.hpp"
#include "compare/study.hpp"
#include "models/dtype.hpp"
#include "models/training.hpp"
#include "models/graph_record.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace {

// nlohmann::json -> Python objects (dict, list, int, float, str, bool, None).
py::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return py::none();
    case json::value_t::boolean: return py::bool_(j.get<bool>());
    case json::value_t::number_integer: return py::int_(j.get<int64_t>());
    case json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
    case json::value_t::number_float: return py::float_(j.get<double>());
    case json::value_t::string: return py::str(j.get<std::string>());
    case json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(to_python(v));
      return std::move(l);
    }
    case json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return std::move(d);
    }
    default: return py::none();
  }
}

// Library fields that are not the Python keyword of the same name.
std::string keyword_for_field(const std::string& field) {
  if (field == "set") return "overrides";
  return field;
}

py::object predict_py(const std::string& model, const std::string& device, int count, const std::string& system,
                      int64_t batch, const std::string& precision, std::optional<std::string> framework,
                      const std::string& data, const std::string& engine, const std::string& task) {
  xpusim::PredictRequest r;
  r.model = model;
  r.task = xpusim::task_from_name(task);
  r.batch_per_device = batch;
  r.precision = precision;
  if (!xpusim::parse_data_source(data, r.data)) throw xpusim::FieldError("data", "'" + data + "' is not synthetic or real");
  r.placement.device = device;
  r.placement.count = count;
  r.placement.system = system;
  r.placement.framework = framework.value_or("");
  r.engine = engine;
  xpusim::StepReport rep;
  {
    py::gil_scoped_release release;  // simulations take seconds; let other Python threads run
    rep = xpusim::predict(r);
  }
  return to_python(xpusim::output_document(rep.to_record()));
}

py::object graph_py(const std::string& model, int64_t batch, const std::string& precision, const std::string& optimizer,
                    const std::string& task, bool ops, bool train) {
  if (batch <= 0) throw xpusim::FieldError("batch", "must be > 0, got " + std::to_string(batch));
  xpusim::GraphOptions o;
  o.batch = batch;
  if (!xpusim::parse_precision(precision, o.precision))
    throw xpusim::FieldError("precision",
                             "unknown precision '" + precision + "' (one of " + xpusim::precision_choices() + ")");
  xpusim::ModelSpec spec = xpusim::find_model(model);
  std::string opt = optimizer.empty() ? spec.optimizer : optimizer;
  if (!xpusim::parse_optimizer(opt, o.training_options.optimizer))
    throw xpusim::FieldError("optimizer", "unknown optimizer '" + opt + "' (sgd_momentum|adam)");
  o.training = true;
  o.task = xpusim::task_from_name(task);
  xpusim::OpGraph g = xpusim::build_graph(spec, o);
  // The same document as `xpusim graph [--totals] --format json` (ops: [] for --totals).
  json j = xpusim::graph_summary_record(g, spec.name, o);
  j["ops"] = ops || train ? xpusim::graph_op_records(g, train) : json::array();
  return to_python(xpusim::output_document(j));
}

// The study's JSON exactly as `xpusim compare STUDY --format json` prints it.
py::object compare_py(const std::string& study) {
  std::ostringstream os;
  {
    py::gil_scoped_release release;
    xpusim::cost::Study s = xpusim::cost::load_study(xpusim::resolve_config("studies", study));
    xpusim::cost::CompareResult r = xpusim::cost::run_study(s, {}, false);
    xpusim::cost::print_compare(os, r, xpusim::OutputFormat::json);
  }
  return to_python(json::parse(os.str()));
}

py::object validate_py(const std::string& csv_path, const std::string& framework) {
  json j;
  {
    py::gil_scoped_release release;
    xpusim::validation::ValidateOptions vo;
    vo.framework = framework;
    auto rows = xpusim::validation::read_reference_csv(csv_path);
    j = xpusim::output_document(xpusim::validation::validation_json(xpusim::validation::validate_rows(rows, vo, csv_path)));
  }
  return to_python(j);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "xpusim: accelerator simulator and cost model for ML training";
  m.attr("__version__") = xpusim::xpusim_version();
  static py::exception<xpusim::UserError> error(m, "Error", PyExc_ValueError);
  static py::exception<xpusim::UnavailableError> unavailable(m, "UnavailableError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const xpusim::FieldError& e) {
      error((keyword_for_field(e.field()) + ": " + e.message()).c_str());
    } catch (const xpusim::UserError& e) {
      error(e.what());
    } catch (const xpusim::UnavailableError& e) {
      unavailable(e.what());
    }
  });
  m.def("predict", &predict_py, "Predict one training step (the StepReport as a dict, as `xpusim predict --format json`)",
        py::kw_only(), py::arg("model"), py::arg("device"), py::arg("count") = 1, py::arg("system") = "",
        py::arg("batch") = 32, py::arg("precision") = "fp32", py::arg("framework") = py::none(),
        py::arg("data") = "synthetic", py::arg("engine") = "", py::arg("task") = "train");
  m.def("graph", &graph_py, "Totals of one training step's op graph, as `xpusim graph --totals --format json`; ops=True lists the forward ops "
        "(train=True: every op of the step), as `xpusim graph [--train] --format json`",
        py::kw_only(), py::arg("model"), py::arg("batch") = 32, py::arg("precision") = "fp32", py::arg("optimizer") = "",
        py::arg("task") = "train", py::arg("ops") = false, py::arg("train") = false);
  m.def("_compare_document", &compare_py, "The document of `xpusim compare STUDY --format json` (xpusim.compare wraps it)",
        py::arg("study"));
  m.def("_validate_document", &validate_py, "The document of `xpusim validate --format json` (xpusim.validate wraps it)", py::arg("csv_path"),
        py::kw_only(), py::arg("framework") = "");
  m.def("config_dir", [] { return xpusim::config_dir(); }, "The configuration root in use");
  m.def("set_config_dir", &xpusim::set_config_dir, "Use another configuration root", py::arg("path"));
}
