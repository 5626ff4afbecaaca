// Keeps the VIPs' bindings true to the kernel while vipd runs: watches the kernel's address and
// link changes (netlink), re-reads and re-binds, retries every kReconcileInterval, and logs every
// binding event. Owns the VipBinder, the kernel event descriptor and the rebind and reconcile
// timers. Whether binding is allowed now (role, withdrawn, drain) and what to announce after a
// change are the VipKeeperHost's to decide.
#pragma once

#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.h"
#include "daemon/base/logger.h"
#include "daemon/vip/binder.h"
#include "netlink/address_table.h"

namespace vipd::daemon {

namespace asio = boost::asio;

class VipKeeperHost {
 public:
  // Whether VIPs may be bound now: this instance speaks, the node is not withdrawn or draining,
  // and the process is not stopping. A node that unbound its VIPs on purpose is never fought.
  virtual bool mayBind() const = 0;
  virtual bool stopping() const = 0;
  // Called after every change the kernel reported or a re-bind made.
  virtual void pushAnnouncements() = 0;

 protected:
  ~VipKeeperHost() = default;
};

class VipKeeper {
 public:
  // `table` and `monitor` must outlive the keeper.
  VipKeeper(asio::io_context& io, netlink::AddressTable& table, netlink::Monitor& monitor,
            std::vector<config::Vip> vips, const Logger& log, VipKeeperHost& host);

  // Reads the kernel (binding nothing), then watches it and reconciles periodically.
  void start();
  // Stops watching and every timer.
  void stop();
  void cancelRebind();

  // Each logs the events it caused.
  void bind();
  void refresh();
  void unbindOwned();
  // Re-reads the kernel, announces what follows, and re-binds a lost VIP after kRebindDelay.
  void refreshAndAnnounce(std::string_view why);
  // A reload (issue 29): see VipBinder::addOrUpdate and remove; each logs its events.
  void addOrUpdate(const config::Vip& vip) { binder_.addOrUpdate(vip); }
  void remove(const bgp::Prefix& vip, bool unbind) { log(binder_.remove(vip, unbind)); }

  const VipBinder& binder() const { return binder_; }

 private:
  void log(const std::vector<BindEvent>& events) const;
  void watchKernel();
  void onKernelChanges();
  void scheduleRebind();
  void scheduleReconcile();

  netlink::Monitor& monitor_;
  const Logger& log_;
  VipKeeperHost& host_;
  VipBinder binder_;
  asio::posix::stream_descriptor kernelEvents_;
  asio::steady_timer rebindTimer_;
  asio::steady_timer reconcileTimer_;
  bool rebindPending_ = false;
};

}  // namespace vipd::daemon
