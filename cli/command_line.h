// The command line of vipd, `vipd render` and vipctl: one set of conventions on CLI11 (Debian
// libcli11-dev, header-only), so the three programs cannot drift apart.
//
// - `--flag value` and `--flag=value` alike; `--flag=` with nothing after the '=' is an error
//   (CLI11 would take the next word as the value).
// - Every option at most once: a repeated option is a usage error, never "the last one wins". A
//   preStop hook's `vipctl --socket S` must not be redirected by a second --socket that a wrapper
//   appended.
// - -h/--help on every command and subcommand, printed by HelpFormatter: the usage line first,
//   made from the options themselves, then the description, the options, the commands and the
//   footer. --version prints "PROGRAM VERSION".
// - A usage error is one line, "PROGRAM: PROBLEM", followed by the help of the command in
//   question, on stderr, and exit code 2 (kExitUsage).
//
// Uses only CLI11 and the standard library: vipctl links this statically.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vipd::cli {

// The exit code of a usage error, in every vipd program.
constexpr int kExitUsage = 2;

// Help in vipd's style:
//
//   usage: vipctl [--socket PATH] withdraw [--wait] [--timeout DUR] [--reason TEXT]
//                 [--transient]
//
//   DESCRIPTION
//
//   options:
//     --wait  ...
//
// Options without ->required() are shown in brackets; an option's value is named by its
// ->option_text(). A subcommand with fallthrough() (its parent's options are accepted after it)
// shows the parent's options too. Descriptions are wrapped at 100 columns ('\n' breaks a line);
// the footer is printed as it is.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
};

// Sets vipd's conventions on a new top-level `app`: HelpFormatter, -h/--help and, when `version`
// is given, --version printing "NAME VERSION". Subcommands added afterwards inherit them.
void configure(CLI::App& app, std::string_view version = {});

// Rejects an empty value: "--metadata needs a value".
CLI::Validator nonEmpty();

// Accepts only one of `words`: "--log-format must be text or json".
CLI::Validator oneOf(std::vector<std::string> words);

// Adds an option whose value is one of the words in `choices`; sets `target` to the value that
// word stands for. Shown as NAME word1|word2.
template <typename T>
CLI::Option* addChoice(CLI::App& app, const std::string& name, T& target,
                       std::vector<std::pair<std::string, T>> choices,
                       const std::string& description) {
  std::vector<std::string> words;
  std::string text;
  for (const auto& choice : choices) {
    words.push_back(choice.first);
    text += (text.empty() ? "" : "|") + choice.first;
  }
  auto set = [&target, choices](const std::string& word) {
    for (const auto& [w, value] : choices) {
      if (w == word) {
        target = value;
      }
    }
  };
  return app.add_option_function<std::string>(name, set, description)
      ->check(oneOf(std::move(words)))
      ->option_text(text);
}

// Parses `args` (the words after the program's name). Returns the exit code when parsing ends the
// command: 0 once --help or --version is printed to `out`, kExitUsage once a usage error is
// printed to `err`; nullopt when the command is to run. CLI11's exceptions stay inside.
[[nodiscard]] std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args,
                                       std::ostream& out, std::ostream& err);

// For a problem found after parse(): prints "NAME: PROBLEM" and the help of the command that was
// given (app's own when none was) to `err`. Returns kExitUsage.
int usageError(const CLI::App& app, std::string_view problem, std::ostream& err);

}  // namespace vipd::cli
