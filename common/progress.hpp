// A progress bar on stderr for anything that runs longer than a few seconds. It draws only
// when stderr is a terminal (or XPUSIM_PROGRESS=1), so logs and JSON on stdout stay clean.
#pragma once
#include <chrono>
#include <string>

namespace xpusim {

class ProgressBar {
 public:
  ProgressBar(std::string label, long long total, bool enabled = true);
  ~ProgressBar();
  void update(long long done, const std::string& status = "");
  void finish(const std::string& status = "");
  static bool stderr_is_interactive();

 private:
  std::string label_;
  long long total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace xpusim
