// The Pareto chart of a plan (llm_plan_chart.hpp), drawn with the chart module.
#include "predict/llm_plan_chart.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/svg_chart.hpp"

namespace xpusim {

std::vector<PlanChartPoint> plan_chart_points(const LlmPlanResult& r, double tokens, double goodput,
                                              double usd_per_gpu_h) {
  std::vector<PlanChartPoint> out;
  out.reserve(r.search.ranked.size());
  for (const auto& c : r.search.ranked) {
    PlanChartPoint p;
    p.gpus = r.gpus;
    const double seconds = tokens / (c.tokens_per_s * goodput);
    p.train_days = seconds / 86400.0;
    const double gpu_h = seconds / 3600.0 * r.gpus;
    p.cost = usd_per_gpu_h > 0 ? gpu_h * usd_per_gpu_h : gpu_h;
    p.label = parallel::llm_config_label(c.config);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<size_t> pareto_front(const std::vector<PlanChartPoint>& pts) {
  std::vector<size_t> idx(pts.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  // Fastest first, cheaper first among equal times: a point is on the front when it is
  // cheaper than every faster one.
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (pts[a].train_days != pts[b].train_days) return pts[a].train_days < pts[b].train_days;
    if (pts[a].cost != pts[b].cost) return pts[a].cost < pts[b].cost;
    return a < b;
  });
  std::vector<size_t> front;
  double best = INFINITY;
  for (size_t i : idx)
    if (pts[i].cost < best) {
      best = pts[i].cost;
      front.push_back(i);
    }
  return front;
}

namespace {

std::string tip(const PlanChartPoint& p, bool usd) {
  return std::to_string(p.gpus) + " GPUs, " + p.label + ": " + fmt_sig(p.train_days, 4) + " days, " +
         (usd ? "$" + fmt_int(static_cast<long long>(std::llround(p.cost))) : fmt_int(static_cast<long long>(std::llround(p.cost))) + " GPU-hours");
}

}  // namespace

std::string plan_pareto_svg(const std::string& title, const std::vector<PlanChartPoint>& pts, bool usd) {
  std::map<int, std::vector<size_t>> by_gpus;
  for (size_t i = 0; i < pts.size(); ++i) by_gpus[pts[i].gpus].push_back(i);
  // Pixel buckets in log space over the data's range (the plot is ~550 x 330 px).
  double xmn = INFINITY, xmx = -INFINITY, ymn = INFINITY, ymx = -INFINITY;
  for (const auto& p : pts) {
    if (!(p.train_days > 0) || !(p.cost > 0)) continue;
    xmn = std::min(xmn, std::log10(p.train_days)), xmx = std::max(xmx, std::log10(p.train_days));
    ymn = std::min(ymn, std::log10(p.cost)), ymx = std::max(ymx, std::log10(p.cost));
  }
  const double bx = std::max(xmx - xmn, 1e-9) / 550.0, by = std::max(ymx - ymn, 1e-9) / 330.0;
  std::vector<SvgSeries> series;
  size_t colour = 0;
  for (const auto& [g, list] : by_gpus) {
    SvgSeries s;
    s.label = std::to_string(g) + " GPUs";
    s.colour = palette_colour(colour++);
    std::set<std::pair<long long, long long>> seen;
    for (size_t i : list) {
      const auto& p = pts[i];
      if (p.train_days > 0 && p.cost > 0) {
        const auto key = std::make_pair(std::llround((std::log10(p.train_days) - xmn) / bx),
                                        std::llround((std::log10(p.cost) - ymn) / by));
        if (!seen.insert(key).second) continue;
      }
      s.points.emplace_back(p.train_days, p.cost);
      s.tips.push_back(tip(p, usd));
    }
    series.push_back(std::move(s));
  }
  // The palette holds 8: 7 GPU counts and the front. Callers ask for at most 7 counts.
  if (series.size() > kMaxSeriesPerChart - 1) series.resize(kMaxSeriesPerChart - 1);
  SvgSeries front;
  front.label = "Pareto front";
  front.colour = "#000000";
  front.line = true;
  front.markers = true;  // black marks on the front: their tooltips name the configuration
  for (size_t i : pareto_front(pts)) {
    front.points.emplace_back(pts[i].train_days, pts[i].cost);
    front.tips.push_back("Pareto front: " + tip(pts[i], usd));
  }
  series.push_back(std::move(front));
  SvgChart c;
  c.title = title;
  c.x_label = "time to train (days)";
  c.y_label = usd ? "cost to train (US$)" : "GPU time to train (GPU-hours)";
  c.log_x = c.log_y = true;
  c.width = 720, c.height = 460;
  return svg_xy_chart(c, series);
}

}  // namespace xpusim
