// Kernel times measured on a GPU (bench/gpu_measure.py's kernels.csv) against the analytical
// engine's GPU kernel model for that device (issue 33): each GEMM and forward convolution
// row is priced as the engine prices one such op, with the device's rates for the row's
// precision under the neutral framework profile, and the error is summarised per
// (kind, shape class, dtype).
//   xpusim_bench_kernels DEVICE KERNELS_CSV [OUT_CSV]
// GEMMs: C[m, n] = A[m, k] B[k, n], fp32 / tf32 / bf16 / fp16 as the precisions fp32, tf32,
// mixed_bf16 and mixed_fp16 (tensor cores for the last three). Convolutions (forward rows):
// the implicit GEMM M = N*Ho*Wo, N = Cout, K = Cin*kh*kw, with the im2col operand counted
// once per input pixel. fp8 rows (the model has no fp8 precision yet), attention rows (the
// engine prices attention from a model's graph, not from a lone call) and forward+backward
// rows are listed as not compared, with the reason.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_paths.hpp"
#include "common/csv.hpp"
#include "common/error.hpp"
#include "devices/analytical/gemm_alignment.hpp"
#include "devices/analytical/gpu_kernel_model.hpp"
#include "devices/analytical/rates.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {

struct Row {
  std::string kind, cls, dtype, note;
  double m = 0, n = 0, k = 0, time_s = 0;
};

bool precision_of(const std::string& dtype, Precision& p) {
  if (dtype == "fp32") p = Precision::fp32;
  else if (dtype == "tf32") p = Precision::tf32;
  else if (dtype == "bf16") p = Precision::mixed_bf16;
  else if (dtype == "fp16") p = Precision::mixed_fp16;
  else return false;
  return true;
}

// "input 128x64x56x56 NHWC; out 56x56" -> H (square inputs), Ho.
bool conv_geometry(const std::string& note, double& h, double& ho) {
  auto in = note.find("input ");
  auto out = note.find("out ");
  if (in == std::string::npos || out == std::string::npos) return false;
  std::string dims = note.substr(in + 6, note.find(' ', in + 6) - in - 6);
  std::replace(dims.begin(), dims.end(), 'x', ' ');
  std::istringstream d(dims);
  double nb = 0, c = 0, w = 0;
  d >> nb >> c >> h >> w;
  ho = std::stod(note.substr(out + 4));
  return h > 0 && ho > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: xpusim_bench_kernels DEVICE KERNELS_CSV [OUT_CSV]\n";
    return 2;
  }
  try {
    const DeviceSpec d = load_device_spec(argv[1]);
    std::ifstream in(argv[2]);
    if (!in) throw UserError(std::string(argv[2]) + ": cannot open");
    std::stringstream text;
    text << in.rdbuf();
    const std::vector<CsvRecord> recs = parse_csv(text.str(), argv[2]);
    if (recs.empty()) throw UserError(std::string(argv[2]) + ": empty");
    std::map<std::string, size_t> col;
    for (size_t i = 0; i < recs[0].fields.size(); ++i) col[recs[0].fields[i]] = i;
    for (const char* c : {"kind", "shape_class", "dtype", "m", "n", "k", "time_s", "note"})
      if (!col.count(c)) throw UserError(std::string(argv[2]) + ":1: " + c + ": missing column");

    const FrameworkSpec neutral;
    std::ofstream out_csv;
    if (argc > 3) {
      out_csv.open(argv[3]);
      out_csv << "kind,shape_class,dtype,m,n,k,measured_s,predicted_s,error_pct,tile_m,tile_n,waves,note\n";
    }
    struct Acc {
      std::vector<double> abs_err;
      std::vector<double> signed_err;
    };
    std::map<std::string, Acc> by_class;
    std::map<std::string, int> skipped;
    for (size_t r = 1; r < recs.size(); ++r) {
      const auto& f = recs[r].fields;
      Row row{f[col["kind"]], f[col["shape_class"]], f[col["dtype"]], f[col["note"]]};
      if (f[col["time_s"]].empty()) {
        ++skipped["not measured (failed on the GPU)"];
        continue;
      }
      row.m = std::stod(f[col["m"]]), row.n = std::stod(f[col["n"]]), row.k = std::stod(f[col["k"]]);
      row.time_s = std::stod(f[col["time_s"]]);
      Precision p{};
      if (row.kind == "attention") {
        ++skipped["attention: priced from a model's graph, not from a lone call"];
        continue;
      }
      if (!precision_of(row.dtype, p)) {
        ++skipped[row.dtype + ": no such precision in the model"];
        continue;
      }
      if (!d.supports(p)) {
        ++skipped[row.dtype + ": not a precision of " + d.name];
        continue;
      }
      GemmShape s;
      if (row.kind == "gemm") {
        s.m = row.m, s.n = row.n, s.k = row.k;
      } else if (row.kind == "conv") {
        if (row.note.rfind("fwd;", 0) != 0) {
          ++skipped["conv forward+backward: three kernels, compared forward only"];
          continue;
        }
        double h = 0, ho = 0;
        if (!conv_geometry(row.note, h, ho)) {
          ++skipped["conv: no geometry in the note"];
          continue;
        }
        // m = batch, n = Cout, k = Cin; the kernel size is in the shape class ("3x3s2").
        const double ks = std::stod(row.cls.substr(0, row.cls.find('x')));
        s.m = row.m * ho * ho, s.n = row.n, s.k = row.k * ks * ks;
        s.a_unique = (row.m * row.k * h * h) / (s.m * s.k);
      } else {
        ++skipped[row.kind + ": unknown kind"];
        continue;
      }
      const Rates rates = stack_rates(d, p, d.default_build, 1, neutral);
      GpuKernelRates kr = rates.kernel;
      const bool tensor = rates.tensor_flops_s > 0 && p != Precision::fp32;
      kr.math_flops_s = tensor ? rates.tensor_flops_s : rates.gemm_flops_s;
      kr.dram_bytes_s = rates.memory_bytes_s;
      s.in_bytes = s.out_bytes = (p == Precision::fp32 || p == Precision::tf32) ? 4 : 2;
      // GEMM rows may say which operands were read transposed (optional columns trans_a,
      // trans_b: 1 = yes); a leading dimension off 16 bytes narrows the tensor-core loads or
      // sends the GEMM to the CUDA cores, whichever is faster (gemm_alignment.hpp).
      double slowdown = 1;
      if (row.kind == "gemm" && tensor) {
        OpAttrs a;
        a.m = static_cast<int64_t>(row.m), a.n = static_cast<int64_t>(row.n), a.k = static_cast<int64_t>(row.k);
        a.trans_a = col.count("trans_a") && f[col["trans_a"]] == "1";
        a.trans_b = col.count("trans_b") && f[col["trans_b"]] == "1";
        const double access = gemm_access_bytes(a, s.in_bytes, 0);
        if (access < kAlignedAccessBytes)
          slowdown = std::min(kAlignedAccessBytes / access, rates.tensor_flops_s / rates.gemm_flops_s);
      }
      KernelTime t = gemm_kernel_time(s, kr);
      t.math_s *= slowdown;
      const double pred = t.time_s() + rates.op_overhead_s;
      const double err = 100.0 * (pred - row.time_s) / row.time_s;
      const std::string key = row.kind + " " + row.cls + " " + row.dtype;
      by_class[key].abs_err.push_back(std::fabs(err));
      by_class[key].signed_err.push_back(err);
      if (out_csv)
        out_csv << row.kind << ',' << row.cls << ',' << row.dtype << ',' << row.m << ',' << row.n << ',' << row.k << ','
                << row.time_s << ',' << pred << ',' << err << ',' << t.tile_m << ',' << t.tile_n << ',' << t.waves << ",\""
                << (rates.kernel_model ? "kernel model" : "roofline device (no kernel model)") << "\"\n";
    }
    std::cout << "device " << d.name << ": kernel time error per (kind, shape class, dtype)\n";
    std::cout << std::left << std::setw(28) << "class" << std::right << std::setw(6) << "rows" << std::setw(12)
              << "MAPE %" << std::setw(14) << "median err %" << "\n";
    std::vector<double> all;
    for (auto& [k, a] : by_class) {
      std::vector<double> s = a.signed_err;
      std::sort(s.begin(), s.end());
      double mape = 0;
      for (double e : a.abs_err) mape += e, all.push_back(e);
      mape /= static_cast<double>(a.abs_err.size());
      std::cout << std::left << std::setw(28) << k << std::right << std::setw(6) << a.abs_err.size() << std::setw(12)
                << std::fixed << std::setprecision(1) << mape << std::setw(14) << s[s.size() / 2] << "\n";
    }
    double mape = 0;
    for (double e : all) mape += e;
    if (!all.empty())
      std::cout << "all compared rows: " << all.size() << ", MAPE " << std::fixed << std::setprecision(1)
                << mape / static_cast<double>(all.size()) << "%\n";
    for (const auto& [why, n] : skipped) std::cout << "not compared: " << n << " rows (" << why << ")\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "xpusim_bench_kernels: error: " << e.what() << "\n";
    return 2;
  }
}
