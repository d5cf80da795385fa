// Typed errors shared by every xpusim library. Library code throws these; only the CLI
// turns them into exit codes (UserError -> 2, anything else -> 1). Never call exit() below cli/.
#pragma once
#include <stdexcept>
#include <string>

namespace xpusim {

// Bad input from the user: a flag, a YAML file, a CSV row. The message is complete and
// already names where the problem is ("configs/devices/v100.yaml:12: memory_bandwidth_gbps: must be > 0").
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

// A UserError about one named input of a request ("batch", "device", "count", "set", ...),
// not tied to a file line. Library code names the field; cli/ turns the name into its flag
// (batch -> the --batch flag) and a study turns it into its YAML key, so no command-line word
// lives below cli/.
class FieldError : public UserError {
 public:
  FieldError(std::string field, std::string message)
      : UserError(field + ": " + message), field_(std::move(field)), message_(std::move(message)) {}
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  std::string field_;
  std::string message_;
};

// A request that is well-formed but cannot be served here (no CUDA device, no dataset).
class UnavailableError : public std::runtime_error {
 public:
  explicit UnavailableError(const std::string& msg) : std::runtime_error(msg) {}
};

// The user stopped a long run (SIGINT/SIGTERM) after what was finished was kept and
// summarised; the CLI exits 130 as shells do for Ctrl-C.
class InterruptedError : public std::runtime_error {
 public:
  explicit InterruptedError(const std::string& msg) : std::runtime_error(msg) {}
};

// A simulator bug (gem5's `panic`): an invariant that user input cannot break.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& msg) : std::logic_error(msg) {}
};

}  // namespace xpusim
