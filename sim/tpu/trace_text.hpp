// Number formatting shared by the TPU trace's event and counter writers.
#pragma once
#include <charconv>
#include <string>

namespace xpusim::tpu {

// Microseconds with picosecond resolution (the simulation's): fixed-point text is
// deterministic, and symmetric cores print the same strings. std::to_chars: the same digits as
// printf, without its locale and parsing cost (150k events with five numbers each).
inline void put_us(std::string& out, double seconds) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, seconds * 1e6, std::chars_format::fixed, 6);
  out.append(b, r.ptr);
}

// Counts (FLOPs, bytes, rates) in the shortest text that reads back to the same double.
inline void put_num(std::string& out, double v) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, r.ptr);
}

}  // namespace xpusim::tpu
