#include "engine/placement.hpp"

namespace xpusim {

bool parse_cpu_build(const std::string& s, CpuBuild& out) {
  if (s == "pip") out = CpuBuild::pip;
  else if (s == "compiled") out = CpuBuild::compiled;
  else return false;
  return true;
}

const char* cpu_build_name(CpuBuild b) { return b == CpuBuild::compiled ? "compiled" : "pip"; }

std::optional<CpuBuild> cpu_build_in_framework_name(const std::string& fw) {
  if (fw.ends_with("-pip")) return CpuBuild::pip;
  if (fw.ends_with("-compiled")) return CpuBuild::compiled;
  return std::nullopt;
}

}  // namespace xpusim
