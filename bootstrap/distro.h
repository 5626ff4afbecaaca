// The Kubernetes distributions `vipd render --distro` knows: where each one's kubelet reads
// static pods, where its apiserver's serving CA certificate is, and the apiserver's port. These
// are the only facts vipd's day-0 path needs from the distribution; everything else is the same.
// docs/metadata.md has the table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vipd::bootstrap {

struct Distro {
  std::string_view name;          // --distro's value
  std::string_view staticPodDir;  // kubelet's staticPodPath / --pod-manifest-path
  std::string_view caFile;        // the CA that signs the apiserver's serving certificate
  uint16_t apiserverPort = 6443;  // on 127.0.0.1, where the health check asks /readyz

  // https://127.0.0.1:PORT/readyz: the health check's URL on this distribution.
  std::string readyzUrl() const;
};

// kubeadm first: the default.
std::span<const Distro> distros();
const Distro& defaultDistro();
// nullptr when `name` is not a known distribution.
const Distro* findDistro(std::string_view name);

}  // namespace vipd::bootstrap
