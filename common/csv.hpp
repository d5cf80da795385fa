// RFC 4180 CSV, read and written in one place: the reference CSVs (validation), compare's row
// files and sweep row files all go through these functions. Fields are quoted when they hold
// a comma, a quote, CR or LF; quotes inside are doubled; a quoted field may span lines.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace xpusim {

// One record and the line of the text it starts on (1-based).
struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
};

// Splits text into records. CRLF and LF both end a record; a UTF-8 byte-order mark is skipped;
// blank lines carry no record. UserError "FILE:LINE: ..." for a quote inside an unquoted
// field, text after a closing quote, or a quoted field never closed.
std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& file);
// The fields of one line (a row of a file written one record per line, without its newline);
// UserError "WHERE: ..." as parse_csv.
std::vector<std::string> parse_csv_line(const std::string& line, const std::string& where);

// A field as CSV text: unchanged unless it holds , " CR or LF, else quoted with "" inside.
std::string csv_escape(const std::string& s);
// Fields joined with commas, each escaped; no line end.
std::string csv_line(const std::vector<std::string>& fields);
// csv_line and "\n".
void write_csv_record(std::ostream& os, const std::vector<std::string>& fields);

}  // namespace xpusim
