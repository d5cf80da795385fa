// The one RFC 4180 reader and writer (common/csv.hpp): quoted fields with doubled quotes,
// embedded commas and newlines, CRLF line ends, blank lines, and the errors a hand-edited
// file can hold, each naming its line; what the writer writes reads back unchanged.
#include <catch2/catch.hpp>

#include <sstream>

#include "common/csv.hpp"
#include "common/error.hpp"

using namespace xpusim;

TEST_CASE("csv: quotes, embedded commas and newlines, CRLF", "[csv]") {
  auto recs = parse_csv("a,\"b, c\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",x,\r\n\r\nlast,,\n", "t.csv");
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].line == 1);
  CHECK(recs[0].fields == std::vector<std::string>{"a", "b, c", "say \"hi\""});
  CHECK(recs[1].line == 2);  // starts on line 2, spans 2-3
  CHECK(recs[1].fields == std::vector<std::string>{"two\nlines", "x", ""});
  CHECK(recs[2].line == 5);  // line 4 is blank: no record
  CHECK(recs[2].fields == std::vector<std::string>{"last", "", ""});
  // No final newline; a byte-order mark is not part of the first field.
  auto tail = parse_csv("\xEF\xBB\xBFh1,h2\nv1,v2", "t.csv");
  REQUIRE(tail.size() == 2);
  CHECK(tail[0].fields[0] == "h1");
  CHECK(tail[1].fields == std::vector<std::string>{"v1", "v2"});
  // A CR inside a quoted field is data.
  CHECK(parse_csv("\"a\r\nb\"\n", "t.csv")[0].fields[0] == "a\r\nb");
}

TEST_CASE("csv: malformed text is an error naming file and line", "[csv]") {
  CHECK_THROWS_WITH(parse_csv("ok\na,\"open\nb\n", "t.csv"), Catch::Contains("t.csv:2: a quoted field is never closed"));
  CHECK_THROWS_WITH(parse_csv("a,b\"c\n", "t.csv"), Catch::Contains("t.csv:1: column 2: a quote inside"));
  CHECK_THROWS_WITH(parse_csv("x\n\"a\"b\n", "t.csv"), Catch::Contains("t.csv:2: column 1: text after a closing quote"));
  CHECK_THROWS_WITH(parse_csv_line("1,\"open", "rows.csv:7"), Catch::Contains("rows.csv:7: a quoted field is never closed"));
}

TEST_CASE("csv: the writer quotes only what needs it and reads back exactly", "[csv]") {
  CHECK(csv_escape("plain") == "plain");
  CHECK(csv_escape("a,b") == "\"a,b\"");
  CHECK(csv_escape("say \"x\"") == "\"say \"\"x\"\"\"");
  CHECK(csv_escape("cr\r") == "\"cr\r\"");
  const std::vector<std::string> fields = {"", "a,b", "q\"q", "two\nlines", "crlf\r\nend", " spaced "};
  CHECK(csv_line(fields) == ",\"a,b\",\"q\"\"q\",\"two\nlines\",\"crlf\r\nend\", spaced ");
  std::ostringstream os;
  write_csv_record(os, {"h1", "h2", "h3", "h4", "h5", "h6"});
  write_csv_record(os, fields);
  auto back = parse_csv(os.str(), "w.csv");
  REQUIRE(back.size() == 2);
  CHECK(back[1].fields == fields);
  CHECK(parse_csv_line(csv_line({"x", "y,z"}), "l") == std::vector<std::string>{"x", "y,z"});
  CHECK(parse_csv_line("", "l") == std::vector<std::string>{""});
}
