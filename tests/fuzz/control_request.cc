// Fuzz target: a control-socket request line. daemon/control/request.h is the pure
// part of the control server (JSON parse, the type check of every field a command handler
// reads, and the typed ControlRequest the handlers get); the rest of ControlServer is socket I/O.
// After a request is accepted, this target runs the handoff identity through identityFromJson()
// and handoffRefusal() (no exception may escape: nothing catches on the io_context thread, so a
// throw here is a crash of vipd).
//
// Checks: a rejection says "malformed request: ..."; no exception escapes; an identity that
// parses round-trips through toJson().
#include "daemon/control/request.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/lifecycle/handoff_protocol.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace daemon = vipd::daemon;
  const std::string_view line(reinterpret_cast<const char*>(data), size);

  auto request = daemon::parseControlRequest(line);
  if (!request) {
    VIPD_FUZZ_CHECK(request.error().starts_with("malformed request: "),
                    "rejections say what they are");
    return 0;
  }
  const auto& command = request->name;
  if (request->command) {
    VIPD_FUZZ_CHECK(daemon::commandName(*request->command) == command,
                    "a command's name names it");
  }
  if (request->reason) {
    VIPD_FUZZ_CHECK(!daemon::reasonProblem(*request->reason), "a reason passed the check");
  }
  auto theirs = daemon::identityFromJson(request->identity);
  if (theirs) {
    daemon::SpeakerIdentity mine{{1}, "static-pod", "192.0.2.11", 65001, {"203.0.113.10/32"}};
    (void)daemon::handoffRefusal(mine, *theirs);
    (void)daemon::handoffRefusal(*theirs, mine);
    auto again = daemon::identityFromJson(daemon::toJson(*theirs));
    VIPD_FUZZ_CHECK(again.has_value() && *again == *theirs, "identityFromJson(toJson(id)) == id");
  }
  // A response echoes the command; the server writes it with invalid UTF-8 replaced.
  nlohmann::json response{{"error", "unknown command '" + command + "'"}};
  (void)response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
