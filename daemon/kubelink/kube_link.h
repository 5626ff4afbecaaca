// The Speaker's side of the link to Kubernetes (issue 41): once a second it reads the status
// document into the VipdNode's status and the Events the change deserves (node_report.h) and
// hands them to kube::Link; and it carries out what the Node asks (the annotation
// vipd.io/withdraw, the out-of-service taint) through the withdraw guard and the Drainer, as
// `vipctl withdraw` is: a refusal leaves the request standing (an Event WithdrawRefused, the
// Announcing condition's reason), and it is asked again every second until the fabric allows it.
//
// Never in the announce path: nothing here runs unless the Node's object says so, and an API
// that is away, slow or hostile only delays the status and the Events (kube::Link bounds every
// exchange). Each change of the link's health is logged once.
//
// Owns: the kube::Link, the Node's last intent and the refusal standing against it, the last
// report (for the Events), the one-second timer.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/kubelink/node_report.h"
#include "daemon/lifecycle/drainer.h"
#include "kube/link.h"
#include "policy/withdraw_guard.h"

namespace vipd::daemon {

// What the link reads of the rest of the speaker; the Speaker implements it.
class KubeLinkHost {
 public:
  // The status document (`vipctl status`), without the link's own block.
  virtual nlohmann::json statusForKubernetes() const = 0;
  virtual policy::GuardCheck checkWithdraw(policy::GuardMoment moment) const = 0;
  // This instance speaks and is not shutting down: only then does it act on the Node's intent
  // and report (a standby instance does both once it takes over).
  virtual bool mayFollowIntent() const = 0;

 protected:
  ~KubeLinkHost() = default;
};

class KubeLink {
 public:
  KubeLink(asio::io_context& io, const config::Kubernetes& settings, Drainer& drainer,
           const Logger& log, KubeLinkHost& host);
  ~KubeLink();
  KubeLink(const KubeLink&) = delete;
  KubeLink& operator=(const KubeLink&) = delete;

  // Resolves the credentials and the node name, and starts the link. Never fatal: an error is
  // logged, kept for status and the metrics, and the speaker goes on without the link.
  void start();
  void stop();

  // The `kubernetes` block of the status document: {"enabled", and "error" or kube::Link's}.
  nlohmann::json status() const;

 private:
  void tick();
  void followIntent();
  void refused(const std::string& guardRefusal);

  asio::io_context& io_;
  const config::Kubernetes& settings_;
  Drainer& drainer_;
  const Logger& log_;
  KubeLinkHost& host_;
  std::unique_ptr<kube::Link> link_;
  std::optional<std::string> startError_;
  std::optional<kube::NodeIntent> intent_;
  // The withdraw guard's refusal of the Node's request, while it stands.
  std::optional<std::string> refusal_;
  std::optional<NodeReport> lastReport_;
  asio::steady_timer timer_;
  bool stopped_ = false;
};

}  // namespace vipd::daemon
