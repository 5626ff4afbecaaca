#include "daemon/vip/keeper.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace vipd::daemon {
namespace {

using namespace std::chrono_literals;

// After a VIP is lost, wait this long before binding it again, so the fabric sees the withdraw
// settle instead of a flap, and an operator removing the address by hand is not fought in a loop.
constexpr auto kRebindDelay = 1s;
// A full re-read of the kernel now and then, in case a change notification was missed; it also
// retries bindings that failed.
constexpr auto kReconcileInterval = 10s;

}  // namespace

VipKeeper::VipKeeper(asio::io_context& io, netlink::AddressTable& table,
                     netlink::Monitor& monitor, std::vector<config::Vip> vips, const Logger& log,
                     VipKeeperHost& host)
    : monitor_(monitor),
      log_(log),
      host_(host),
      binder_(table, std::move(vips)),
      kernelEvents_(io),
      rebindTimer_(io),
      reconcileTimer_(io) {}

void VipKeeper::start() {
  log(binder_.refresh());
  // A duplicate, so the descriptor object can close its copy without closing the monitor's.
  kernelEvents_.assign(::dup(monitor_.fd()));
  watchKernel();
  scheduleReconcile();
}

void VipKeeper::stop() {
  rebindTimer_.cancel();
  reconcileTimer_.cancel();
  kernelEvents_.cancel();
}

void VipKeeper::cancelRebind() { rebindTimer_.cancel(); }

void VipKeeper::bind() { log(binder_.bind()); }

void VipKeeper::refresh() { log(binder_.refresh()); }

void VipKeeper::unbindOwned() { log(binder_.unbindOwned()); }

void VipKeeper::watchKernel() {
  kernelEvents_.async_wait(asio::posix::stream_descriptor::wait_read,
                           [this](const boost::system::error_code& ec) {
                             if (ec || host_.stopping()) {
                               return;
                             }
                             onKernelChanges();
                             watchKernel();
                           });
}

void VipKeeper::onKernelChanges() {
  auto started = std::chrono::steady_clock::now();
  auto changes = monitor_.readChanges();
  if (!changes) {
    log_.error("netlink", "reading kernel changes failed: {}; re-reading every address",
               changes.error().toString());
  }
  bool relevant = !changes;
  for (const auto& change : changes ? *changes : std::vector<netlink::Change>{}) {
    relevant = relevant || binder_.concerns(change);
  }
  if (!relevant) {
    return;
  }
  auto before = binder_.announceable();
  refreshAndAnnounce("the kernel reported a change");
  auto after = binder_.announceable();
  if (before != after) {
    auto took = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
    log_.info("speaker",
              "announcements updated {}us after the kernel's notification; {} of {} VIP(s) "
              "announceable",
              took.count(), after.size(), binder_.status().size());
  }
}

void VipKeeper::refreshAndAnnounce(std::string_view why) {
  auto events = binder_.refresh();
  log(events);
  host_.pushAnnouncements();
  bool lost = std::any_of(events.begin(), events.end(),
                          [](const BindEvent& e) { return e.kind == BindEvent::Kind::Lost; });
  if (lost) {
    log_.debug("speaker", "binding lost ({}); binding again in {}ms", why,
               std::chrono::duration_cast<std::chrono::milliseconds>(kRebindDelay).count());
    scheduleRebind();
  }
}

void VipKeeper::scheduleRebind() {
  // A withdrawn or draining node has unbound its VIPs on purpose: never fight that. An instance
  // that is not speaking leaves the addresses to the one that is.
  if (rebindPending_ || !host_.mayBind()) {
    return;
  }
  rebindPending_ = true;
  rebindTimer_.expires_after(kRebindDelay);
  rebindTimer_.async_wait([this](const boost::system::error_code& ec) {
    rebindPending_ = false;
    if (ec || !host_.mayBind()) {
      return;
    }
    log(binder_.bind());
    host_.pushAnnouncements();
  });
}

void VipKeeper::scheduleReconcile() {
  reconcileTimer_.expires_after(kReconcileInterval);
  reconcileTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || host_.stopping()) {
      return;
    }
    log(host_.mayBind() ? binder_.bind() : binder_.refresh());
    host_.pushAnnouncements();
    scheduleReconcile();
  });
}

void VipKeeper::log(const std::vector<BindEvent>& events) const {
  for (const auto& e : events) {
    std::string subject = "vip " + e.vip.toString();
    switch (e.kind) {
      case BindEvent::Kind::Bound:
      case BindEvent::Kind::InterfaceCreated:
      case BindEvent::Kind::Unbound:
      case BindEvent::Kind::Found:
        log_.info(subject, "{}", e.text);
        break;
      case BindEvent::Kind::Lost:
        log_.warn(subject, "{}", e.text);
        break;
      case BindEvent::Kind::Problem:
        log_.error(subject, "{}", e.text);
        break;
    }
  }
}

}  // namespace vipd::daemon
