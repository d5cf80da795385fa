// The field tables of a sweep (sweep_spec.hpp): the request fields an axis may set on a predict
// point, one line each (plan points: plan_point.cpp), how an assignment applies, and the result
// fields constraints and objectives may name. Apart from the YAML loading of sweep_spec.cpp.
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/dtype.hpp"
#include "models/zoo.hpp"
#include "sweep/plan_point.hpp"
#include "sweep/sweep_spec.hpp"

namespace xpusim::sweep {

long long parse_axis_integer(const std::string& field, const std::string& v) {
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw FieldError(field, "'" + v + "' is not an integer");
  return x;
}

const char* point_kind_name(PointKind k) { return k == PointKind::plan ? "plan" : "predict"; }

// The request fields a sweep can vary: one line each. A new axis (a framework, a dataset) is
// one more line here; everything else (columns, checks, output) follows from the table.
const std::vector<AxisField>& axis_fields(PointKind k) {
  if (k == PointKind::plan) return plan_axis_fields();
  static const std::vector<AxisField> fields = {
      {"device", "device name (configs/devices/) or YAML path", false,
       [](PointRequest& r, const std::string& v) { r.predict.placement.device = v; }},
      {"system", "system (configs/systems/); default: the device's", false,
       [](PointRequest& r, const std::string& v) { r.predict.placement.system = v; }},
      {"count", "devices: GPUs, TPU cores or vCPUs", true,
       [](PointRequest& r, const std::string& v) { r.predict.placement.count = int(parse_axis_integer("count", v)); }},
      {"model", "zoo model name or YAML path", false,
       [](PointRequest& r, const std::string& v) { r.predict.model = v; }},
      {"batch", "samples per device", true,
       [](PointRequest& r, const std::string& v) { r.predict.batch_per_device = parse_axis_integer("batch", v); }},
      {"precision", precision_choices(), false, [](PointRequest& r, const std::string& v) { r.predict.precision = v; }},
      {"task", task_choices(), false, [](PointRequest& r, const std::string& v) { r.predict.task = task_from_name(v); }},
      {"framework", "framework profile (configs/frameworks/) or a name it lists", false,
       [](PointRequest& r, const std::string& v) { r.predict.placement.framework = v; }},
      {"data", "synthetic | real", false,
       [](PointRequest& r, const std::string& v) {
         if (!parse_data_source(v, r.predict.data)) throw FieldError("data", "'" + v + "' is not synthetic or real");
       }},
      {"offer", "price offer id (configs/pricing/: catalog/name), or cheapest (the lowest USD/h that holds the placement)", false,
       [](PointRequest& r, const std::string& v) { r.offer = v; }},
      {"pricing", cost::tier_choices(), false, [](PointRequest& r, const std::string& v) { r.pricing = v; }},
      {"offer_provider", "offer: cheapest: only this provider's offers (aws, gcp, ...)", false,
       [](PointRequest& r, const std::string& v) { r.offer_provider = v; }},
      {"offer_region", "offer: cheapest: only offers in this region", false,
       [](PointRequest& r, const std::string& v) { r.offer_region = v; }},
      // The input is named apart from the result field power_w (the power the energy used, as in
      // compare's rows), so a row has one column of each.
      {"option_power_w", "W, power while training, as a study option's power_w (default: the modelled power, else the offer's)", false,
       [](PointRequest& r, const std::string& v) {
         double w = 0;
         try {
           size_t used = 0;
           w = std::stod(v, &used);
           if (used != v.size()) throw std::invalid_argument(v);
         } catch (const std::exception&) {
           throw FieldError("option_power_w", "'" + v + "' is not a number");
         }
         // A negative or NaN power made energy and kWh cost negative or NaN without a word.
         if (!(w > 0 && w <= 1e7)) throw FieldError("option_power_w", "'" + v + "' is not a power in (0, 1e7] W");
         r.power_w = w;
       }},
  };
  return fields;
}

void apply_assignment(PointRequest& r, const std::string& key, const std::string& value, PointKind k) {
  if (key.rfind(kSetPrefix, 0) == 0) {
    // Plan points: KEY on the device, framework.KEY, cluster.KEY, as plan's --set.
    (k == PointKind::plan ? r.plan.overrides : r.predict.placement.overrides)
        .push_back(key.substr(std::string(kSetPrefix).size()) + "=" + value);
    return;
  }
  for (const auto& f : axis_fields(k))
    if (f.key == key) {
      f.apply(r, value);
      return;
    }
  throw InternalError("sweep: unchecked field '" + key + "'");
}


const std::vector<ResultField>& result_fields(PointKind k) {
  if (k == PointKind::plan) return plan_result_fields();
  static const std::vector<ResultField> fields = {
      {"step_time_s", false, "s, one training step", "step time (s)"},
      {"throughput_samples_per_s", true, "samples/s, whole job", "throughput (samples/s)"},
      {"global_batch", true, "samples per step, all devices", "global batch (samples)"},
      {"memory_bytes", false, "bytes per device", "memory per device (bytes)"},
      {"price_usd_per_h", false, "USD/h of the offer", "price (USD/h)"},
      {"samples_per_s_per_usd_per_h", true, "samples/s per USD/h", "throughput per price ((samples/s) per USD/h)"},
      {"epochs_to_target", false, "epochs", "epochs to the target (epochs)"},
      {"hours_to_target", false, "h of training to the target", "time to the target (h)"},
      {"cost_to_target_usd", false, "USD billed to the target", "cost to the target (USD)"},
      {"power_w", false, "W, power the energy uses: option_power_w, else the modelled power (docs/power.md), else the offer's",
       "power (W)"},
      {"energy_kwh", false, "kWh to the target", "energy to the target (kWh)"},
  };
  return fields;
}

const ResultField* find_result_field(const std::string& key, PointKind k) {
  for (const auto& f : result_fields(k))
    if (f.key == key) return &f;
  return nullptr;
}

const std::vector<std::string>& text_result_fields(PointKind k) {
  static const std::vector<std::string> none;
  return k == PointKind::plan ? plan_text_fields() : none;
}

}  // namespace xpusim::sweep
