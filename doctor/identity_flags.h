// Where a control-plane program keeps its node identity, read from the text the fact gathering
// finds: a process's command line (/proc/PID/cmdline), kubeadm's kubelet flags file
// (/var/lib/kubelet/kubeadm-flags.env) and a static-pod manifest (kubeadm's etcd.yaml and
// kube-apiserver.yaml). Pure: each is unit-tested on the programs' own text (issue 42).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "doctor/node_facts.h"

namespace vipd::doctor {

// The programs whose identity flags are read, by the name their process has (/proc/PID/comm).
[[nodiscard]] bool isIdentityProgram(std::string_view name);

// A routing daemon that may announce addresses bound on the interfaces it exports: BIRD, FRR's
// zebra and bgpd, GoBGP, Calico (its BIRD runs as "bird"), Cilium, kube-router. vipd is not one.
[[nodiscard]] bool isRoutingDaemon(std::string_view name);

// /proc/PID/cmdline: the arguments, NUL-separated (a trailing NUL or none).
[[nodiscard]] std::vector<std::string> splitCmdline(std::string_view cmdline);

// The identity flags of `program` in its arguments, as "--flag=value" or "--flag value":
// kubelet --node-ip; kube-apiserver --advertise-address; etcd --advertise-client-urls and
// --initial-advertise-peer-urls (each URL's host). A value that holds no address (a host name)
// is left out; the flag is reported only when it names at least one address.
[[nodiscard]] std::vector<IdentityFlag> identityFlags(std::string_view program,
                                                      const std::vector<std::string>& arguments,
                                                      std::string_view source);

// The same flags in a file's text: a static-pod manifest (YAML or JSON: each "--flag=value"
// token, quoted or not) or kubeadm-flags.env (KUBELET_KUBEADM_ARGS="--node-ip=..."). The program
// is the flag's: --node-ip the kubelet's, --advertise-address the apiserver's, the URL flags
// etcd's.
[[nodiscard]] std::vector<IdentityFlag> identityFlagsInText(std::string_view text,
                                                            std::string_view source);

}  // namespace vipd::doctor
