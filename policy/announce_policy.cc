#include "policy/announce_policy.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vipd::policy {

std::string_view announceName(Announce announce) {
  switch (announce) {
    case Announce::None:
      return "none";
    case Announce::Normal:
      return "normal";
    case Announce::Degraded:
      return "degraded";
  }
  return "unknown";
}

std::set<bgp::Prefix> Decision::announced() const {
  std::set<bgp::Prefix> out;
  for (const auto& [vip, d] : vips) {
    if (d.announce != Announce::None) {
      out.insert(vip);
    }
  }
  return out;
}

std::set<bgp::Prefix> Decision::degraded() const {
  std::set<bgp::Prefix> out;
  for (const auto& [vip, d] : vips) {
    if (d.announce == Announce::Degraded) {
      out.insert(vip);
    }
  }
  return out;
}

bool Decision::anyHeldByNeverZero() const {
  return std::any_of(vips.begin(), vips.end(),
                     [](const auto& entry) { return entry.second.heldByNeverZero; });
}

std::set<bgp::Prefix> Decision::wantingWithdrawal() const {
  std::set<bgp::Prefix> out;
  for (const auto& [vip, d] : vips) {
    if (d.wantsWithdrawal) {
      out.insert(vip);
    }
  }
  return out;
}

Decision decide(const PolicyInputs& in) {
  Decision out;
  const bool speaking = in.active && !in.shuttingDown;
  const bool operatorOff = in.drainWithdrawSent || (in.operatorWithdrawn && !in.draining);
  const bool healthWithdraws = !in.healthy && !in.degradeOnFailure;
  const bool notYetHealthy = healthWithdraws && !in.healthEverPassed;
  for (const auto& vip : in.vips) {
    VipDecision d;
    std::vector<std::string> automatic;
    if (healthWithdraws && in.healthEverPassed) {
      automatic.emplace_back("health gate closed");
    }
    if (in.returnPathBlocks.count(vip) != 0) {
      automatic.emplace_back("VIP-sourced packets get no answer (return path)");
    }
    if (!speaking) {
      d.reason = in.shuttingDown ? "shutting down" : "this instance does not speak BGP";
    } else if (operatorOff) {
      d.reason = in.draining ? "draining: withdrawn" : "withdrawn by the operator";
    } else if (notYetHealthy) {
      d.reason = "health check not passed yet";
    } else if (!automatic.empty()) {
      auto fabric = in.fabric.find(vip);
      const bool viewed = fabric != in.fabric.end() && fabric->second.available;
      const auto why = fmt::format("{}", fmt::join(automatic, "; "));
      d.wantsWithdrawal = viewed;
      if (viewed && fabric->second.othersServing == 0) {
        d.announce = Announce::Degraded;
        d.heldByNeverZero = true;
        d.reason = fmt::format("{}; kept announced, degraded: no other node serves it in the "
                               "fabric, and withdrawing would leave it no path (withdrawn as "
                               "soon as another node does)",
                               why);
      } else if (viewed && !fabric->second.withdrawConfirmed) {
        d.announce = Announce::Degraded;
        d.confirmingWithdrawal = true;
        d.reason = fmt::format("{}; announced degraded first, withdrawn once the fabric has seen "
                               "that and still shows another node serving it (now {}): nodes "
                               "failing together must not all leave on each other's old paths",
                               why, fabric->second.othersServing);
      } else {
        d.reason = viewed ? fmt::format("{}; withdrawn ({} other node(s) serve it)", why,
                                        fabric->second.othersServing)
                          : fmt::format("{}; withdrawn without a fabric view (the never-zero "
                                        "rule cannot check that another node serves it)",
                                        why);
        d.unguardedWithdrawal = !viewed;
      }
    } else if (!in.healthy && in.degradeOnFailure) {
      d.announce = Announce::Degraded;
      d.reason = "health check failing: announced degraded (health.onFailure degrade)";
    } else {
      d.announce = Announce::Normal;
    }
    if (d.announce != Announce::None && in.bound.count(vip) == 0) {
      // Never a path to a node that lacks the address; the binder says why it is not bound.
      d.announce = Announce::None;
      d.heldByNeverZero = false;
      d.confirmingWithdrawal = false;
      d.reason = "not bound on its interface";
    }
    if (in.bound.count(vip) == 0) {
      d.wantsWithdrawal = false;  // nothing announced to confirm a withdrawal with
    }
    out.vips.emplace(vip, std::move(d));
  }
  for (const auto& vip : in.removing) {
    // Whatever the rest says (the never-zero rule included): the operator took it out.
    out.vips[vip] = VipDecision{Announce::None,
                                "removed from the config: withdrawn, and unbound once the peers "
                                "have acknowledged that",
                                false, false, false, false};
  }
  // Binding: a never-zero hold, or a withdrawal still being confirmed, needs the VIP bound even
  // while the health check unbinds. A drain before its withdraw step holds like anything else
  // (its VIPs are still announced); once it has withdrawn, the drain unbinds them itself.
  bool held = false;
  if (speaking && !operatorOff && healthWithdraws && in.healthEverPassed) {
    for (const auto& vip : in.vips) {
      auto fabric = in.fabric.find(vip);
      held = held || (in.removing.count(vip) == 0 && fabric != in.fabric.end() &&
                      fabric->second.available &&
                      (fabric->second.othersServing == 0 || !fabric->second.withdrawConfirmed));
    }
  }
  const bool healthUnbinds = healthWithdraws && in.unbindWhenUnhealthy && !held;
  out.unbindForHealth = healthUnbinds;
  out.mayBind = speaking && !in.operatorWithdrawn && !in.draining && !healthUnbinds;
  return out;
}

std::optional<GuardRefusal> withdrawGuard(const GuardInputs& in) {
  GuardRefusal refusal;
  for (const auto& vip : in.announced) {
    auto others = in.othersStaying.find(vip);
    if (others == in.othersStaying.end()) {
      continue;  // no fabric view for it: the guard cannot check (the caller says so)
    }
    if (others->second < in.minAnnouncers) {
      refusal.remaining[vip] = others->second;
    }
  }
  if (refusal.remaining.empty()) {
    return std::nullopt;
  }
  return refusal;
}

}  // namespace vipd::policy
