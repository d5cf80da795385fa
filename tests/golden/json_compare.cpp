// json_compare EXPECTED ACTUAL [REL_TOL]: every key of EXPECTED must be in ACTUAL with an
// equal value (numbers within the relative tolerance; arrays element-wise). Exit 0 on match.
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <string>

using nlohmann::json;

static int failures = 0;

static void compare(const json& e, const json& a, const std::string& path, double tol) {
  if (e.is_number() && a.is_number()) {
    double x = e.get<double>(), y = a.get<double>();
    double scale = std::max(std::fabs(x), 1e-12);
    if (std::fabs(x - y) / scale > tol) {
      std::cerr << path << ": expected " << x << ", got " << y << " (rel err " << std::fabs(x - y) / scale << ")\n";
      ++failures;
    }
    return;
  }
  if (e.type() != a.type()) {
    std::cerr << path << ": expected " << e.dump() << ", got " << a.dump() << "\n";
    ++failures;
    return;
  }
  if (e.is_object()) {
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (!a.contains(it.key())) {
        std::cerr << path << "." << it.key() << ": missing\n";
        ++failures;
        continue;
      }
      compare(it.value(), a.at(it.key()), path + "." + it.key(), tol);
    }
  } else if (e.is_array()) {
    if (e.size() != a.size()) {
      std::cerr << path << ": expected " << e.size() << " elements, got " << a.size() << "\n";
      ++failures;
      return;
    }
    for (size_t i = 0; i < e.size(); ++i) compare(e[i], a[i], path + "[" + std::to_string(i) + "]", tol);
  } else if (e != a) {
    std::cerr << path << ": expected " << e.dump() << ", got " << a.dump() << "\n";
    ++failures;
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: json_compare EXPECTED ACTUAL [REL_TOL]\n";
    return 2;
  }
  double tol = argc > 3 ? std::stod(argv[3]) : 1e-6;
  json e, a;
  try {
    std::ifstream fe(argv[1]), fa(argv[2]);
    e = json::parse(fe);
    a = json::parse(fa);
  } catch (const std::exception& ex) {
    std::cerr << "json_compare: " << ex.what() << "\n";
    return 1;
  }
  compare(e, a, "$", tol);
  return failures == 0 ? 0 : 1;
}
