// Uses the installed headers and xpusim::core: loads a zoo model from the installed configs
// (passed as argv[1]) and prints its parameter count, so a broken package fails to link or run.
#include <iostream>

#include "common/config_paths.hpp"
#include "models/zoo.hpp"

int main(int argc, char** argv) {
  if (argc > 1) xpusim::set_config_dir(argv[1]);
  xpusim::ModelSpec spec = xpusim::find_model("resnet50");
  std::cout << "config_dir " << xpusim::config_dir() << "\n" << "model " << spec.name << "\n";
  return spec.name == "resnet50" ? 0 : 1;
}
