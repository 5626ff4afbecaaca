#include "bootstrap/distro.h"

#include <fmt/format.h>

#include <array>

namespace vipd::bootstrap {
namespace {

// kubeadm: kubelet's staticPodPath and the cluster CA under /etc/kubernetes/pki.
// k3s and RKE2: the agent's pod-manifests directory (RKE2 runs its own control plane from it) and
// the server CA, which signs the apiserver's serving certificate; that certificate names
// `kubernetes`, the server name the check verifies. k3s serves the apiserver on 6443 through its
// supervisor; RKE2's apiserver listens on 6443 itself (its supervisor is on 9345).
constexpr std::array<Distro, 3> kDistros = {{
    {"kubeadm", "/etc/kubernetes/manifests", "/etc/kubernetes/pki/ca.crt", 6443},
    {"k3s", "/var/lib/rancher/k3s/agent/pod-manifests",
     "/var/lib/rancher/k3s/server/tls/server-ca.crt", 6443},
    {"rke2", "/var/lib/rancher/rke2/agent/pod-manifests",
     "/var/lib/rancher/rke2/server/tls/server-ca.crt", 6443},
}};

}  // namespace

std::string Distro::readyzUrl() const {
  return fmt::format("https://127.0.0.1:{}/readyz", apiserverPort);
}

std::span<const Distro> distros() { return kDistros; }

const Distro& defaultDistro() { return kDistros[0]; }

const Distro* findDistro(std::string_view name) {
  for (const Distro& d : kDistros) {
    if (d.name == name) {
      return &d;
    }
  }
  return nullptr;
}

}  // namespace vipd::bootstrap
