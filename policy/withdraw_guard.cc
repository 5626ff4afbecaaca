#include "policy/withdraw_guard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "policy/announce_policy.h"

namespace vipd::policy {
namespace {

// Whether a draining announcer is ranked before this node: it stays when both are draining.
// Only what every node reads the same way counts: a router ID (ORIGINATOR_ID) against this
// node's router ID, or a next hop that is the node's own (not the sending router's, which
// rewrote it) against this node's next hop of the same family. Anything else: not before.
bool rankedBefore(const Announcer& a, const GuardSelf& self) {
  if (a.originatorId) {
    return *a.originatorId < self.routerId;
  }
  if (a.via.count(a.nextHop) != 0) {
    return false;  // the next hop is the router that sent it: the node is not named
  }
  for (const auto& own : self.nextHops) {
    if (own.family == a.nextHop.family) {
      return a.nextHop < own;  // self.nextHops is ordered: the lowest of the family
    }
  }
  return false;
}

}  // namespace

size_t othersStayingAt(const VipView& view, const GuardSelf& self, GuardMoment moment) {
  size_t staying = 0;
  for (const auto& a : view.announcers) {
    if (a.self) {
      continue;
    }
    if (!a.draining || (moment == GuardMoment::Effect && rankedBefore(a, self))) {
      ++staying;
    }
  }
  return staying;
}

GuardCheck checkWithdraw(const std::map<bgp::Prefix, VipView>& views,
                         const std::set<bgp::Prefix>& announced, size_t minAnnouncers,
                         const GuardSelf& self, GuardMoment moment) {
  GuardCheck out;
  GuardInputs in;
  in.minAnnouncers = minAnnouncers;
  in.announced = announced;
  std::vector<std::string> unchecked;
  for (const auto& vip : announced) {
    auto it = views.find(vip);
    if (it != views.end() && it->second.available) {
      in.othersStaying[vip] = othersStayingAt(it->second, self, moment);
    } else {
      unchecked.push_back(vip.toString());
    }
  }
  if (!unchecked.empty() && minAnnouncers > 0) {
    out.note = fmt::format("not checked for {}: fabric view unavailable (the peers send no paths "
                           "back), so the guard cannot see who else announces",
                           fmt::join(unchecked, ", "));
  }
  auto refusal = withdrawGuard(in);
  if (!refusal) {
    return out;
  }
  std::vector<std::string> parts;
  for (const auto& [vip, remaining] : refusal->remaining) {
    parts.push_back(fmt::format("{}: {} other node(s) would remain ({})", vip.toString(),
                                remaining, describeAnnouncers(views.at(vip), false)));
  }
  out.shortOf = refusal->remaining;
  out.shortfall = fmt::format("{}", fmt::join(parts, "; "));
  out.refusal = fmt::format(
      "refused: fewer than guard.minAnnouncers ({}) other nodes would remain announcing{}: {}; "
      "the node is still announcing. `vipctl withdraw --force` withdraws it anyway",
      minAnnouncers,
      moment == GuardMoment::Effect
          ? " once the nodes withdrawn at the same time have left (lowest router ID stays)"
          : "",
      out.shortfall);
  return out;
}

}  // namespace vipd::policy
