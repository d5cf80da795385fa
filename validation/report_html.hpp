// `xpusim validate --report DIR`: one self-contained HTML page (inline SVG, no scripts or
// external assets) with the MAPE tables, predicted vs reference (log-log, one colour per
// device), error by device, predicted / reference throughput vs number of devices per model
// (a ratio around 1 with a +-10% band; the absolute lines folded below it), and the skip list.
#pragma once
#include <string>

#include "validation/validate.hpp"

namespace xpusim::validation {

std::string report_html(const ValidationResult& r);
// Writes DIR/index.html and DIR/validation.json (creating DIR). UserError naming --report.
void write_report(const ValidationResult& r, const std::string& dir);

}  // namespace xpusim::validation
