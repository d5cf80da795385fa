// RFC 4180 reader and writer (see csv.hpp).
#include "common/csv.hpp"

#include <functional>

#include "common/error.hpp"

namespace xpusim {

namespace {

// The parser behind parse_csv and parse_csv_line; `fail(line, message)` throws.
std::vector<CsvRecord> parse(const std::string& text, const std::function<void(int, const std::string&)>& fail) {
  std::vector<CsvRecord> out;
  CsvRecord rec;
  std::string field;
  int line = 1;
  rec.line = 1;
  bool in_quotes = false, field_was_quoted = false, record_has_content = false;
  size_t i = 0;
  // A UTF-8 byte-order mark (spreadsheet exports) is not part of the first column's name.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;
  auto end_field = [&] {
    rec.fields.push_back(field);
    field.clear();
    field_was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    // Blank lines carry no row; skipping them keeps hand-edited files readable.
    if (!(rec.fields.size() == 1 && rec.fields[0].empty() && !record_has_content)) out.push_back(rec);
    rec = CsvRecord{};
    record_has_content = false;
  };
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || field_was_quoted)
        fail(line, "column " + std::to_string(rec.fields.size() + 1) +
                       ": a quote inside an unquoted field (quote the whole field and double inner quotes)");
      in_quotes = true;
      field_was_quoted = true;
      record_has_content = true;
    } else if (c == ',') {
      end_field();
      record_has_content = true;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      // CRLF: the '\n' ends the record.
    } else if (c == '\n') {
      end_record();
      ++line;
      rec.line = line;
    } else {
      if (field_was_quoted) fail(line, "column " + std::to_string(rec.fields.size() + 1) + ": text after a closing quote");
      field += c;
      record_has_content = true;
    }
  }
  if (in_quotes) fail(rec.line, "a quoted field is never closed");
  if (record_has_content || !field.empty() || !rec.fields.empty()) end_record();
  return out;
}

}  // namespace

std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& file) {
  return parse(text, [&](int line, const std::string& msg) {
    throw UserError(file + ":" + std::to_string(line) + ": " + msg);
  });
}

std::vector<std::string> parse_csv_line(const std::string& line, const std::string& where) {
  std::vector<CsvRecord> recs = parse(line, [&](int, const std::string& msg) { throw UserError(where + ": " + msg); });
  if (recs.empty()) return {""};  // an empty line is one empty field
  if (recs.size() > 1) throw UserError(where + ": more than one line");
  return recs[0].fields;
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_escape(fields[i]);
  }
  return line;
}

void write_csv_record(std::ostream& os, const std::vector<std::string>& fields) { os << csv_line(fields) << "\n"; }

}  // namespace xpusim
