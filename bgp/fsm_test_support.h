// Helpers shared by the session FSM and UPDATE builder tests: picking actions out of an Actions
// list, decoding what the FSM sent (directly and through a MessageFramer one byte at a time), and
// readable printing of the values gtest shows on failure.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "bgp/codec.h"
#include "bgp/message.h"
#include "bgp/message_framer.h"
#include "bgp/session_fsm.h"

namespace vipd::bgp {

// gtest printers, found by ADL, so failures show addresses and states rather than raw bytes.
inline void PrintTo(const IpAddress& address, std::ostream* os) { *os << address.toString(); }
inline void PrintTo(const Prefix& prefix, std::ostream* os) { *os << prefix.toString(); }
inline void PrintTo(SessionState state, std::ostream* os) { *os << sessionStateName(state); }
inline void PrintTo(const AfiSafi& family, std::ostream* os) {
  *os << "AFI " << static_cast<int>(family.afi) << " SAFI " << static_cast<int>(family.safi);
}
inline void PrintTo(const NotificationMessage& n, std::ostream* os) {
  *os << describeNotification(n.code, n.subcode) << " data " << ::testing::PrintToString(n.data);
}

namespace testing {

// Test-only constructors; the production code parses from config.
inline IpAddress ip(std::string_view text) {
  auto parsed = IpAddress::parse(text);
  EXPECT_TRUE(parsed.has_value()) << "bad test address " << text;
  return parsed.value_or(IpAddress{});
}

inline Prefix prefix(std::string_view text) {
  auto parsed = Prefix::parse(text);
  EXPECT_TRUE(parsed.has_value()) << "bad test prefix " << text;
  return parsed.value_or(Prefix{});
}

// Every action of type T, in order.
template <class T>
std::vector<T> actionsOf(const Actions& actions) {
  std::vector<T> result;
  for (const auto& action : actions) {
    if (const auto* a = std::get_if<T>(&action)) {
      result.push_back(*a);
    }
  }
  return result;
}

// Index of the first action of type T, nullopt when there is none.
template <class T>
std::optional<size_t> indexOf(const Actions& actions) {
  for (size_t i = 0; i < actions.size(); ++i) {
    if (std::holds_alternative<T>(actions[i])) {
      return i;
    }
  }
  return std::nullopt;
}

// Arm actions for one timer, in order.
inline std::vector<Arm> armsOf(const Actions& actions, TimerKind timer) {
  std::vector<Arm> result;
  for (const auto& arm : actionsOf<Arm>(actions)) {
    if (arm.timer == timer) {
      result.push_back(arm);
    }
  }
  return result;
}

inline bool cancels(const Actions& actions, TimerKind timer) {
  for (const auto& cancel : actionsOf<Cancel>(actions)) {
    if (cancel.timer == timer) {
      return true;
    }
  }
  return false;
}

// "Send(OPEN) Arm(Hold 240000ms) StateChanged(Connect->OpenSent)", for failure messages.
inline std::string describe(const Actions& actions) {
  std::string text;
  for (const auto& action : actions) {
    if (!text.empty()) {
      text += ' ';
    }
    std::visit(
        [&](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, Connect>) {
            text += "Connect";
          } else if constexpr (std::is_same_v<T, Send>) {
            text += "Send(" + std::string(messageTypeName(a.type)) + ")";
          } else if constexpr (std::is_same_v<T, Arm>) {
            text += "Arm(" + std::string(timerName(a.timer)) + " " +
                    std::to_string(a.after.count()) + "ms)";
          } else if constexpr (std::is_same_v<T, Cancel>) {
            text += "Cancel(" + std::string(timerName(a.timer)) + ")";
          } else if constexpr (std::is_same_v<T, Disconnect>) {
            text += "Disconnect(" + a.reason + ")";
          } else if constexpr (std::is_same_v<T, AdoptIncoming>) {
            text += "AdoptIncoming";
          } else if constexpr (std::is_same_v<T, RejectIncoming>) {
            text += "RejectIncoming(" + a.reason + ")";
          } else if constexpr (std::is_same_v<T, HoldIncoming>) {
            text += "HoldIncoming";
          } else if constexpr (std::is_same_v<T, StateChanged>) {
            text += "StateChanged(" + std::string(sessionStateName(a.from)) + "->" +
                    std::string(sessionStateName(a.to)) + ")";
          } else if constexpr (std::is_same_v<T, Notice>) {
            text += "Notice(" + a.text + ")";
          } else if constexpr (std::is_same_v<T, WatchedPathsChanged>) {
            text += "WatchedPathsChanged";
          }
        },
        action);
  }
  return text;
}

// Decodes one whole message the FSM or the builder produced. Also feeds it to a MessageFramer one
// byte at a time and checks that the framer delivers exactly these bytes, once, at the last byte,
// and that they decode to the same value. A decode failure is a test failure; the returned value
// is then a NOTIFICATION 0/0 that matches nothing a test expects.
inline Message decodeWire(std::span<const uint8_t> wire, const CodecOptions& options = {}) {
  auto decoded = decode(wire, options);
  if (!decoded) {
    ADD_FAILURE() << "our own message does not decode: " << decoded.error().reason;
    return NotificationMessage{};
  }
  MessageFramer framer;
  std::optional<std::vector<uint8_t>> framed;
  for (size_t i = 0; i < wire.size(); ++i) {
    framer.append(wire.subspan(i, 1));
    auto next = framer.next();
    if (!next) {
      ADD_FAILURE() << "framer rejected byte " << i << ": " << next.error().reason;
      return NotificationMessage{};
    }
    if (next->has_value()) {
      EXPECT_EQ(i + 1, wire.size()) << "framer delivered a message before its last byte";
      framed = std::move(**next);
    }
  }
  EXPECT_EQ(framer.bufferedBytes(), 0u);
  if (!framed) {
    ADD_FAILURE() << "framer never delivered the message";
    return NotificationMessage{};
  }
  EXPECT_EQ(*framed, std::vector<uint8_t>(wire.begin(), wire.end()));
  auto again = decode(*framed, options);
  EXPECT_TRUE(again.has_value());
  if (again) {
    EXPECT_TRUE(again->message == decoded->message) << "byte-at-a-time decode differs";
  }
  return decoded->message;
}

// Decodes a Send action, checking that its declared type is the type on the wire.
inline Message decodeSent(const Send& send, const CodecOptions& options = {}) {
  Message message = decodeWire(send.bytes, options);
  EXPECT_EQ(static_cast<int>(messageTypeOf(message)), static_cast<int>(send.type));
  return message;
}

// Every message sent in `actions`, decoded, in order.
inline std::vector<Message> sentMessages(const Actions& actions, const CodecOptions& options = {}) {
  std::vector<Message> result;
  for (const auto& send : actionsOf<Send>(actions)) {
    result.push_back(decodeSent(send, options));
  }
  return result;
}

// The sent messages of type T, in order.
template <class T>
std::vector<T> sentOf(const Actions& actions, const CodecOptions& options = {}) {
  std::vector<T> result;
  for (const auto& message : sentMessages(actions, options)) {
    if (const auto* m = std::get_if<T>(&message)) {
      result.push_back(*m);
    }
  }
  return result;
}

inline NotificationMessage notification(ErrorCode code, uint8_t subcode,
                                        std::vector<uint8_t> data = {}) {
  return NotificationMessage{static_cast<uint8_t>(code), subcode, std::move(data)};
}

}  // namespace testing
}  // namespace vipd::bgp
