// What this node announces for each VIP, and whether its VIPs stay bound: one pure decision from
// every input (issues 19, 28). The Announcer (daemon/announce/announcer.h) gathers the inputs,
// calls decide() once per change, and carries the decision out; nothing else decides what is
// announced.
//
// In order:
//   1. Not the instance that speaks (standby, contending), shutting down, or the VIP not bound on
//      its interface: nothing (a VIP bound nowhere is never announced).
//   2. An operator's withdraw (vipctl withdraw, persisted or not) or a drain past its withdraw
//      step: nothing. The operator's decision is checked when it is made (the withdraw guard,
//      withdrawGuard()), not overridden here.
//   3. Automatic reasons to withdraw: the health gate closed (health.onFailure withdraw) after
//      the check passed at least once, the return-path check holding the VIP back
//      (returnPath.mode enforce). Normally nothing; but
//      never zero (issue 28): when the fabric's view says no other node serves the VIP (none
//      announces a path that is neither degraded nor draining), withdrawing would leave the VIP
//      without a path while this node can still answer, so the VIP stays announced, degraded
//      (the health.degrade attributes), and is withdrawn as soon as another node serves again.
//      Never zero at the same instant (issue 40): a view that shows others serving may be one
//      taken before they failed too (a shared cause fails every node within milliseconds, and
//      each would withdraw on the strength of the others' stale paths). So a node first
//      announces the VIP degraded, and withdraws only once that has been announced for the
//      confirmation time (FabricCount::withdrawConfirmed, kept by WithdrawConfirmation) and the
//      view, then, still shows another node serving: nodes failing together all see each
//      other degraded by then, and all stay, held.
//      Without a fabric view the rule cannot be applied: today's behaviour (withdraw), and the
//      decision says so (nothing tells a shared cause from this node's own failure, and a
//      failing node must leave: docs/config.md). A node whose health check has not passed since
//      start is not announced at all: nothing says it can serve.
//   4. Otherwise announced: degraded while the health check fails with health.onFailure
//      degrade, else normally.
// A VIP removed from the config (a live reload, issue 29) is never announced: it stays in the
// decision, withdrawn, until the speaker has seen the peers acknowledge that and unbound it.
// Binding: the VIPs stay bound unless the speaker may not bind at all (1, 2) or the failing
// health check unbinds them (health.unbindWhenUnhealthy) and no VIP is held by never-zero.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bgp/ip_address.h"

namespace vipd::policy {

enum class Announce { None, Normal, Degraded };
std::string_view announceName(Announce announce);

// The fabric's view of one VIP, as the policy needs it.
struct FabricCount {
  bool available = false;
  size_t othersServing = 0;  // other nodes announcing a path neither degraded nor draining
  // This node has wanted an automatic withdrawal of the VIP, and announced it degraded, for at
  // least the confirmation time (WithdrawConfirmation): the fabric, and the other nodes, have
  // seen that, so othersServing now counts only nodes that did not fail with this one.
  bool withdrawConfirmed = false;
};

struct PolicyInputs {
  bool active = true;  // this instance holds the speaker lock
  bool shuttingDown = false;
  bool operatorWithdrawn = false;  // vipctl withdraw (the withdrawn state), not yet announced
  bool draining = false;           // a drain is in progress
  bool drainWithdrawSent = false;  // ... and has reached its withdraw step
  bool healthy = true;
  // The health check has passed at least once since start: only a node that proved it can
  // serve is held announced for the never-zero rule (a node starting up is not).
  bool healthEverPassed = true;
  bool degradeOnFailure = false;     // health.onFailure degrade
  bool unbindWhenUnhealthy = false;  // health.unbindWhenUnhealthy (with onFailure withdraw)
  std::set<bgp::Prefix> vips;        // every configured VIP
  // VIPs a reload removed from the config, not yet unbound: withdrawn, whatever else holds.
  std::set<bgp::Prefix> removing;
  std::set<bgp::Prefix> bound;       // bound on their interface (announceable)
  std::set<bgp::Prefix> returnPathBlocks;  // held back by the return-path check (enforce)
  std::map<bgp::Prefix, FabricCount> fabric;  // absent: no view
};

struct VipDecision {
  Announce announce = Announce::None;
  // Why it is not announced normally (empty when it is): for status, /readyz and logs.
  std::string reason;
  // Held announced (degraded) by the never-zero rule instead of withdrawn.
  bool heldByNeverZero = false;
  // An automatic withdrawal that the never-zero rule could not check (no fabric view).
  bool unguardedWithdrawal = false;
  // An automatic reason to withdraw, with a fabric view: held, confirming, or withdrawn. The
  // caller's WithdrawConfirmation runs its clock while this holds.
  bool wantsWithdrawal = false;
  // Announced degraded until the withdrawal is confirmed (FabricCount::withdrawConfirmed).
  bool confirmingWithdrawal = false;
};

struct Decision {
  std::map<bgp::Prefix, VipDecision> vips;
  bool mayBind = false;  // VipKeeper may bind (and keep bound) the VIPs
  // The failing health check unbinds the VIPs (health.unbindWhenUnhealthy, nothing held).
  bool unbindForHealth = false;

  std::set<bgp::Prefix> announced() const;  // Normal or Degraded
  std::set<bgp::Prefix> degraded() const;
  bool anyHeldByNeverZero() const;
  // The VIPs with wantsWithdrawal (WithdrawConfirmation::observe()).
  std::set<bgp::Prefix> wantingWithdrawal() const;
};

Decision decide(const PolicyInputs& in);

// The withdraw guard (issue 28): may an operator take this node off the VIPs? Refused when, for
// some VIP this node announces, fewer than `minAnnouncers` nodes would remain announcing it
// (others that are not draining). nullopt: allowed; else the VIPs and who would remain.
struct GuardInputs {
  size_t minAnnouncers = 1;
  std::set<bgp::Prefix> announced;  // what this node announces now
  std::map<bgp::Prefix, size_t> othersStaying;  // per VIP with a fabric view
};
struct GuardRefusal {
  std::map<bgp::Prefix, size_t> remaining;  // the VIPs that would fall short, and who'd remain
};
std::optional<GuardRefusal> withdrawGuard(const GuardInputs& in);

}  // namespace vipd::policy
