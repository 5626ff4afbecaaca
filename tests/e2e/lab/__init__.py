"""End-to-end test lab for vipd: network namespaces, daemons and real BGP peers.

Stdlib only. Every test builds its own namespaces (named vt<pid>-<name>, so runs can overlap),
starts daemons inside them with logs in a per-test temp dir, and tears everything down by PID on
any exit path (try/finally via the Lab context manager, atexit, and SIGTERM/SIGINT/SIGHUP).

Exit codes (meson): 0 pass, 1 fail, 77 skip. Skip only when not root or a peer binary is missing,
and never when CI=true (then a missing prerequisite is a failure).

Tests use it as one module (`import lab`, `lab.X`); this file only re-exports. The modules, each
importing only those listed before it:
  base       paths, the addressing plan (VIP4, FABRIC_*, ...), the skip rule, log, run
  checks     check, wait_until and friends, sanitizer reports
  process    Proc (a daemon the lab started), /proc status and capabilities
  netns      Namespace, Lab (owner of namespaces, daemons and cleanup), Node, Topology
  fabric     FabricPoller, time_nexthop (the fabric's kernel route over time)
  wire       BGP UPDATE decoding
  peers      Neighbor, Origin, BfdTimers (what peers are configured with)
  bird, frr, gobgp, exabgp   one wrapper per peer daemon
  capture    TcpCapture, BfdCapture and the checks on what they saw
  vipd       Vipd, vipd_config, vipctl, metrics
  apiserver  FakeApiserver and its certificates (vipd's health gate)
  scenarios  the shared scenarios (build_ecmp, build_single_vipd, peer_scenario, ...)
  harness    main()

A module attribute has one home: assigning lab.X = ... rebinds the name here only, not in the
module that reads it (mutating a shared object such as SANITIZER_REPORTS is seen everywhere).
"""

from .apiserver import (KUBEADM_APISERVER_DNS, KUBEADM_SERVICE_IP, FakeApiserver, make_ca,
                        make_server_cert)
from .base import (BUILD_DIR, COMMUNITIES, E2E_DIR, FABRIC_ASN, FABRIC_V4, FABRIC_V6, FRR_DIR,
                   LARGE_COMMUNITIES, SKIP, VIP4, VIP6, Skip, in_ci, log, require, run, vipd_binary,
                   yaml_module)
from .bird import Bird, bird_since_delta
from .capture import BfdCapture, TcpCapture, check_bfd_single_hop, first_withdrawal
from .checks import SANITIZER_REPORTS, check, sanitizer_report, timed_wait, wait_never, wait_until
from .exabgp import Exabgp, exabgp_env
from .fabric import FabricPoller, time_nexthop
from .frr import Frr
from .gobgp import Gobgp
from .harness import main
from .netns import Lab, Namespace, Node, Topology, _addr_key, parse_nexthops
from .peers import BfdTimers, Neighbor, Origin
from .process import CAPABILITIES, Proc, capability_mask, cpu_seconds, proc_status, rss_kib
from .scenarios import (PEER_CLASSES, EcmpLab, ExabgpSpeaker, GobgpSpeaker, SingleNode,
                        bfd_selfcheck, build_ecmp, build_single_vipd, ecmp_withdraw_on_stop,
                        peer_scenario, speaker_binaries, speaker_dials, start_fabric_peer,
                        start_speaker, wait_established)
from .vipd import (METRICS_LISTEN, UNBIND_DELAY, Vipd, as_user, bind_vips, control_exchange,
                   socket_dir,
                   http_get, parse_prometheus, to_yaml, vipd_config)
from .wire import (BGP_UPDATE, GRACEFUL_SHUTDOWN, update_attributes, update_communities,
                   update_prefixes)

__all__ = [
    # base
    "E2E_DIR", "BUILD_DIR", "FRR_DIR", "VIP4", "VIP6", "COMMUNITIES", "LARGE_COMMUNITIES",
    "FABRIC_ASN", "FABRIC_V4", "FABRIC_V6", "SKIP", "Skip", "log", "in_ci", "require",
    "vipd_binary", "run", "yaml_module",
    # checks
    "check", "wait_until", "wait_never", "timed_wait", "SANITIZER_REPORTS", "sanitizer_report",
    # process
    "Proc", "CAPABILITIES", "capability_mask", "cpu_seconds", "proc_status", "rss_kib",
    # netns
    "Namespace", "parse_nexthops", "Lab", "Node", "Topology",
    "_addr_key",  # tests sort addresses the way the lab does
    # fabric
    "FabricPoller", "time_nexthop",
    # wire
    "BGP_UPDATE", "GRACEFUL_SHUTDOWN", "update_attributes", "update_prefixes",
    "update_communities",
    # peers
    "Neighbor", "Origin", "BfdTimers", "Bird", "bird_since_delta", "Frr", "Gobgp", "Exabgp", "exabgp_env",
    # capture
    "TcpCapture", "BfdCapture", "check_bfd_single_hop", "first_withdrawal",
    # vipd
    "METRICS_LISTEN", "UNBIND_DELAY", "to_yaml", "vipd_config", "as_user", "control_exchange",
    "socket_dir",
    "http_get", "parse_prometheus", "bind_vips", "Vipd",
    # apiserver
    "make_ca", "KUBEADM_APISERVER_DNS", "KUBEADM_SERVICE_IP", "make_server_cert", "FakeApiserver",
    # scenarios
    "ExabgpSpeaker", "GobgpSpeaker", "start_speaker", "speaker_binaries", "speaker_dials",
    "start_fabric_peer", "PEER_CLASSES", "wait_established", "EcmpLab", "build_ecmp",
    "ecmp_withdraw_on_stop", "bfd_selfcheck", "SingleNode", "build_single_vipd", "peer_scenario",
    # harness
    "main",
]
