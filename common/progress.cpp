#include "common/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace xpusim {

bool ProgressBar::stderr_is_interactive() {
  if (const char* e = std::getenv("XPUSIM_PROGRESS"); e && *e) return std::string(e) == "1";
  return isatty(STDERR_FILENO) != 0;
}

ProgressBar::ProgressBar(std::string label, long long total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled && stderr_is_interactive()),
      start_(std::chrono::steady_clock::now()), last_draw_(start_ - std::chrono::seconds(1)) {}

ProgressBar::~ProgressBar() {
  if (!finished_) finish();
}

void ProgressBar::update(long long done, const std::string& status) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const int width = 30;
  double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  if (frac > 1) frac = 1;
  int filled = static_cast<int>(frac * width);
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar += std::string(static_cast<size_t>(width - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %lld/%lld %5.1fs eta %5.1fs %s\033[K", label_.c_str(), bar.c_str(), done, total_,
               elapsed, eta, status.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish(const std::string& status) {
  if (finished_) return;
  finished_ = true;
  if (!enabled_) return;
  last_draw_ = std::chrono::steady_clock::time_point{};
  update(total_, status);
  std::fprintf(stderr, "\n");
}

}  // namespace xpusim
