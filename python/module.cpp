// xpusim._core, the compiled part of the `xpusim` Python package (python/xpusim/__init__.py):
// predict(), graph(), plan(), list(), sweep(), systolic(), calibrate(), run() and the compare/validate documents
// over the same library calls as the CLI, returning the JSON documents the CLI prints
// (schema_version and xpusim_version included where the CLI prints them), converted to dicts
// and lists. Bad input raises xpusim.Error (a ValueError) with the CLI's message text; a field
// error raises xpusim.FieldError (an Error) naming the Python keyword (`batch: must be > 0`,
// .field = "batch"); UnavailableError raises xpusim.UnavailableError (an Error and a
// RuntimeError). The wrappers with docstrings and keyword checks are python/xpusim/__init__.py. The layer above cli/ in docs/architecture.md terms:
// it calls every layer below and nothing includes it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/config_paths.hpp"
#include "common/records.hpp"
#include "common/suggest.hpp"
#include "common/version.hpp"
#include "compare/compare.hpp"
#include "compare/study.hpp"
#include "costmodel/listings.hpp"
#include "costmodel/plan_document.hpp"
#include "models/dtype.hpp"
#include "models/training.hpp"
#include "models/graph_record.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "predict/llm_plan.hpp"
#include "sim/tpu/scalesim_document.hpp"
#include "sweep/results.hpp"
#include "sweep/runner.hpp"
#include "predict/predict.hpp"
#include "models/onnx/onnx_import.hpp"
#include "validation/calibrate_run.hpp"
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
      return l;
    }
    case json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return d;
    }
    default: return py::none();
  }
}

// Library fields that are not the Python keyword of the same name.
std::string keyword_for_field(const std::string& field) {
  if (field == "set") return "overrides";
  if (field == "pp_virtual_stages") return "virtual_stages";
  return field;
}

py::object predict_py(const std::string& model, const std::string& device, int count, const std::string& system,
                      int64_t batch, const std::string& precision, std::optional<std::string> framework,
                      const std::string& data, const std::string& engine, const std::string& task,
                      const std::vector<std::string>& overrides, int64_t global_batch) {
  xpusim::PredictRequest r;
  r.model = model;
  r.global_batch = global_batch;
  r.task = xpusim::task_from_name(task);
  r.batch_per_device = batch;
  r.precision = precision;
  if (!xpusim::parse_data_source(data, r.data)) throw xpusim::FieldError("data", "'" + data + "' is not synthetic or real");
  r.placement.device = device;
  r.placement.count = count;
  r.placement.system = system;
  r.placement.framework = framework.value_or("");
  r.placement.overrides = overrides;
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

// The document of `xpusim plan --format json` (costmodel/plan_document.hpp builds both).
py::object plan_py(const std::string& model, const std::string& cluster, int gpus, int64_t global_batch, int64_t seq_len,
                   const std::string& device, const std::string& precision, const std::string& framework,
                   const std::vector<std::string>& overrides, int top, const std::string& offer, const std::string& tier,
                   double tokens, double goodput, int tp, int pp, int virtual_stages, int cp, int ep,
                   long long micro_batch, const std::string& sharding, const std::string& recompute,
                   std::optional<bool> sequence_parallel, bool tp_across_nodes, const std::string& offer_provider,
                   const std::string& offer_region) {
  // The ranges the CLI's flags check, as field errors here.
  if (top < 1) throw xpusim::FieldError("top", "must be >= 1, got " + std::to_string(top));
  if (!(goodput >= 0.01 && goodput <= 1)) throw xpusim::FieldError("goodput", "must be in [0.01, 1], got " + std::to_string(goodput));
  if (tokens < 0) throw xpusim::FieldError("tokens", "must be >= 0 (0 = 20 per parameter)");
  xpusim::LlmPlanRequest req;
  req.model = model;
  req.cluster = cluster;
  req.gpus = gpus;
  req.global_batch = global_batch;
  req.seq_len = seq_len;
  req.device = device;
  req.precision = precision;
  req.framework = framework;
  req.overrides = overrides;
  req.tp_across_nodes = tp_across_nodes;
  xpusim::cost::PlanFixedNames n;
  n.tp = tp, n.pp = pp, n.virtual_stages = virtual_stages, n.cp = cp, n.ep = ep, n.micro_batch = micro_batch;
  n.sharding = sharding, n.recompute = recompute;
  if (sequence_parallel) n.sequence_parallel = *sequence_parallel ? "true" : "false";
  json j;
  {
    py::gil_scoped_release release;
    xpusim::cost::apply_plan_fixed(n, req);
    const xpusim::LlmPlanResult r = xpusim::plan_llm(req);
    const xpusim::cost::PlanPrice price =
        xpusim::cost::plan_price(offer, tier, r.device, {offer_provider, offer_region, r.gpus, r.devices_per_node});
    j = xpusim::cost::plan_document(r, price, top, tokens, goodput);
  }
  return to_python(j);
}

// The document of `xpusim list KIND --format json` ({"KIND": [rows]} with schema_version) and
// the stale-price warnings the CLI prints on stderr (xpusim.list issues them as warnings).
py::tuple list_py(const std::string& kind, const std::string& catalog, const std::string& region) {
  xpusim::cost::ListingOptions o;
  o.catalog = catalog, o.region = region;
  xpusim::cost::Listing l = xpusim::cost::list_rows(kind, o);
  return py::make_tuple(to_python(xpusim::output_document({{kind, l.rows}})), py::cast(l.warnings));
}

// `xpusim sweep SWEEP -o OUTPUT --summary json`: the rows go to OUTPUT (.csv or .jsonl), the
// summary document comes back. Workers are forked processes, as on the CLI.
py::object sweep_py(const std::string& sweep_file, const std::string& output, int jobs, bool resume) {
  const int max_jobs = xpusim::sweep::max_jobs();
  if (jobs < 1 || jobs > max_jobs)
    throw xpusim::FieldError("jobs", "must be in [1, " + std::to_string(max_jobs) + "], got " + std::to_string(jobs));
  auto ends_with = [&](const std::string& suf) {
    return output.size() >= suf.size() && output.compare(output.size() - suf.size(), suf.size(), suf) == 0;
  };
  xpusim::sweep::RunOptions o;
  o.output = output;
  if (ends_with(".csv")) o.format = xpusim::sweep::RowFormat::csv;
  else if (ends_with(".jsonl")) o.format = xpusim::sweep::RowFormat::jsonl;
  else throw xpusim::FieldError("output", "'" + output + "' ends in neither .csv nor .jsonl");
  o.resume = resume;
  o.jobs = jobs;
  std::ostringstream os;
  {
    py::gil_scoped_release release;
    xpusim::sweep::SweepSpec s = xpusim::sweep::load_sweep(xpusim::resolve_config("sweeps", sweep_file));
    xpusim::sweep::run_sweep(s, o);
    std::vector<xpusim::sweep::PointResult> rows = xpusim::sweep::read_rows(s, o.output, o.format);
    xpusim::sweep::print_summary(os, s, rows, xpusim::sweep::summarize(s, rows), true);
  }
  return to_python(json::parse(os.str()));
}

// `xpusim systolic --format json`: a topology CSV or a zoo model's layers on one array.
py::object systolic_py(const std::string& topology, const std::string& model, int64_t array_rows, int64_t array_cols,
                       const std::string& dataflow) {
  if (topology.empty() == model.empty()) throw xpusim::FieldError("topology", "give exactly one of topology or model");
  json j;
  {
    py::gil_scoped_release release;
    const auto layers = topology.empty() ? xpusim::tpu::topology_of_model(model) : xpusim::tpu::read_topology_csv(topology);
    j = xpusim::output_document(xpusim::tpu::systolic_document(layers, array_rows, array_cols, dataflow));
  }
  return to_python(j);
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

// `xpusim calibrate ... --format json` (validation/calibrate_run.hpp runs both, and checks every
// field there, so the CLI's rules hold here): the fit's document; `out` writes the overlay,
// whose apply hint is in Python's words. `systems` and `objective` are --system and --objective.
py::object calibrate_py(const std::string& reference, const std::string& device, const std::string& framework,
                        const std::vector<std::string>& architectures, const std::vector<std::string>& systems,
                        const std::string& objective, const std::string& leave_one_out, const std::string& out,
                        const std::vector<std::string>& overrides, int max_evaluations, bool progress) {
  xpusim::validation::CalibrateRequest r;
  r.reference = reference, r.device = device, r.framework = framework, r.architectures = architectures;
  r.systems = systems, r.objective = objective;
  r.leave_one_out = leave_one_out, r.out = out, r.overrides = overrides;
  r.max_evaluations = max_evaluations;
  r.progress = progress;
  r.apply_hint = [](const xpusim::validation::FitResult& fit) {
    // A framework fit's constants are the profile's (framework.KEY).
    const std::string& profile = fit.framework;
    std::string h = profile.empty() ? "xpusim.predict(device=\"" + fit.device + "\", overrides=["
                                    : "xpusim.predict(device=DEVICE, framework=\"" + profile + "\", overrides=[";
    bool first = true;
    for (const auto& kv : xpusim::validation::fitted_overrides_short(fit.params)) {
      h += std::string(first ? "\"" : ", \"") + (profile.empty() ? "" : "framework.") + kv + "\"";
      first = false;
    }
    return h + "])";
  };
  std::ostringstream os;
  try {
    py::gil_scoped_release release;  // a fit predicts each row hundreds of times
    xpusim::validation::run_calibration(r, os, xpusim::OutputFormat::json);
  } catch (const xpusim::FieldError& e) {
    // The request's list fields are the plural keywords here (the CLI's comma-separated flags).
    if (e.field() == "architecture") throw xpusim::FieldError("architectures", e.message());
    if (e.field() == "system") throw xpusim::FieldError("systems", e.message());
    throw;
  }
  return to_python(json::parse(os.str()));
}

// `xpusim run --backend BACKEND ... --format json`: steps executed for real and timed.
py::object run_py(const std::string& model, const std::string& backend, int64_t batch, int steps, int warmup,
                  const std::string& precision, int gpus, int threads, uint64_t seed, const std::string& optimizer,
                  const std::string& task, const std::vector<std::string>& input_shapes, bool progress) {
  if (backend != "cpu" && backend != "cuda")
    throw xpusim::FieldError("backend", "'" + backend + "' is not a real backend (cpu or cuda)");
  xpusim::PredictRequest r;
  r.model = model;
  for (const auto& sh : input_shapes) xpusim::parse_input_shape(sh, r.onnx);
  r.engine = backend;
  r.placement.device = backend;
  r.placement.count = gpus;
  r.batch_per_device = batch;
  r.steps = steps;
  r.warmup = warmup;
  r.precision = precision;
  r.threads = threads;
  r.seed = seed;
  r.optimizer = optimizer;
  r.task = xpusim::task_from_name(task);
  r.progress = progress;
  xpusim::StepReport rep;
  try {
    py::gil_scoped_release release;
    rep = xpusim::predict(r);
  } catch (const xpusim::FieldError& e) {
    // run's own keywords for the request's fields (the CLI aliases count to --gpus likewise).
    if (e.field() == "count") throw xpusim::FieldError("gpus", e.message());
    if (e.field() == "engine" || e.field() == "device") throw xpusim::FieldError("backend", e.message());
    throw;
  }
  return to_python(xpusim::output_document(rep.to_record()));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "xpusim: accelerator simulator and cost model for ML training";
  m.attr("__version__") = xpusim::xpusim_version();
  // xpusim.Error (a ValueError) for bad input, xpusim.FieldError (an Error) when the input is
  // one keyword, with .field naming it; xpusim.UnavailableError (an Error and a RuntimeError)
  // when an engine or device is not there. Named "xpusim.X" so tracebacks print xpusim.Error.
  static PyObject* error = PyErr_NewExceptionWithDoc(
      "xpusim.Error", "Bad input to xpusim (the CLI's exit-2 errors); a ValueError.", PyExc_ValueError, nullptr);
  static PyObject* field_error = PyErr_NewExceptionWithDoc(
      "xpusim.FieldError", "Bad value of one keyword argument; .field names the keyword.", error, nullptr);
  py::tuple unavailable_bases = py::make_tuple(py::handle(error), py::handle(PyExc_RuntimeError));
  static PyObject* unavailable = PyErr_NewExceptionWithDoc(
      "xpusim.UnavailableError", "An engine or device this build or machine lacks; an Error and a RuntimeError.",
      unavailable_bases.ptr(), nullptr);
  if (!error || !field_error || !unavailable) throw py::error_already_set();
  m.add_object("Error", py::handle(error));
  m.add_object("FieldError", py::handle(field_error));
  m.add_object("UnavailableError", py::handle(unavailable));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const xpusim::FieldError& e) {
      const std::string kw = keyword_for_field(e.field());
      py::object inst = py::reinterpret_borrow<py::object>(field_error)(kw + ": " + e.message());
      inst.attr("field") = kw;
      PyErr_SetObject(field_error, inst.ptr());
    } catch (const xpusim::UserError& e) {
      PyErr_SetString(error, e.what());
    } catch (const xpusim::UnavailableError& e) {
      PyErr_SetString(unavailable, e.what());
    }
  });
  m.def("predict", &predict_py, "Predict one training step (the StepReport as a dict, as `xpusim predict --format json`)",
        py::kw_only(), py::arg("model"), py::arg("device"), py::arg("count") = 1, py::arg("system") = "",
        py::arg("batch") = 32, py::arg("precision") = "fp32", py::arg("framework") = py::none(),
        py::arg("data") = "synthetic", py::arg("engine") = "", py::arg("task") = "train",
        py::arg("overrides") = std::vector<std::string>{}, py::arg("global_batch") = 0);
  m.def("plan", &plan_py, "The document of `xpusim plan --format json` (xpusim.plan wraps it)", py::kw_only(),
        py::arg("model"), py::arg("cluster"), py::arg("gpus") = 0, py::arg("global_batch"), py::arg("seq_len") = 0,
        py::arg("device") = "", py::arg("precision") = "mixed_bf16", py::arg("framework") = "",
        py::arg("overrides") = std::vector<std::string>{}, py::arg("top") = 10, py::arg("offer") = "",
        py::arg("tier") = "", py::arg("tokens") = 0.0, py::arg("goodput") = 1.0, py::arg("tp") = 0, py::arg("pp") = 0,
        py::arg("virtual_stages") = 0, py::arg("cp") = 0, py::arg("ep") = 0, py::arg("micro_batch") = 0,
        py::arg("sharding") = "", py::arg("recompute") = "", py::arg("sequence_parallel") = py::none(),
        py::arg("tp_across_nodes") = false, py::arg("offer_provider") = "", py::arg("offer_region") = "");
  m.def("sweep", &sweep_py, "The summary of `xpusim sweep SWEEP -o OUTPUT --summary json` (xpusim.sweep wraps it)",
        py::arg("sweep"), py::arg("output"), py::kw_only(), py::arg("jobs") = 1, py::arg("resume") = false);
  m.def("systolic", &systolic_py, "The document of `xpusim systolic --format json` (xpusim.systolic wraps it)",
        py::kw_only(), py::arg("topology") = "", py::arg("model") = "", py::arg("array_rows") = 128,
        py::arg("array_cols") = 128, py::arg("dataflow") = "ws");
  m.def("list", &list_py, "The document of `xpusim list KIND --format json` (xpusim.list wraps it)", py::arg("kind"),
        py::kw_only(), py::arg("catalog") = "", py::arg("region") = "");
  m.def("graph", &graph_py, "Totals of one training step's op graph, as `xpusim graph --totals --format json`; ops=True lists the forward ops "
        "(train=True: every op of the step), as `xpusim graph [--train] --format json`",
        py::kw_only(), py::arg("model"), py::arg("batch") = 32, py::arg("precision") = "fp32", py::arg("optimizer") = "",
        py::arg("task") = "train", py::arg("ops") = false, py::arg("train") = false);
  m.def("_compare_document", &compare_py, "The document of `xpusim compare STUDY --format json` (xpusim.compare wraps it)",
        py::arg("study"));
  m.def("_validate_document", &validate_py, "The document of `xpusim validate --format json` (xpusim.validate wraps it)", py::arg("csv_path"),
        py::kw_only(), py::arg("framework") = "");
  m.def("calibrate", &calibrate_py, "The document of `xpusim calibrate --format json` (xpusim.calibrate wraps it)",
        py::kw_only(), py::arg("reference"), py::arg("device") = "", py::arg("framework") = "",
        py::arg("architectures") = std::vector<std::string>{}, py::arg("systems") = std::vector<std::string>{},
        py::arg("objective") = "", py::arg("leave_one_out") = "", py::arg("out") = "",
        py::arg("overrides") = std::vector<std::string>{}, py::arg("max_evaluations") = 300,
        py::arg("progress") = false);
  m.def("run", &run_py, "The document of `xpusim run --format json` (xpusim.run wraps it)", py::kw_only(),
        py::arg("model"), py::arg("backend"), py::arg("batch") = 32, py::arg("steps") = 10, py::arg("warmup") = 2,
        py::arg("precision") = "fp32", py::arg("gpus") = 1, py::arg("threads") = 0, py::arg("seed") = 1,
        py::arg("optimizer") = "", py::arg("task") = "train", py::arg("input_shapes") = std::vector<std::string>{},
        py::arg("progress") = false);
  m.def("_did_you_mean", &xpusim::did_you_mean, "\"did you mean X?\" for a name, or \"\" (common/suggest.hpp)",
        py::arg("name"), py::arg("known"));
  m.def("config_dir", [] { return xpusim::config_dir(); }, "The configuration root in use");
  m.def("set_config_dir", &xpusim::set_config_dir, "Use another configuration root", py::arg("path"));
}
