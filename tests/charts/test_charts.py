#!/usr/bin/env python3
"""Charts (issue 17): the validation report and `compare --chart`.

  structure   every <svg> has a viewBox, axis labels carrying a unit "(...)", at most 8 series
              per chart, a <title> tooltip on every mark; the report lists rows not drawn.
  screenshot  headless Chromium renders the report and a compare chart to PNG; each PNG must
              exist, be non-trivial in size and not blank (many distinct colours when PIL is
              present). Exit 77 (ctest: skipped) when chromium is absent.
Usage: test_charts.py structure|screenshot OUTDIR   (XPUSIM_BIN, XPUSIM_SOURCE_DIR in the environment)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

BIN = os.environ.get("XPUSIM_BIN", "xpusim")
SRC = os.environ.get("XPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
REFERENCE = os.path.join(SRC, "tests", "data", "reference", "published_calibration.csv")
SVG_NS = "{http://www.w3.org/2000/svg}"
MAX_SERIES = 8


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")


def make_outputs(out):
    os.makedirs(out, exist_ok=True)
    report = os.path.join(out, "report")
    run(["validate", "--reference", REFERENCE, "--report", report, "--format", "json"])
    run(["compare", "riseml_resnet50_published", "--chart", os.path.join(out, "compare.svg"), "--format", "json"])
    run(["compare", "riseml_resnet50_published", "--chart", os.path.join(out, "compare.html"), "--format", "json"])
    return os.path.join(report, "index.html"), os.path.join(out, "compare.svg"), os.path.join(out, "compare.html")


def charts_in(svg_root):
    """The chart <svg> elements: nested ones when a picture stacks several, else the root."""
    inner = [e for e in svg_root.iter(SVG_NS + "svg") if e is not svg_root]
    return inner or [svg_root]


def check_chart(chart, where):
    if not chart.get("viewBox"):
        fail(f"{where}: <svg> without viewBox")
    labels = {e.get("class"): "".join(e.itertext()) for e in chart.iter(SVG_NS + "text")
              if e.get("class") in ("x-label", "y-label")}
    title = "".join(next(chart.iter(SVG_NS + "text")).itertext())
    for axis in ("x-label", "y-label"):
        if axis not in labels or not labels[axis].strip():
            fail(f"{where} '{title}': no {axis}")
    # The quantity axes carry a unit in parentheses (category axes name what they list).
    if not re.search(r"\(.+\)", labels["x-label"]) or not re.search(r"\(.+\)", labels["y-label"]):
        fail(f"{where} '{title}': axis labels without units: {labels}")
    # Series: legend groups of x/y charts, or the distinct series (colours) of bar charts.
    series = [g.get("data-label") for g in chart.iter(SVG_NS + "g") if g.get("class") == "series"]
    series += sorted({g.get("data-series") for g in chart.iter(SVG_NS + "g") if g.get("class") == "bar"})
    if len(series) > MAX_SERIES:
        fail(f"{where} '{title}': {len(series)} series > {MAX_SERIES}")
    marks = [e for e in chart.iter() if e.tag in (SVG_NS + "circle", SVG_NS + "rect") and e.get("fill") != "white"
             and e.get("fill") != "none"]
    for m in marks:
        if m.find(SVG_NS + "title") is None:
            fail(f"{where} '{title}': a mark without a <title> tooltip")
    return len(series)


def structure(out):
    html, svg, chart_html = make_outputs(out)
    page = open(html, encoding="utf-8").read()
    blocks = re.findall(r"<svg .*?</svg>", page, flags=re.S)
    if len(blocks) < 4:
        fail(f"report: only {len(blocks)} charts")
    total = 0
    for b in blocks:
        total += check_chart(ET.fromstring(b), "report")
    if total == 0:
        fail("report: no series drawn")
    # Device-count axes tick at the data's counts (1, 2, 4, 8), not at 1, 2, 5.
    scaling = [b for b in blocks if "throughput vs devices" in b]
    if not scaling:
        fail("report: no scaling chart")
    for b in scaling:
        ticks = re.findall(r'text-anchor="middle">(\d+)</text>', b)
        if "5" in ticks and "4" not in ticks:
            fail("report: scaling chart ticks at 5 without a device count of 5")
    if "not drawn" not in page:
        fail("report: no list of rows not drawn")
    # Issue 36: scaling read as predicted / reference, one dot per used throughput row with a
    # device count (validation.json names them), a y = 1 line and a +-10% band.
    ratio = [b for b in blocks if "predicted / reference throughput" in b]
    if not ratio:
        fail("report: no predicted / reference ratio chart")
    rows = json.load(open(os.path.join(os.path.dirname(html), "validation.json"), encoding="utf-8"))["rows"]
    want = sum(1 for x in rows if x["metric"] == "train_throughput" and x["status"] == "used"
               and x["num_devices"] is not None and x["predicted"] is not None and x["reference"])
    dots = sum(len(re.findall(r"<circle cx=", b)) for b in ratio)
    if dots != want or want == 0:
        fail(f"report: {dots} dots in the ratio charts, {want} used throughput rows with a device count")
    if any('class="ratio-band"' not in b for b in ratio):
        fail("report: a ratio chart without its +-10% band")
    if page.find("predicted / reference throughput") > page.find('<details class="scaling-lines">'):
        fail("report: the ratio panel is not the default (it comes after the folded lines)")
    root = ET.parse(svg).getroot()
    if not root.get("viewBox"):
        fail("compare.svg: no viewBox")
    charts = charts_in(root)
    if len(charts) < 2:
        fail(f"compare.svg: {len(charts)} charts, want one per metric")
    for c in charts:
        check_chart(c, "compare.svg")
    text = open(svg, encoding="utf-8").read()
    if "not drawn (" not in text:
        fail("compare.svg: rows without a bar are not explained")
    # Each reason once per chart, naming its rows (not one line per row).
    for c in charts:
        reasons = [re.match(r"not drawn \((.*?)\):", "".join(t.itertext())) for t in c.iter(SVG_NS + "text")]
        reasons = [m.group(1) for m in reasons if m]
        if len(reasons) != len(set(reasons)):
            fail(f"compare.svg: a 'not drawn' reason repeats in one chart: {reasons}")
    sweep_chart(out)
    if "n/a" in text:
        fail("compare.svg: unexplained n/a")
    print(f"structure ok: {len(blocks)} report charts, {len(charts)} compare charts")


def sweep_chart(out):
    """The sweep chart fits a 1,100 px window (legend included), its axis titles are words with
    units (not field names), and each legend mark matches its series: a dot for dots, a line
    for a line."""
    path = os.path.join(out, "sweep.svg")
    run(["sweep", os.path.join(SRC, "tests", "sweep", "small.yaml"), "-o", os.path.join(out, "sweep.csv"),
         "--chart", path])
    root = ET.parse(path).getroot()
    check_chart(root, "sweep.svg")
    if int(float(root.get("width"))) > 1100:
        fail(f"sweep.svg: {root.get('width')} px wide, over 1,100")
    for e in root.iter(SVG_NS + "text"):
        if e.get("class") in ("x-label", "y-label") and "_" in "".join(e.itertext()):
            fail(f"sweep.svg: axis title is a field name: {''.join(e.itertext())}")
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "series":
            continue
        has_line = g.find(SVG_NS + "polyline") is not None
        has_dots = any(c.get("class") != "legend-marker" for c in g.iter(SVG_NS + "circle"))
        legend_line = any(l.get("x2") is not None for l in g.iter(SVG_NS + "line"))
        legend_dot = any(c.get("class") == "legend-marker" for c in g.iter(SVG_NS + "circle"))
        if has_line != legend_line or has_dots != legend_dot:
            fail(f"sweep.svg: legend of '{g.get('data-label')}' (line {legend_line}, dot {legend_dot}) does not match "
                 f"its marks (line {has_line}, dots {has_dots})")


def screenshot(out):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium is not installed: skipped")
        sys.exit(77)
    html, svg, chart_html = make_outputs(out)
    shots = []
    for src, name, size in ((html, "report.png", "1280,5200"), (chart_html, "compare.png", "1000,1400")):
        png = os.path.join(out, name)
        if os.path.exists(png):
            os.remove(png)
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={png}", f"--window-size={size}", "file://" + os.path.abspath(src)],
                       capture_output=True, timeout=120)
        if not os.path.exists(png):
            fail(f"chromium wrote no {png}")
        size_b = os.path.getsize(png)
        if size_b < 20000:
            fail(f"{png}: {size_b} bytes, too small to hold the charts")
        try:
            from PIL import Image
            colours = Image.open(png).convert("RGB").getcolors(maxcolors=1 << 20)
            n = len(colours) if colours else 1 << 20
            if n < 16:
                fail(f"{png}: {n} distinct colours: blank")
            print(f"{name}: {size_b} bytes, {n} colours")
        except ImportError:
            print(f"{name}: {size_b} bytes (PIL absent: size check only)")
        shots.append(png)
    print("screenshots ok:", " ".join(shots))


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    {"structure": structure, "screenshot": screenshot}[mode](out)
