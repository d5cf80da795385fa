#include "common/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/output.hpp"

namespace xpusim {

namespace {

std::string f2(double v) { return fmt_fixed(v, 2); }  // SVG coordinates

std::string tick_label(double v) {
  char buf[32];
  double a = std::fabs(v);
  if (a != 0 && (a >= 1e5 || a < 1e-2))
    std::snprintf(buf, sizeof buf, "%.0e", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in data units (log10 units when log)
  double px0 = 0, px1 = 1;
  double map(double v) const {
    double t = log ? std::log10(v) : v;
    return px0 + (t - lo) / (hi - lo) * (px1 - px0);
  }
  // Ticks: decades on log axes, ~5 round steps on linear ones.
  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      // Decades; within less than two decades 1-2-5 steps; within less than one, ~5 round
      // linear steps (so that every chart has at least three labelled ticks).
      for (double e = std::ceil(lo - 1e-9); e <= hi + 1e-9; e += 1) out.push_back(std::pow(10.0, e));
      if (out.size() < 3) {
        out.clear();
        for (double e = std::floor(lo); e <= hi + 1e-9; e += 1)
          for (double m : {1.0, 2.0, 5.0}) {
            double v = m * std::pow(10.0, e);
            if (std::log10(v) >= lo - 1e-9 && std::log10(v) <= hi + 1e-9) out.push_back(v);
          }
      }
      if (out.size() < 3) {
        out.clear();
        double a = std::pow(10.0, lo), b = std::pow(10.0, hi);
        double raw = (b - a) / 5, mag = std::pow(10.0, std::floor(std::log10(raw))), step = mag;
        for (double m : {1.0, 2.0, 5.0, 10.0})
          if (raw <= m * mag) {
            step = m * mag;
            break;
          }
        for (double v = std::ceil(a / step) * step; v <= b * (1 + 1e-12); v += step)
          if (v > 0) out.push_back(v);
      }
      return out;
    }
    double span = hi - lo, raw = span / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
      if (raw <= m * mag) {
        step = m * mag;
        break;
      }
    for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push_back(std::fabs(v) < 1e-12 * span ? 0 : v);
    return out;
  }
};

Axis make_axis(bool log, double mn, double mx, double px0, double px1) {
  Axis a;
  a.log = log;
  if (!(mn <= mx)) mn = mx = log ? 1 : 0;
  if (log) {
    mn = std::log10(mn);
    mx = std::log10(mx);
    double pad = std::max(0.05, (mx - mn) * 0.05);
    a.lo = mn - pad;
    a.hi = mx + pad;
  } else {
    double pad = (mx - mn) * 0.08;
    if (pad == 0) pad = std::max(1.0, std::fabs(mx) * 0.1);
    a.lo = mn - pad;
    a.hi = mx + pad;
  }
  a.px0 = px0;
  a.px1 = px1;
  return a;
}

void frame(std::ostringstream& s, const SvgChart& c, double l, double t, double r, double b) {
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << c.width << "\" height=\"" << c.height
    << "\" viewBox=\"0 0 " << c.width << " " << c.height << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << c.width << "\" height=\"" << c.height << "\" fill=\"white\"/>\n";
  s << "<text x=\"" << f2(c.width / 2.0) << "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">"
    << xml_escape(c.title) << "</text>\n";
  s << "<rect x=\"" << f2(l) << "\" y=\"" << f2(t) << "\" width=\"" << f2(r - l) << "\" height=\"" << f2(b - t)
    << "\" fill=\"none\" stroke=\"#444\"/>\n";
  s << "<text class=\"x-label\" x=\"" << f2((l + r) / 2) << "\" y=\"" << f2(b + 38) << "\" text-anchor=\"middle\">"
    << xml_escape(c.x_label) << "</text>\n";
  s << "<text class=\"y-label\" transform=\"translate(14," << f2((t + b) / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
    << xml_escape(c.y_label) << "</text>\n";
}

}  // namespace


// Splits `text` at spaces into lines of at most `width` characters (a longer word is cut).
std::vector<std::string> wrap_words(const std::string& text, size_t width) {
  std::vector<std::string> out;
  std::string line, word;
  auto put = [&](const std::string& w) {
    if (!line.empty() && line.size() + 1 + w.size() > width) {
      out.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
    while (line.size() > width) {
      out.push_back(line.substr(0, width));
      line = line.substr(width);
    }
  };
  for (char ch : text) {
    if (ch == ' ') {
      if (!word.empty()) put(word);
      word.clear();
    } else {
      word += ch;
    }
  }
  if (!word.empty()) put(word);
  if (!line.empty() || out.empty()) out.push_back(line);
  return out;
}

std::string palette_colour(size_t i) {
  static const char* p[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"};
  return p[i % 8];
}

std::string svg_xy_chart(const SvgChart& chart, const std::vector<SvgSeries>& series, std::vector<std::string>* not_drawn) {
  if (series.size() > kMaxSeriesPerChart)
    throw InternalError("svg_xy_chart: " + std::to_string(series.size()) + " series in '" + chart.title +
                        "' (split_series first)");
  // The legend sits right of the plot; widen the picture (not shrink the plot) for long labels,
  // up to kMaxChartWidth (a 1,100 px window shows the whole chart); past that, labels wrap.
  size_t longest = 0;
  for (const auto& se : series) longest = std::max(longest, se.label.size());
  SvgChart c = chart;
  const double l = 70, t = 28, r = c.width - 170.0, b = c.height - 48.0;
  c.width = std::max(c.width, std::min(kMaxChartWidth, static_cast<int>(r + 40 + kLegendCharPx * static_cast<double>(longest))));
  const size_t legend_chars = static_cast<size_t>(std::max(12.0, (c.width - (r + 30) - 8) / kLegendCharPx));
  double xmn = std::numeric_limits<double>::infinity(), xmx = -xmn, ymn = xmn, ymx = -xmn;
  auto ok = [&](double x, double y) { return std::isfinite(x) && std::isfinite(y) && (!c.log_x || x > 0) && (!c.log_y || y > 0); };
  auto why_not = [&](double x, double y) -> std::string {
    if (!std::isfinite(x) || !std::isfinite(y)) return "value not finite";
    if (c.log_x && x <= 0) return "x <= 0 on a log axis";
    return "y <= 0 on a log axis";
  };
  for (const auto& s : series)
    for (auto [x, y] : s.points)
      if (ok(x, y)) {
        xmn = std::min(xmn, x); xmx = std::max(xmx, x);
        ymn = std::min(ymn, y); ymx = std::max(ymx, y);
      }
  for (const auto& [v, unused] : c.x_ticks)
    if (std::isfinite(v) && (!c.log_x || v > 0)) { xmn = std::min(xmn, v); xmx = std::max(xmx, v); }
  if (c.zero_line && !c.log_y) { ymn = std::min(ymn, 0.0); ymx = std::max(ymx, 0.0); }
  // The band's edges inside the plot, so that a reader sees where +-band ends.
  if (c.ratio_band > 0) { ymn = std::min(ymn, 1 - 1.3 * c.ratio_band); ymx = std::max(ymx, 1 + 1.3 * c.ratio_band); }
  if (c.diagonal) {  // same range on both axes so that y = x is the 45-degree line
    double mn = std::min(xmn, ymn), mx = std::max(xmx, ymx);
    xmn = ymn = mn;
    xmx = ymx = mx;
  }
  Axis ax = make_axis(c.log_x, xmn, xmx, l, r), ay = make_axis(c.log_y, ymn, ymx, b, t);
  std::ostringstream s;
  frame(s, c, l, t, r, b);
  std::vector<std::pair<double, std::string>> xt = c.x_ticks;
  if (xt.empty())
    for (double v : ax.ticks()) xt.push_back({v, tick_label(v)});
  // Labels too long for the space between ticks alternate between two rows.
  bool stagger = false;
  for (size_t i = 1; i < xt.size(); ++i) {
    double gap = std::fabs(ax.map(xt[i].first) - ax.map(xt[i - 1].first));
    if (3.2 * static_cast<double>(xt[i].second.size() + xt[i - 1].second.size()) + 6 > gap) stagger = true;
  }
  for (size_t i = 0; i < xt.size(); ++i) {
    const auto& [v, label] = xt[i];
    if (c.log_x && v <= 0) continue;
    double x = ax.map(v);
    s << "<line x1=\"" << f2(x) << "\" y1=\"" << f2(t) << "\" x2=\"" << f2(x) << "\" y2=\"" << f2(b)
      << "\" stroke=\"#ddd\"/><text x=\"" << f2(x) << "\" y=\"" << f2(b + 14 + (stagger && i % 2 ? 11 : 0))
      << "\" text-anchor=\"middle\">" << xml_escape(label) << "</text>\n";
  }
  for (double v : ay.ticks()) {
    double y = ay.map(v);
    s << "<line x1=\"" << f2(l) << "\" y1=\"" << f2(y) << "\" x2=\"" << f2(r) << "\" y2=\"" << f2(y)
      << "\" stroke=\"#ddd\"/><text x=\"" << f2(l - 4) << "\" y=\"" << f2(y + 4) << "\" text-anchor=\"end\">"
      << tick_label(v) << "</text>\n";
  }
  if (c.diagonal && std::isfinite(xmn)) {
    double lo = c.log_x ? std::pow(10.0, ax.lo) : ax.lo, hi = c.log_x ? std::pow(10.0, ax.hi) : ax.hi;
    s << "<line x1=\"" << f2(ax.map(lo)) << "\" y1=\"" << f2(ay.map(lo)) << "\" x2=\"" << f2(ax.map(hi)) << "\" y2=\""
      << f2(ay.map(hi)) << "\" stroke=\"#888\" stroke-dasharray=\"4 3\"><title>y = x</title></line>\n";
  }
  if (c.ratio_band > 0 && (!c.log_y || c.ratio_band < 1)) {
    const std::string pct = tick_label(100 * c.ratio_band);
    const double y_hi = ay.map(1 + c.ratio_band), y_lo = ay.map(1 - c.ratio_band);
    s << "<rect class=\"ratio-band\" x=\"" << f2(l) << "\" y=\"" << f2(y_hi) << "\" width=\"" << f2(r - l)
      << "\" height=\"" << f2(y_lo - y_hi) << "\" fill=\"#009E73\" fill-opacity=\"0.12\"><title>within " << pct
      << "% of the reference</title></rect>\n<line x1=\"" << f2(l) << "\" y1=\"" << f2(ay.map(1)) << "\" x2=\""
      << f2(r) << "\" y2=\"" << f2(ay.map(1)) << "\" stroke=\"#555\"><title>predicted = reference</title></line>\n";
  }
  if (c.zero_line && !c.log_y && std::isfinite(ymn))
    s << "<line x1=\"" << f2(l) << "\" y1=\"" << f2(ay.map(0)) << "\" x2=\"" << f2(r) << "\" y2=\"" << f2(ay.map(0))
      << "\" stroke=\"#888\"/>\n";
  double legend_y = t + 8;
  for (const auto& se : series) {
    s << "<g class=\"series\" data-label=\"" << xml_escape(se.label) << "\">\n";
    std::vector<std::pair<double, double>> pts;
    std::vector<std::string> tips;
    for (size_t i = 0; i < se.points.size(); ++i) {
      auto p = se.points[i];
      std::string tip = i < se.tips.size() ? se.tips[i] : se.label;
      if (ok(p.first, p.second)) {
        pts.push_back(p);
        tips.push_back(tip);
      } else if (not_drawn) {
        not_drawn->push_back(tip + ": not drawn, " + why_not(p.first, p.second));
      }
    }
    if (se.line && pts.size() > 1) {
      std::vector<std::pair<double, double>> sorted = pts;
      std::stable_sort(sorted.begin(), sorted.end(), [](auto a, auto b2) { return a.first < b2.first; });
      s << "<polyline fill=\"none\" stroke=\"" << se.colour << "\" stroke-width=\"1.5\""
        << (se.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"";
      for (size_t i = 0; i < sorted.size(); ++i)
        s << (i ? " " : "") << f2(ax.map(sorted[i].first)) << "," << f2(ay.map(sorted[i].second));
      s << "\"><title>" << xml_escape(se.label) << "</title></polyline>\n";
    }
    if (se.markers)
      for (size_t i = 0; i < pts.size(); ++i)
        s << "<circle cx=\"" << f2(ax.map(pts[i].first)) << "\" cy=\"" << f2(ay.map(pts[i].second)) << "\" r=\"3.5\" fill=\""
          << (se.dashed ? "white" : se.colour) << "\" stroke=\"" << se.colour << "\"><title>" << xml_escape(tips[i])
          << "</title></circle>\n";
    // The legend's mark is the series' own: a line for a line, a dot for dots, both for both.
    if (se.line)
      s << "<line x1=\"" << f2(r + 10) << "\" y1=\"" << f2(legend_y) << "\" x2=\"" << f2(r + 26) << "\" y2=\""
        << f2(legend_y) << "\" stroke=\"" << se.colour << "\" stroke-width=\"2\""
        << (se.dashed ? " stroke-dasharray=\"4 2\"" : "") << "/>";
    if (se.markers || !se.line)
      s << "<circle class=\"legend-marker\" cx=\"" << f2(r + 18) << "\" cy=\"" << f2(legend_y) << "\" r=\"3.5\" fill=\""
        << (se.dashed ? "white" : se.colour) << "\" stroke=\"" << se.colour << "\"><title>" << xml_escape(se.label)
        << "</title></circle>";
    const std::vector<std::string> lines = wrap_words(se.label, legend_chars);
    s << "<text x=\"" << f2(r + 30) << "\" y=\"" << f2(legend_y + 4) << "\">";
    for (size_t i = 0; i < lines.size(); ++i)
      s << "<tspan x=\"" << f2(r + 30) << "\" dy=\"" << (i ? "13" : "0") << "\">" << xml_escape(lines[i]) << "</tspan>";
    s << "</text>\n</g>\n";
    legend_y += 15 + 13.0 * static_cast<double>(lines.size() - 1);
  }
  s << "</svg>\n";
  return s.str();
}

std::string svg_bar_chart(const SvgChart& c, const std::vector<SvgBar>& bars) {
  const double l = 70, t = 28, r = c.width - 20.0, b = c.height - 60.0;
  double mn = 0, mx = 0;
  for (const auto& x : bars) { mn = std::min(mn, x.value); mx = std::max(mx, x.value); }
  if (mx == mn) mx = mn + 1;
  Axis ay = make_axis(false, mn, mx, b, t);
  if (mn >= 0) { ay.lo = 0; }
  std::ostringstream s;
  frame(s, c, l, t, r, b);
  for (double v : ay.ticks()) {
    double y = ay.map(v);
    s << "<line x1=\"" << f2(l) << "\" y1=\"" << f2(y) << "\" x2=\"" << f2(r) << "\" y2=\"" << f2(y)
      << "\" stroke=\"#ddd\"/><text x=\"" << f2(l - 4) << "\" y=\"" << f2(y + 4) << "\" text-anchor=\"end\">"
      << tick_label(v) << "</text>\n";
  }
  double slot = bars.empty() ? 1 : (r - l) / static_cast<double>(bars.size());
  for (size_t i = 0; i < bars.size(); ++i) {
    double x = l + slot * static_cast<double>(i), y0 = ay.map(0), y1 = ay.map(bars[i].value);
    s << "<rect x=\"" << f2(x + slot * 0.15) << "\" y=\"" << f2(std::min(y0, y1)) << "\" width=\"" << f2(slot * 0.7)
      << "\" height=\"" << f2(std::fabs(y1 - y0)) << "\" fill=\"" << bars[i].colour << "\"><title>"
      << xml_escape(bars[i].tip.empty() ? bars[i].label + ": " + fmt_sig(bars[i].value, 4) : bars[i].tip)
      << "</title></rect>\n";
    s << "<text x=\"" << f2(x + slot / 2) << "\" y=\"" << f2(std::min(y0, y1) - 3) << "\" text-anchor=\"middle\">"
      << f2(bars[i].value) << "</text>\n";
    s << "<text x=\"" << f2(x + slot / 2) << "\" y=\"" << f2(b + 14) << "\" text-anchor=\"middle\">"
      << xml_escape(bars[i].label) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}


std::string svg_hbar_chart(const SvgChart& chart, const std::vector<SvgBar>& bars, const std::vector<std::string>& notes) {
  std::set<std::string> series;
  for (const auto& x : bars) series.insert(x.series);
  if (series.size() > kMaxSeriesPerChart)
    throw InternalError("svg_hbar_chart: " + std::to_string(series.size()) + " series in '" + chart.title + "'");
  size_t longest = chart.bar_label_chars;
  for (const auto& x : bars) longest = std::max(longest, x.label.size());
  SvgChart c = chart;
  const double row_h = 20, note_h = 15;
  const double l = 24 + 6.5 * static_cast<double>(longest), t = 30, r = l + 360;
  const double b = t + row_h * static_cast<double>(std::max<size_t>(bars.size(), 1));
  c.width = static_cast<int>(r + 70);
  c.height = static_cast<int>(b + 44 + note_h * static_cast<double>(notes.size()) + (notes.empty() ? 0 : 8));
  for (const auto& n : notes) c.width = std::max(c.width, static_cast<int>(20 + 6.2 * static_cast<double>(n.size())));
  double mx = std::max(0.0, chart.bar_value_max);
  for (const auto& x : bars) mx = std::max(mx, x.value);
  if (mx <= 0) mx = 1;
  Axis ax = make_axis(false, 0, mx, l, r);
  ax.lo = 0;
  std::ostringstream s;
  frame(s, c, l, t, r, b);
  for (double v : ax.ticks()) {
    double x = ax.map(v);
    s << "<line x1=\"" << f2(x) << "\" y1=\"" << f2(t) << "\" x2=\"" << f2(x) << "\" y2=\"" << f2(b)
      << "\" stroke=\"#ddd\"/><text x=\"" << f2(x) << "\" y=\"" << f2(b + 14) << "\" text-anchor=\"middle\">"
      << tick_label(v) << "</text>\n";
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    double y = t + row_h * static_cast<double>(i);
    const SvgBar& x = bars[i];
    s << "<g class=\"bar\" data-series=\"" << xml_escape(x.series) << "\">";
    s << "<text x=\"" << f2(l - 6) << "\" y=\"" << f2(y + 14) << "\" text-anchor=\"end\">" << xml_escape(x.label) << "</text>";
    s << "<rect x=\"" << f2(l) << "\" y=\"" << f2(y + 3) << "\" width=\"" << f2(std::max(1.0, ax.map(x.value) - l))
      << "\" height=\"" << f2(row_h - 6) << "\" fill=\"" << x.colour << "\"><title>"
      << xml_escape(x.tip.empty() ? x.label + ": " + fmt_sig(x.value, 4) : x.tip) << "</title></rect>";
    s << "<text x=\"" << f2(ax.map(x.value) + 4) << "\" y=\"" << f2(y + 14) << "\">" << fmt_sig(x.value, 3) << "</text></g>\n";
  }
  double ny = b + 56;
  for (const auto& n : notes) {
    s << "<text class=\"not-drawn\" x=\"10\" y=\"" << f2(ny) << "\" fill=\"#555\">" << xml_escape(n) << "</text>\n";
    ny += note_h;
  }
  s << "</svg>\n";
  return s.str();
}

std::vector<std::vector<SvgSeries>> split_series(const std::vector<SvgSeries>& series, size_t per_chart) {
  std::vector<std::vector<SvgSeries>> out;
  if (per_chart == 0) per_chart = kMaxSeriesPerChart;
  for (size_t i = 0; i < series.size(); i += per_chart)
    out.emplace_back(series.begin() + static_cast<long>(i),
                     series.begin() + static_cast<long>(std::min(series.size(), i + per_chart)));
  return out;
}

}  // namespace xpusim
