#include "compare/compare_summary.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include "common/output.hpp"

namespace xpusim::cost {

namespace {

std::string hardware(const CompareRow& r) { return r.device + "|" + std::to_string(r.count) + "|" + r.system; }

// The row minimising `value` among this target's rows, and the best row on other hardware.
Pick pick(const CompareResult& r, const std::vector<int>& rows,
          const std::function<std::optional<double>(const CompareRow&)>& value) {
  Pick p;
  for (int i : rows)
    if (value(r.rows[i]) && (p.row < 0 || *value(r.rows[i]) < p.value)) {
      p.row = i;
      p.value = *value(r.rows[i]);
    }
  if (p.row < 0) return p;
  const std::string hw = hardware(r.rows[p.row]);
  for (int i : rows)
    if (i != p.row && value(r.rows[i]) && hardware(r.rows[i]) != hw &&
        (p.runner_up < 0 || *value(r.rows[i]) < p.runner_up_value)) {
      p.runner_up = i;
      p.runner_up_value = *value(r.rows[i]);
    }
  return p;
}

std::string usd(double v) { return "$" + fmt_fixed(v, 2); }
std::string hours(double v) { return fmt_sig(v, 3) + " h"; }

// "1.32x" for ratios, with "tied" when they agree to 0.5 %.
std::string ratio(double worse, double better) {
  if (better <= 0) return "";
  double x = worse / better;
  return x < 1.005 ? "tied" : fmt_fixed(x, 2) + "x";
}

}  // namespace

std::string bound_phrase(const std::string& b) {
  static const std::map<std::string, std::string> words = {
      {"compute", "compute (ALU/tensor-core FLOPs)"},
      {"mxu", "the MXU (matrix units: compute)"},
      {"memory", "memory bandwidth"},
      {"hbm", "HBM bandwidth (memory)"},
      {"vector", "the vector unit"},
      {"infeed", "infeed (host-to-device input)"},
      {"input_pipeline", "the input pipeline (host decode and augmentation: infeed)"},
      {"communication", "gradient all-reduce (interconnect)"},
      {"ici", "the inter-chip interconnect (all-reduce)"},
      {"overhead", "per-step framework overhead"},
      {"gpu", "the GPU (measured busy time)"},
      {"measured", "nothing modelled (measured)"}};
  auto it = words.find(b);
  return it == words.end() ? b : it->second;
}

double billing_rounding_usd(const CompareRow& r) {
  double extra = 0;
  if (r.billed_hours && r.hours_to_target && r.price_usd_per_h)
    extra = std::max(0.0, (*r.billed_hours - *r.hours_to_target) * *r.price_usd_per_h);
  return extra + 0.005;
}

std::vector<TargetConclusion> conclude(const CompareResult& r) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> by_target;
  for (int i = 0; i < static_cast<int>(r.rows.size()); ++i) {
    if (!by_target.count(r.rows[i].target)) order.push_back(r.rows[i].target);
    by_target[r.rows[i].target].push_back(i);
  }
  std::vector<TargetConclusion> out;
  for (const auto& t : order) {
    const auto& rows = by_target[t];
    TargetConclusion c;
    c.target = t;
    c.rows = static_cast<int>(rows.size());
    c.cheapest = pick(r, rows, [](const CompareRow& x) { return x.cost_to_target_usd; });
    c.fastest = pick(r, rows, [](const CompareRow& x) { return x.hours_to_target; });
    std::map<std::string, int> why_not;
    std::vector<std::string> why_order;
    for (int i : rows)
      if (!r.rows[i].cost_to_target_usd && !r.rows[i].hours_to_target) {
        std::string e = r.rows[i].message().empty() ? "no price or time" : r.rows[i].message();
        if (!why_not.count(e)) why_order.push_back(e);
        ++why_not[e];
      }
    for (const auto& e : why_order) c.not_costed.push_back({e, why_not[e]});

    // Why: the fastest is bound by its step's bottleneck; the cheapest by that bottleneck and
    // by how its price per hour and its hours compare with the runner-up's.
    auto step_bound = [&](int i) {
      const CompareRow& x = r.rows[i];
      if (x.bottleneck.empty()) return std::string("throughput given by the study (no bottleneck modelled)");
      return "step bound by " + bound_phrase(x.bottleneck);
    };
    if (c.fastest.row >= 0) c.fastest.why = step_bound(c.fastest.row);
    if (c.cheapest.row >= 0 && c.cheapest.runner_up >= 0)
      c.cheapest.rounding_usd = std::max(billing_rounding_usd(r.rows[c.cheapest.row]),
                                         billing_rounding_usd(r.rows[c.cheapest.runner_up]));
    if (c.cheapest.row >= 0) {
      const CompareRow& a = r.rows[c.cheapest.row];
      std::string why = step_bound(c.cheapest.row);
      // A tie within billing rounding needs no reason why one row won.
      const bool tied = c.cheapest.runner_up >= 0 && c.cheapest.runner_up_value - c.cheapest.value <= c.cheapest.rounding_usd;
      if (!tied && c.cheapest.runner_up >= 0 && a.price_usd_per_h && a.hours_to_target) {
        const CompareRow& b = r.rows[c.cheapest.runner_up];
        if (b.price_usd_per_h && b.hours_to_target) {
          bool cheaper_h = *a.price_usd_per_h < *b.price_usd_per_h;
          bool faster = *a.hours_to_target < *b.hours_to_target;
          std::string prices = usd(*a.price_usd_per_h) + "/h vs " + usd(*b.price_usd_per_h) + "/h";
          if (cheaper_h && faster) why += "; both faster and cheaper per hour (" + prices + ")";
          else if (cheaper_h) {
            std::string x = ratio(*a.hours_to_target, *b.hours_to_target);
            why += "; won on price (" + prices + ")" + (x == "tied" ? "" : ", though " + x + " slower");
          } else if (faster) {
            why += "; won on speed (" + ratio(*b.hours_to_target, *a.hours_to_target) +
                   " faster) despite a higher price (" + prices + ")";
          }
          else why += "; billing rounds in its favour (" + prices + ")";
        }
      }
      c.cheapest.why = why;
    }
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> conclusion_lines(const CompareResult& r, const std::vector<TargetConclusion>& cs,
                                          bool markdown) {
  std::vector<std::string> out;
  const std::string item = markdown ? "- " : "  ";
  auto name = [&](int i) { return markdown ? "`" + r.rows[i].option + "`" : r.rows[i].option; };
  for (const auto& c : cs) {
    const CompareRow* any = nullptr;
    for (const auto& x : r.rows)
      if (x.target == c.target) any = &x;
    std::string head = "Target " + c.target;
    if (any && any->target_accuracy > 0)
      head += " (" + any->model + " to " + fmt_sig(any->target_accuracy * 100, 3) + "% " + any->target_metric + ")";
    out.push_back(markdown ? "**" + head + "**" : head + ":");
    if (c.cheapest.row < 0 && c.fastest.row < 0) out.push_back(item + "no option reaches it (reasons below).");
    if (c.cheapest.row >= 0) {
      std::string s = item + "cheapest: " + name(c.cheapest.row) + ", " + usd(c.cheapest.value);
      if (c.cheapest.runner_up >= 0) {
        std::string x = ratio(c.cheapest.runner_up_value, c.cheapest.value);
        // A gap billing rounding can make (a minimum or a started minute) is no finding.
        const bool within_rounding = c.cheapest.runner_up_value - c.cheapest.value <= c.cheapest.rounding_usd;
        if (within_rounding && x != "tied")
          s += ", tied within billing rounding (" + usd(c.cheapest.rounding_usd) + ") with ";
        else
          s += x == "tied" ? ", tied with " : ", " + x + " cheaper than ";
        s += name(c.cheapest.runner_up) + " (" + usd(c.cheapest.runner_up_value) + ")";
      } else {
        s += " (no other hardware reaches it)";
      }
      out.push_back(s + "; " + c.cheapest.why + ".");
    }
    if (c.fastest.row >= 0) {
      std::string s = item + "fastest:  " + name(c.fastest.row) + ", " + hours(c.fastest.value);
      if (c.fastest.runner_up >= 0) {
        std::string x = ratio(c.fastest.runner_up_value, c.fastest.value);
        s += (x == "tied" ? ", tied with " : ", " + x + " faster than ") + name(c.fastest.runner_up) + " (" +
             hours(c.fastest.runner_up_value) + ")";
      } else {
        s += " (no other hardware reaches it)";
      }
      out.push_back(s + "; " + c.fastest.why + ".");
    }
    for (const auto& [why, n] : c.not_costed)
      out.push_back(item + "not costed: " + std::to_string(n) + " of " + std::to_string(c.rows) + " rows: " + why +
                    (why.empty() || why.back() == '.' ? "" : "."));
    out.push_back("");  // a blank line between targets (and after a Markdown list)
  }
  return out;
}

}  // namespace xpusim::cost
