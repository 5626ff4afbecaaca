// cli/: vipd's command-line conventions on CLI11, on a stand-in command shaped like vipctl and
// vipd (options before and after a command, a required option, a choice, a command that passes
// its words on). The programs' own command lines are tested end to end (tests/e2e/test_*_cli.py).
#include "cli/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace vipd::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

enum class Colour { Red, Green };

struct Tool {
  CLI::App app{"Does things.", "tool"};
  std::string socket;
  std::string config;
  Colour colour = Colour::Red;
  bool json = false;
  std::optional<std::string> reason;
  CLI::App* status = nullptr;
  CLI::App* pass = nullptr;
  std::ostringstream out;
  std::ostringstream err;

  Tool() {
    configure(app, "1.2.3");
    app.fallthrough();
    app.add_option("--socket", socket, "where")->option_text("PATH")->check(nonEmpty());
    addChoice(app, "--colour", colour, {{"red", Colour::Red}, {"green", Colour::Green}},
              "which colour");
    status = app.add_subcommand("status", "shows the state.\nMore about it.");
    status->add_flag("--json", json, "as JSON");
    status->add_option("--reason", reason, "why")->option_text("TEXT");
    CLI::App* check = app.add_subcommand("check", "checks a file");
    check->fallthrough(false);
    check->add_option("--config", config, "the file")->option_text("FILE")->required();
    pass = app.add_subcommand("pass", "passes its words on");
    pass->prefix_command()->allow_extras()->fallthrough(false);
    pass->set_help_flag();
  }

  std::optional<int> run(std::vector<std::string> args) { return parse(app, args, out, err); }
};

TEST(CommandLine, ValueAfterTheFlagOrAfterAnEqualsSign) {
  Tool a;
  EXPECT_EQ(a.run({"--socket", "/run/a.sock", "status", "--reason", "x y"}), std::nullopt)
      << a.err.str();
  Tool b;
  EXPECT_EQ(b.run({"--socket=/run/a.sock", "status", "--reason=x y"}), std::nullopt) << b.err.str();
  for (Tool* t : {&a, &b}) {
    EXPECT_EQ(t->socket, "/run/a.sock");
    EXPECT_EQ(t->reason, "x y");
    EXPECT_TRUE(t->status->parsed());
  }
}

TEST(CommandLine, ParentOptionsAfterTheCommandWithFallthrough) {
  Tool t;
  EXPECT_EQ(t.run({"status", "--socket", "/run/b.sock", "--json"}), std::nullopt) << t.err.str();
  EXPECT_EQ(t.socket, "/run/b.sock");
  EXPECT_TRUE(t.json);
}

TEST(CommandLine, ChoiceSetsTheValueItStandsFor) {
  Tool t;
  EXPECT_EQ(t.run({"--colour", "green", "status"}), std::nullopt) << t.err.str();
  EXPECT_EQ(t.colour, Colour::Green);
}

struct Case {
  std::vector<std::string> args;
  std::string problem;
};

TEST(CommandLine, UsageErrorsSayWhatIsWrongAndExit2) {
  std::vector<Case> cases = {
      {{"--socket", "a", "--socket", "b", "status"}, "--socket is given twice"},
      {{"--socket=a", "status", "--socket=b"}, "--socket is given twice"},
      {{"status", "--json", "--json"}, "--json is given twice"},
      {{"status", "--socket"}, "--socket needs a value"},
      // CLI11 alone would take "--json" as the socket.
      {{"status", "--socket=", "--json"}, "--socket needs a value"},
      {{"--socket", "", "status"}, "--socket needs a value"},
      {{"check"}, "--config FILE is required"},
      {{"--colour", "blue", "status"}, "--colour must be red or green"},
      {{"status", "--force"}, "unknown argument '--force'"},
      {{"--force", "status"}, "unknown argument '--force'"},
      {{"frob"}, "unknown command 'frob'"},
      {{"status", "check"}, "unknown argument 'check'"},
      {{}, "a command is required"},
  };
  for (const auto& test : cases) {
    Tool t;
    t.app.require_subcommand(1);
    EXPECT_EQ(t.run(test.args), kExitUsage) << test.problem;
    EXPECT_THAT(t.err.str(), StartsWith("tool: " + test.problem + "\nusage: tool"));
    EXPECT_EQ(t.out.str(), "");
  }
}

TEST(CommandLine, HelpForEachCommand) {
  Tool t;
  EXPECT_EQ(t.run({"--help"}), 0);
  EXPECT_EQ(t.out.str(),
            "usage: tool [--socket PATH] [--colour red|green]\n"
            "       tool COMMAND ...\n"
            "       tool --version\n"
            "\n"
            "Does things.\n"
            "\n"
            "options:\n"
            "  -h, --help          print this help and exit\n"
            "  --version           print the version and exit\n"
            "  --socket PATH       where\n"
            "  --colour red|green  which colour\n"
            "\n"
            "commands (each has its own --help):\n"
            "  status  shows the state.\n"
            "  check   checks a file\n"
            "  pass    passes its words on\n");

  Tool status;
  EXPECT_EQ(status.run({"status", "--help"}), 0);
  EXPECT_EQ(status.out.str(),
            "usage: tool [--socket PATH] [--colour red|green] status [--json] [--reason TEXT]\n"
            "\n"
            "shows the state.\n"
            "More about it.\n"
            "\n"
            "options:\n"
            "  -h, --help          print this help and exit\n"
            "  --json              as JSON\n"
            "  --reason TEXT       why\n"
            "  --socket PATH       where\n"
            "  --colour red|green  which colour\n");

  Tool check;
  EXPECT_EQ(check.run({"check", "-h"}), 0);
  EXPECT_THAT(check.out.str(), StartsWith("usage: tool check --config FILE\n"));
}

TEST(CommandLine, LongDescriptionsWrapAt100Columns) {
  Tool t;
  std::string text;
  for (int i = 0; i < 60; ++i) {
    text += "word" + std::to_string(i) + " ";
  }
  const std::string description = text;
  t.app.add_flag("--long", description);
  EXPECT_EQ(t.run({"--help"}), 0);
  std::istringstream lines(t.out.str());
  std::string line;
  int longLines = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 100u) << line;
    longLines += line.find("word") != std::string::npos;
  }
  EXPECT_GT(longLines, 3);
}

TEST(CommandLine, Version) {
  Tool t;
  EXPECT_EQ(t.run({"--version"}), 0);
  EXPECT_EQ(t.out.str(), "tool 1.2.3\n");
}

TEST(CommandLine, APassingCommandGetsItsWordsAsTheyAre) {
  Tool t;
  std::vector<std::string> words = {"--metadata=x", "--help", "-h", "--version", "--empty=", "y"};
  std::vector<std::string> args = {"pass"};
  args.insert(args.end(), words.begin(), words.end());
  EXPECT_EQ(t.run(args), std::nullopt) << t.err.str();
  EXPECT_TRUE(t.pass->parsed());
  EXPECT_EQ(t.pass->remaining(), words);
}

TEST(CommandLine, UsageErrorAfterParsingShowsTheCommandsHelp) {
  Tool t;
  EXPECT_EQ(t.run({"status"}), std::nullopt);
  EXPECT_EQ(usageError(t.app, "no such thing", t.err), kExitUsage);
  EXPECT_THAT(t.err.str(), StartsWith("tool: no such thing\nusage: tool [--socket PATH] "
                                      "[--colour red|green] status"));
  EXPECT_THAT(t.err.str(), HasSubstr("shows the state."));
}

}  // namespace
}  // namespace vipd::cli
