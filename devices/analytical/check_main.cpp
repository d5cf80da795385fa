// xpusim_analytical_check: predicted vs published throughput for every reference row the
// analytical engine models, then MAPE per device. A development helper for calibration;
// `xpusim validate` is the general tool.
//   xpusim_analytical_check CSV [--format table|csv|json] [--only DEVICE] [DEVICE:KEY=VALUE ...]
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/progress.hpp"
#include "devices/analytical/reference_check.hpp"

int main(int argc, char** argv) {
  using namespace xpusim::analytical;
  if (argc < 2) {
    std::cerr << "usage: xpusim_analytical_check CSV [--format table|csv|json] [--only DEVICE] [DEVICE:KEY=VALUE ...]\n";
    return 2;
  }
  std::string format = "table", only;
  std::map<std::string, std::vector<std::string>> ov;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--format" && i + 1 < argc) { format = argv[++i]; continue; }
    if (a == "--only" && i + 1 < argc) { only = argv[++i]; continue; }
    auto colon = a.find(':');
    if (colon == std::string::npos) { std::cerr << a << ": expected DEVICE:KEY=VALUE\n"; return 2; }
    ov[a.substr(0, colon)].push_back(a.substr(colon + 1));
  }
  if (format != "table" && format != "csv" && format != "json") {
    std::cerr << "--format: table, csv or json\n";
    return 2;
  }
  try {
    auto rows = load_reference_rows(argv[1]);
    if (!only.empty()) std::erase_if(rows, [&](const ReferenceRow& r) { return r.device != only; });
    auto res = check_rows(rows, ov, xpusim::ProgressBar::stderr_is_interactive());
    if (format == "json") {
      nlohmann::json j = {{"rows", nlohmann::json::array()}, {"mape_pct", nlohmann::json::object()}};
      for (const auto& r : res)
        j["rows"].push_back({{"line", r.row.line}, {"device", r.row.device}, {"num_devices", r.row.num_devices},
                             {"setup", r.row.setup}, {"model", r.row.model}, {"batch_per_device", r.row.batch_per_device},
                             {"precision", r.row.precision}, {"data", r.row.data},
                             {"published_images_per_s", r.row.value}, {"predicted_images_per_s", r.predicted},
                             {"error_pct", r.error_pct}});
      for (const auto& [dev, m] : mape_by_device(res)) j["mape_pct"][dev] = m;
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    const char* f = format == "csv" ? "%s,%d,%s,%s,%lld,%s,%s,%.1f,%.1f,%.1f\n" : "%-15s %2d %-16s %-13s %4lld %-10s %-9s %9.1f %9.1f %+7.1f\n";
    std::printf(format == "csv" ? "device,num_devices,setup,model,batch_per_device,precision,data,published_images_per_s,predicted_images_per_s,error_pct\n"
                                : "%-15s %2s %-16s %-13s %5s %-10s %-9s %9s %9s %7s\n",
                "device", "n", "setup", "model", "batch", "precision", "data", "published", "predicted", "err%");
    for (const auto& r : res)
      std::printf(f, r.row.device.c_str(), r.row.num_devices, r.row.setup.c_str(), r.row.model.c_str(), r.row.batch_per_device,
                  r.row.precision.c_str(), r.row.data.c_str(), r.row.value, r.predicted, r.error_pct);
    for (const auto& [dev, m] : mape_by_device(res)) std::printf("MAPE %-15s %.2f%%\n", dev.c_str(), m);
  } catch (const xpusim::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
