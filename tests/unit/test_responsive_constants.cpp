// settle_constants (validation/responsive_constants): after a fit, constants the rows cannot
// pin down go back towards their starting values, and the rows' predictions stay as they were.
// Hand-made prediction functions, so every expected value is derived here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "validation/responsive_constants.hpp"

using namespace xpusim::validation;

TEST_CASE("settle_constants: a constant no row responds to goes back to its starting value",
          "[calibrate][responsive_constants]") {
  // Two rows, both read x[0] only: x[1] is a flat direction wherever the minimiser left it.
  int calls = 0;
  const PredictionsAt p = [&](const std::vector<double>& x) {
    ++calls;
    return std::vector<double>{std::exp(x[0]), 2 * std::exp(x[0])};
  };
  const Settled s = settle_constants(p, {0.5, 3.0}, {0.0, 0.0}, 0.25);
  CHECK(s.x[0] == 0.5);  // the rows respond to it: kept where the fit put it
  CHECK(s.x[1] == 0.0);
  CHECK_FALSE(s.no_effect[0]);
  CHECK(s.no_effect[1]);
  // One call at x; for x[0] its start (differs) and 1/4096 of the way there (differs: no
  // bisection); for x[1] its start (equivalent) and the probe there, both ways.
  CHECK(calls == 1 + 2 + 1 + 2);
}

TEST_CASE("settle_constants: past a cap, the nearest equivalent value is the cap's edge",
          "[calibrate][responsive_constants]") {
  // An efficiency scale e^x capped at 2: e^10 prices like 2, as does every x >= ln 2. From a
  // start of 0 (scale 1, below the cap) the nearest equivalent value is ln 2, which bisection
  // finds to within 10 / 2^12 of the line's length.
  const PredictionsAt p = [](const std::vector<double>& x) { return std::vector<double>{std::min(std::exp(x[0]), 2.0)}; };
  const Settled s = settle_constants(p, {10.0}, {0.0}, 0.25);
  CHECK(s.x[0] >= std::log(2.0));
  CHECK(s.x[0] <= std::log(2.0) + 10.0 / 4096);
  CHECK(p(s.x)[0] == 2.0);  // the prediction is the fit's
  CHECK_FALSE(s.no_effect[0]);
}

TEST_CASE("settle_constants: a small move the rows respond to is kept; a missing prediction counts",
          "[calibrate][responsive_constants]") {
  // Within the simplex edge and not equivalent to the start: no bisection, the value stays.
  const PredictionsAt smooth = [](const std::vector<double>& x) { return std::vector<double>{x[0] * x[0] + 1}; };
  CHECK(settle_constants(smooth, {0.1}, {0.0}, 0.25).x[0] == 0.1);
  // A row the engine cannot predict past a bound (NaN) differs from one it can: the constant
  // at its start is not `no_effect` when a step makes a row unpredictable.
  const PredictionsAt bounded = [](const std::vector<double>& x) {
    return std::vector<double>{x[0] > 0.1 ? std::nan("") : 1.0};
  };
  const Settled s = settle_constants(bounded, {0.0}, {0.0}, 0.25);
  CHECK(s.x[0] == 0.0);
  CHECK_FALSE(s.no_effect[0]);
}
