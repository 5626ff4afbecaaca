// What is announced, carried out (issue 43): the one room between policy::decide() and the
// sessions. It gathers the inputs of the decision (the VIPs bound, the fabric's view of the
// paths the peers send back, the withdrawal confirmations, the VIPs a reload removes, and what
// the other rooms report through AnnouncerHost), decides once per change, keeps that decision
// and the fabric view it was taken on, and carries it out: every session's announcements, the
// VIPs' binding (the VipKeeper is its own), the unbinding that follows a withdrawal (the failing
// health check's, a removed VIP's), and the never-zero bookkeeping (the confirmation clocks and
// what the log last said). Status, /readyz, the logs and the withdraw guard read the kept
// decision; none decides again.
//
// When it decides: announce() (every change that reaches the wire: the kernel, a session, the
// fabric, the health gate, the return-path check, the drain, a reload), refresh() (the withdraw
// guard reads the inputs at the moment it is asked; a reload's new VIPs and health settings are
// inputs the gate does not show), and a read of the kept decision that finds the gate changed
// (the role, the drain, the health gate, shutting down: changes that send nothing by
// themselves) or finds no decision taken yet. Each builds the fabric view once for the decision; announce() builds it
// once more after the sessions took the new announcements, so that the view it keeps shows this
// node's own path as the peers now have it.
//
// Owns: the VipKeeper (and through it the bindings), the last decision and fabric view, the
// withdrawal confirmations and their timer, the fabric-settle timer, this node's own addresses,
// whether the health check ever passed, the health gate's unbinding and each removed VIP's.
// Reaches the sessions through the Speaker's session list (read, and setAnnouncements()), the
// config through the Speaker's running config, and everything else through AnnouncerHost.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/lifecycle/unbind_after_withdraw.h"
#include "daemon/session/peer_session.h"
#include "daemon/vip/keeper.h"
#include "netlink/address_table.h"
#include "policy/announce_policy.h"
#include "policy/fabric_view.h"
#include "policy/withdraw_confirmation.h"
#include "policy/withdraw_guard.h"

namespace vipd::daemon {

// What the other rooms own and the decision reads, at the moment it is taken.
struct AnnounceGate {
  bool active = false;  // this instance speaks (Handoff)
  bool shuttingDown = false;
  bool withdrawn = false;          // vipctl withdraw (Drainer)
  bool draining = false;           // a drain is in progress (Drainer)
  bool drainWithdrawSent = false;  // ... and has reached its withdraw step
  bool healthy = true;             // the health gate (HealthChecker)
  bool operator==(const AnnounceGate&) const = default;
};

class AnnouncerHost {
 public:
  virtual AnnounceGate gate() const = 0;
  // The return-path check holds `vip` back (returnPath.mode enforce).
  virtual bool returnPathBlocks(const bgp::Prefix& vip) const = 0;

 protected:
  ~AnnouncerHost() = default;
};

class Announcer final : private VipKeeperHost {
 public:
  // `config` (the running config) and `peers` (the sessions, in config.peers' order) are the
  // Speaker's and must outlive the Announcer; so must `table` and `monitor`.
  Announcer(asio::io_context& io, const config::Config& config,
            const std::vector<std::unique_ptr<PeerSession>>& peers,
            netlink::AddressTable& table, netlink::Monitor& monitor, const Logger& log,
            AnnouncerHost& host);

  // ---- deciding ----
  // Decides again and carries the decision out: every session's announcements, the
  // confirmation clocks (their timer announces again when one runs out), one log line per
  // change of what the never-zero rule holds.
  void announce();
  // Decides again and keeps the decision, sending nothing. Const: the kept decision is a cache
  // of the inputs, which this only brings up to date.
  const policy::Decision& refresh() const;
  // The kept decision and the fabric view it was taken on (status, /readyz, the logs, the
  // bindings): decided again only when AnnouncerHost::gate() has changed since (or when none
  // was taken yet: an instance that never spoke still reports every VIP).
  const policy::Decision& decision() const;
  const std::map<bgp::Prefix, policy::VipView>& fabricView() const;
  // How many decisions were taken since start (each change takes one; reads take none).
  uint64_t decisionsTaken() const { return decisionsTaken_; }
  // Whether `vip` is advertised to at least one Established peer now.
  bool advertised(const bgp::Prefix& vip) const;
  // A session changed state or the paths a peer holds for the VIPs changed.
  void onFabricChange();

  // ---- the withdraw guard (guard.minAnnouncers), the one check for every way off ----
  // policy::checkWithdraw() over the inputs now, for the VIPs announced now that `takesOff`
  // (every one when null): vipctl withdraw at the request and at the end of the drain's
  // GRACEFUL_SHUTDOWN phase, a reload that would take VIPs off, and (later) a Kubernetes
  // request.
  policy::GuardCheck checkWithdraw(
      policy::GuardMoment moment,
      const std::function<bool(const bgp::Prefix&)>& takesOff = nullptr) const;

  // ---- binding ----
  // This instance starts speaking, not withdrawn: binds the VIPs, unless the failing health
  // check unbinds them (health.unbindWhenUnhealthy: then what vipd added is removed, and bound
  // once the check passes).
  void takeAddresses();
  // vipctl announce: bind, then announce.
  void bindAndAnnounce();
  void unbindOwned() { vips_.unbindOwned(); }
  // The health gate changed; the checker has logged it.
  void onHealthChange(bool healthy);
  // The health gate may have changed what may be bound: bind again what it unbound, or start
  // unbinding (health.unbindWhenUnhealthy).
  void followHealthBinding();
  // The VIPs are unbound because the failing health check unbinds them.
  bool heldForHealth() const { return vipsHeldForHealth_; }
  // health.onFailure degrade and the check failing: the worse path is announced.
  bool degradedNow() const;

  // ---- a reload ----
  // What a reload changes here, carried out in one visit (a live reload enters the Announcer
  // once): the VIPs removed (withdrawn, then unbound once the peers acknowledge; `released`
  // runs for each once it is forgotten), changed and added (kept if a removal was in progress;
  // the added ones bound once the decision allows), the health gate's new verdict when the new
  // health settings changed it (`healthFlipped`), the binding the health settings decide
  // (`healthSettings`), then one announce.
  struct ReloadChanges {
    std::vector<bgp::Prefix> vipsRemoved;
    std::vector<config::Vip> vipsChanged;
    std::vector<config::Vip> vipsAdded;
    bool healthSettings = false;
    std::optional<bool> healthFlipped;
  };
  void applyReload(const ReloadChanges& changes,
                   const std::function<void(const bgp::Prefix&)>& released);

  // ---- a reload's VIPs ----
  // Withdraws `vip` (policy input `removing`), then unbinds and forgets it once the peers have
  // acknowledged; `forgotten` runs then (the VIP's instance lock is released).
  void removeVip(const bgp::Prefix& vip, std::function<void()> forgotten);
  // `vip` is configured again: its removal (if one is in progress) is abandoned; returns whether
  // there was one.
  bool keepVip(const bgp::Prefix& vip) { return removing_.erase(vip) != 0; }
  bool removing(const bgp::Prefix& vip) const { return removing_.count(vip) != 0; }
  const std::map<bgp::Prefix, std::unique_ptr<UnbindAfterWithdraw>>& removals() const {
    return removing_;
  }
  // The VIPs bound on their interface, less those a reload removed (the return-path check's).
  std::set<bgp::Prefix> announceableVips() const;

  // The Established sessions with bytes not yet acknowledged, one line each (empty: all
  // acknowledged), for the drain and the unbinding after a withdrawal.
  std::vector<std::string> unacknowledgedPeers() const;
  // Stops every timer (the process stops).
  void stop();

  VipKeeper& vips() { return vips_; }
  const VipKeeper& vips() const { return vips_; }

  // How long a session is Established before its fabric view counts as complete: a peer sends
  // what it holds right after the session opens (milliseconds here); this leaves a loaded one
  // room.
  static constexpr std::chrono::seconds kFabricSettle{2};

 private:
  // ---- VipKeeperHost ----
  bool mayBind() const override;
  bool stopping() const override { return host_.gate().shuttingDown; }
  void pushAnnouncements() override { announce(); }

  std::map<bgp::Prefix, policy::VipView> buildView() const;
  policy::Decision decide(const std::map<bgp::Prefix, policy::VipView>& view) const;
  void logDecisionChanges(const policy::Decision& decision);
  // This instance speaks and nothing else decides its bindings: not withdrawn, not draining,
  // not shutting down. Only then does the health gate bind or unbind.
  bool healthOwnsBinding() const;
  // The end of a drain for the withdrawal the failing check caused (UnbindAfterWithdraw).
  void unbindForHealthOnceAcknowledged();

  asio::io_context& io_;
  const config::Config& config_;
  const std::vector<std::unique_ptr<PeerSession>>& peers_;
  netlink::AddressTable& table_;
  const Logger& log_;
  AnnouncerHost& host_;
  VipKeeper vips_;
  // The last decision and the view it was taken on (refresh() brings them up to date).
  mutable policy::Decision decision_;
  mutable std::map<bgp::Prefix, policy::VipView> view_;
  // What the other rooms reported for decision_; nullopt before the first decision.
  mutable std::optional<AnnounceGate> gate_;
  mutable uint64_t decisionsTaken_ = 0;
  // This node's own addresses (not the VIPs): a path sent back with one of them as next hop is
  // this node's. Re-read from the kernel on every fabric change.
  std::set<bgp::IpAddress> ownAddresses_;
  // Re-decides once a newly Established session has had time to send its paths (kFabricSettle).
  asio::steady_timer fabricSettleTimer_;
  // Never zero at the same instant (issue 40): how long each automatic withdrawal has been
  // announced degraded; announce() feeds it and decides again when a clock runs out.
  policy::WithdrawConfirmation withdrawConfirmation_;
  asio::steady_timer withdrawConfirmTimer_;
  // The health check has passed at least once since start (the never-zero rule holds only a
  // node that proved it can serve).
  bool healthEverPassed_ = false;
  // What the log last said about the never-zero rule and the fabric, so each change is logged
  // once: VIPs held announced, VIPs withdrawn without a fabric view, duplicate router IDs.
  std::set<bgp::Prefix> loggedHeld_;
  std::set<bgp::Prefix> loggedUnguarded_;
  std::set<std::string> loggedDuplicates_;
  // After a failing health check withdrew the VIPs: the peers' acknowledgements, then
  // drain.unbindDelay, then the unbind (health.unbindWhenUnhealthy).
  UnbindAfterWithdraw healthUnbind_;
  // The VIPs were unbound (or never bound) because the health check fails; bound again when it
  // passes.
  bool vipsHeldForHealth_ = false;
  // VIPs a reload removed, withdrawn and waiting for the peers' acknowledgement before they are
  // unbound (policy input `removing`); each with the timer of that wait.
  std::map<bgp::Prefix, std::unique_ptr<UnbindAfterWithdraw>> removing_;
};

// Every address of this node with its prefix length (the return-path relay policy's node
// networks, and the fabric view's own next hops). Empty when the kernel cannot be read.
std::vector<bgp::Prefix> interfacePrefixes(netlink::AddressTable& table);

}  // namespace vipd::daemon
