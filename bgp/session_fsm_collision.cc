// SessionFsm (session_fsm.h), incoming connections and connection collisions (RFC 4271 section
// 6.8): a second connection from the peer is read until its OPEN says which one stays. Pure, as
// the rest of the FSM.
#include <fmt/format.h>

#include "bgp/session_fsm.h"

namespace vipd::bgp {

// ---- Incoming connections and collisions (RFC 4271 section 6.8) ----

Actions SessionFsm::onIncomingConnection(const IpAddress& local) {
  Actions out;
  if (stopped_) {
    out.push_back(RejectIncoming{{}, "session is administratively stopped"});
    return out;
  }
  switch (state_) {
    case SessionState::Idle:
    case SessionState::Connect:
    case SessionState::Active:
      if (state_ == SessionState::Connect) {
        out.push_back(Disconnect{"peer connected to us first; dropping our connection attempt"});
      }
      cancelAll(out);
      out.push_back(AdoptIncoming{});
      openConnection(out, local);
      return out;
    case SessionState::OpenSent:
    case SessionState::OpenConfirm:
      if (incomingFramer_) {
        out.push_back(RejectIncoming{{}, "already resolving a connection collision"});
        return out;
      }
      incomingFramer_.emplace();
      incomingLocal_ = local;
      out.push_back(HoldIncoming{});
      return out;
    case SessionState::Established: {
      NotificationMessage cease{static_cast<uint8_t>(ErrorCode::Cease),
                                subcode::kConnectionCollisionResolution, {}};
      countRejectNotification(cease);
      out.push_back(RejectIncoming{encode(cease), "a session is already Established"});
      return out;
    }
  }
  return out;
}

void SessionFsm::countRejectNotification(const NotificationMessage& notification) {
  counters_.lastNotificationSent = notification;
  counters_.messagesSent[static_cast<size_t>(MessageType::Notification)]++;
  counters_.notificationsSentByCode[{notification.code, notification.subcode}]++;
}

void SessionFsm::rejectIncoming(Actions& out, std::optional<NotificationMessage> notification,
                                std::string reason) {
  std::vector<uint8_t> bytes;
  if (notification) {
    countRejectNotification(*notification);
    bytes = encode(*notification);
  }
  out.push_back(RejectIncoming{std::move(bytes), std::move(reason)});
  incomingFramer_.reset();
  incomingLocal_.reset();
}

void SessionFsm::onIncomingClosed() {
  incomingFramer_.reset();
  incomingLocal_.reset();
}

Actions SessionFsm::onIncomingBytes(std::span<const uint8_t> bytes) {
  Actions out;
  if (!incomingFramer_) {
    return out;
  }
  incomingFramer_->append(bytes);
  auto next = incomingFramer_->next();
  if (!next) {
    rejectIncoming(out, next.error().notification, next.error().reason);
    return out;
  }
  if (!next->has_value()) {
    return out;
  }
  auto decoded = decode(**next, CodecOptions{});
  if (!decoded) {
    rejectIncoming(out, decoded.error().notification, decoded.error().reason);
    return out;
  }
  const auto* open = std::get_if<OpenMessage>(&decoded->message);
  if (!open) {
    rejectIncoming(out,
                   NotificationMessage{static_cast<uint8_t>(ErrorCode::FsmError),
                                       subcode::kUnexpectedInOpenSent, {}},
                   "incoming connection sent something other than OPEN first");
    return out;
  }
  NotificationMessage cease{static_cast<uint8_t>(ErrorCode::Cease),
                            subcode::kConnectionCollisionResolution, {}};
  bool existingAlive = state_ == SessionState::OpenSent || state_ == SessionState::OpenConfirm ||
                       state_ == SessionState::Established;
  // The connection opened by the speaker with the higher BGP Identifier survives.
  if (existingAlive && (state_ == SessionState::Established ||
                        config_.routerId >= open->bgpIdentifier)) {
    rejectIncoming(out, cease,
                   fmt::format("connection collision: our router ID {} is higher; keeping our "
                               "connection",
                               IpAddress::v4(config_.routerId).toString()));
    return out;
  }
  if (existingAlive) {
    sendNotification(out, cease);
    out.push_back(Disconnect{"connection collision: the peer's router ID is higher"});
  } else if (state_ == SessionState::Connect) {
    // Our session failed while this connection was held and we are dialing again: abandon the
    // attempt, or its completion would replace the connection adopted here.
    out.push_back(Disconnect{"peer connected to us first; dropping our connection attempt"});
  }
  auto local = *incomingLocal_;
  incomingFramer_.reset();
  incomingLocal_.reset();
  cancelAll(out);
  out.push_back(AdoptIncoming{});
  openConnection(out, local);
  handleOpen(out, *open);
  return out;
}

}  // namespace vipd::bgp
