// parseControlRequest (daemon/control/request.h): the JSON request line of the control
// socket, parsed and type-checked before any command handler reads it; and ControlCommand, the
// names on the wire.
#include "daemon/control/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string_view>

namespace vipd::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ControlCommandTest, EveryCommandHasOneWireNameBothWays) {
  const ControlCommand all[] = {ControlCommand::Status, ControlCommand::Withdraw,
                                ControlCommand::Announce, ControlCommand::HandoffCheck,
                                ControlCommand::HandoffYield};
  std::set<std::string_view> names;
  for (auto c : all) {
    const auto name = commandName(c);
    EXPECT_NE(name, "?");
    EXPECT_EQ(commandNamed(name), c) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
  }
  // The names already on the wire: a vipctl of another version must keep reaching vipd.
  EXPECT_EQ(commandName(ControlCommand::Status), "status");
  EXPECT_EQ(commandName(ControlCommand::Withdraw), "withdraw");
  EXPECT_EQ(commandName(ControlCommand::Announce), "announce");
  EXPECT_EQ(commandName(ControlCommand::HandoffCheck), "handoff-check");
  EXPECT_EQ(commandName(ControlCommand::HandoffYield), "handoff-yield");
  EXPECT_EQ(knownCommands(), "status, withdraw, announce, handoff-check, handoff-yield");
  EXPECT_FALSE(commandNamed("ready").has_value());  // vipctl's, sent as status
  EXPECT_FALSE(commandNamed("Status").has_value());
  EXPECT_FALSE(commandNamed("").has_value());
}

// Which commands the server logs with their caller and skips for a client that has gone, and
// which it takes only from another vipd instance (root or vipd's own user).
TEST(ControlCommandTest, StateChangingAndInstanceOnlyCommands) {
  using enum ControlCommand;
  EXPECT_FALSE(changesState(Status));
  EXPECT_TRUE(changesState(Withdraw));
  EXPECT_TRUE(changesState(Announce));
  EXPECT_FALSE(changesState(HandoffCheck));  // asks, changes nothing on either side
  EXPECT_TRUE(changesState(HandoffYield));
  EXPECT_FALSE(betweenInstances(Status));
  EXPECT_FALSE(betweenInstances(Withdraw));
  EXPECT_FALSE(betweenInstances(Announce));
  EXPECT_TRUE(betweenInstances(HandoffCheck));
  EXPECT_TRUE(betweenInstances(HandoffYield));
}

TEST(ControlRequestTest, AcceptsWhatVipctlSends) {
  auto request = parseControlRequest(
      R"({"command":"withdraw","wait":true,"persist":false,"timeoutMs":5000,"reason":"x"})"
      "\n");
  ASSERT_TRUE(request.has_value()) << request.error();
  EXPECT_EQ(request->name, "withdraw");
  EXPECT_EQ(request->command, ControlCommand::Withdraw);
  EXPECT_TRUE(request->wait);
  EXPECT_FALSE(request->persist);
  EXPECT_FALSE(request->force);
  EXPECT_EQ(request->timeoutMs, 5000u);
  EXPECT_EQ(request->reason, "x");
  EXPECT_TRUE(request->identity.is_null());
  EXPECT_TRUE(parseControlRequest(R"({"command":"status","unknownField":[1,2]})").has_value());
  auto check = parseControlRequest(R"({"command":"handoff-check","identity":{"a":1}})");
  ASSERT_TRUE(check.has_value());
  EXPECT_EQ(check->command, ControlCommand::HandoffCheck);
  EXPECT_EQ(check->identity, nlohmann::json({{"a", 1}}));
}

// What a request leaves out has the handlers' defaults; an unknown command is still a request
// (the Speaker answers it with the known ones).
TEST(ControlRequestTest, AbsentFieldsHaveTheirDefaultsAndAnUnknownCommandIsNamed) {
  auto request = parseControlRequest(R"({"command":"withdraw"})");
  ASSERT_TRUE(request.has_value());
  EXPECT_TRUE(request->persist);
  EXPECT_FALSE(request->wait);
  EXPECT_FALSE(request->force);
  EXPECT_EQ(request->reason, std::nullopt);
  EXPECT_EQ(request->timeoutMs, std::nullopt);
  auto unknown = parseControlRequest(R"({"command":"reboot"})");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->name, "reboot");
  EXPECT_EQ(unknown->command, std::nullopt);
}

TEST(ControlRequestTest, RejectsWhatIsNotACommandObject) {
  for (const char* line : {"", "not json", "[]", "\"status\"", "{}", R"({"command":5})",
                           R"({"command":null})", "{\"command\":\"status\"", "\xff\xfe"}) {
    auto request = parseControlRequest(line);
    ASSERT_FALSE(request.has_value()) << line;
    EXPECT_EQ(request.error(), "malformed request: expected {\"command\": \"...\"}") << line;
  }
}

// Found while writing the control_request fuzz target, which reads a request the way the handlers
// do and aborts on this one without the check (reproducer: tests/fuzz/corpus/control_request/
// repro-persist-not-boolean). The handlers read optional fields with json::value(), which throws
// type_error 302 when the field has another type, and nothing catches on the io_context thread,
// so this request from a permitted caller ended vipd. The line is now refused with an error.
TEST(ControlRequestTest, FieldOfTheWrongTypeIsAnErrorNotAThrow) {
  const std::string line = R"({"command":"withdraw","persist":"no"})";
  auto raw = nlohmann::json::parse(line);
  EXPECT_THROW((void)raw.value("persist", true), nlohmann::json::type_error);

  auto request = parseControlRequest(line);
  ASSERT_FALSE(request.has_value());
  EXPECT_EQ(request.error(), "malformed request: \"persist\" must be a boolean, not string");
}

TEST(ControlRequestTest, EveryFieldAHandlerReadsIsTypeChecked) {
  struct Case {
    const char* line;
    const char* field;
  };
  for (const auto& c : {Case{R"({"command":"withdraw","wait":1})", "wait"},
                        Case{R"({"command":"withdraw","force":"yes"})", "force"},
                        Case{R"({"command":"withdraw","reason":["a"]})", "reason"},
                        Case{R"({"command":"withdraw","timeoutMs":-1})", "timeoutMs"},
                        Case{R"({"command":"withdraw","timeoutMs":1.5})", "timeoutMs"},
                        Case{R"({"command":"handoff-yield","identity":"x"})", "identity"}}) {
    auto request = parseControlRequest(c.line);
    ASSERT_FALSE(request.has_value()) << c.line;
    EXPECT_THAT(request.error(), StartsWith("malformed request: "));
    EXPECT_THAT(request.error(), HasSubstr(std::string("\"") + c.field + "\" must be"));
  }
}

// The reason goes into vipd's log, `vipctl status` and withdrawn.json: a newline in it forged a
// log line, an escape sequence reached the operator's terminal. Any control character (C0, DEL,
// C1) is refused, named; text in any script is fine.
TEST(ControlRequestTest, AReasonWithAControlCharacterIsRefused) {
  for (const auto& [line, named] :
       {std::pair{R"({"command":"withdraw","reason":"replace node\n)"
                  R"(2025-01-01T00:00:00.000Z info  drain: vipctl announce"})",
                  "a line feed (\\n)"},
        std::pair{R"({"command":"withdraw","reason":"x\u001b[2Jy"})", "\\x1b"},
        std::pair{R"({"command":"withdraw","reason":"x\ry"})", "a carriage return (\\r)"},
        std::pair{R"({"command":"withdraw","reason":"x\ty"})", "a tab (\\t)"},
        std::pair{R"({"command":"withdraw","reason":"x\u0000y"})", "\\x00"},
        std::pair{R"({"command":"withdraw","reason":"x\u007fy"})", "\\x7f"},
        std::pair{R"({"command":"withdraw","reason":"x\u009by"})", "\\u009b"}}) {
    auto request = parseControlRequest(line);
    ASSERT_FALSE(request.has_value()) << line;
    EXPECT_THAT(request.error(), StartsWith("malformed request: \"reason\" must be one line of "
                                            "printable text; it holds "))
        << line;
    EXPECT_THAT(request.error(), HasSubstr(named)) << line;
  }
  for (const char* line : {R"({"command":"withdraw","reason":"replace node, ticket #42"})",
                           R"({"command":"withdraw","reason":"Netzteil tauschen, größer"})"}) {
    EXPECT_TRUE(parseControlRequest(line).has_value()) << line;
  }
}

}  // namespace
}  // namespace vipd::daemon
