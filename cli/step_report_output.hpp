// Printing a StepReport as a table, JSON or CSV, the same way for `predict` and `run`: JSON
// and CSV carry the same fields (common/records.hpp), the table is for reading.
#pragma once
#include <ostream>

#include "common/output.hpp"
#include "engine/engine.hpp"

namespace xpusim::cli {

// JSON and CSV: StepReport::to_record() (the engine's `extra` lifted to the top level).
void print_step_report(std::ostream& os, const StepReport& r, OutputFormat f);

}  // namespace xpusim::cli
