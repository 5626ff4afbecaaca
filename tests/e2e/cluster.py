"""A real Kubernetes control plane in the lab (issue 39): three (or more) lab nodes, each laid
out as kubeadm stacks a control-plane node, from the pinned tools (`scripts/dev.sh tools`,
tools/go.mod), nothing downloaded at run time.

- Cluster: the PKI and kubeconfigs from the pinned `kubeadm init phase certs|kubeconfig` (the VIP
  in the apiserver's SANs, controlPlaneEndpoint VIP:6443), then per node:
  * an etcd member (one cluster over the node network, TLS as kubeadm sets it up);
  * kube-apiserver on its own member (127.0.0.1:2379), kube-controller-manager and
    kube-scheduler (leader-elected through the API), with kubeadm's flags;
  * containerd (Debian's, with its runc shim) and the kubelet, both in the node's network
    namespace and in one private mount namespace of the node's (ClusterNode.host, a
    pods.NodeHost), where /etc/kubernetes, /etc/vipd, /run/vipd, /var/lib/vipd, /var/lib/kubelet,
    /var/log/pods and /run/containerd are this node's own folders: a hostPath means this node.
    The kubelet runs in a cgroup root of its own (cgroupfs driver, cgroup v1 on these machines).
  The control-plane programs run as processes, not static pods: there is no registry for their
  images, and what the tests judge is vipd's pods, which the kubelet runs from images imported
  into containerd (the release archive; the pause image `scripts/dev.sh tools` builds).
- Cleanup by PID: every process in a node's mount namespace (kubelet, containerd, shims, the
  pods' processes), then the cgroups the kubelet made, then the mount namespace itself (its
  mounts go with it) and the lab's network namespaces.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from typing import Optional

import lab
import pods

SOURCE_DIR = pods.SOURCE_DIR
KUBERNETES_VERSION = "v1.34.4"  # tools/go.mod's k8s.io/kubernetes
VIP = lab.VIP4.split("/")[0]
APISERVER_PORT = 6443
PAUSE_IMAGE = "localhost/vipd-lab/pause:3.10"
# How long the tools may take to build here: cold, about 17 minutes of CPU, which at nice 19
# beside the other suites can stretch to most of an hour (docs/testing.md, "The pinned tools");
# warm, a stat.
TOOLS_TIMEOUT_S = 3600
TOOLS_LOCK = os.path.join(SOURCE_DIR, "build-podman", "tools.lock")
CGROUP_ROOT = "/sys/fs/cgroup"
# What a kubelet sets on its machine at start (pkg/kubelet/cm: setupKernelTunables). Three lab
# kubelets share this one machine, which is not a node: the cluster puts them back as it found
# them when it goes.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
                   "kernel/panic_on_oops", "kernel/keys/root_maxkeys",
                   "kernel/keys/root_maxbytes")


def tools() -> str:
    """The folder of the pinned tools (`scripts/dev.sh tools`, its last line). Holds
    TOOLS_LOCK meanwhile, as `scripts/dev.sh test` does while it builds them in the background.
    VIPD_TOOLS_DIR names a folder to use as it is instead (a developer's own build)."""
    if os.environ.get("VIPD_TOOLS_DIR"):
        return os.environ["VIPD_TOOLS_DIR"]
    os.makedirs(os.path.dirname(TOOLS_LOCK), exist_ok=True)
    with open(TOOLS_LOCK, "a") as lock:
        lab.wait_until(lambda: pods._try_lock(lock), TOOLS_TIMEOUT_S, 1.0,
                       f"{TOOLS_LOCK}: the tools build scripts/dev.sh test started "
                       "(meson-logs/tools-prebuild.log) to finish")
        p = subprocess.run([pods.DEV_SH, "tools"], capture_output=True, text=True,
                           timeout=TOOLS_TIMEOUT_S)
    if p.returncode != 0:
        raise AssertionError(f"scripts/dev.sh tools failed ({p.returncode}):\n{p.stderr[-4000:]}")
    return p.stdout.strip().splitlines()[-1]


class Pki:
    """kubeadm's PKI and kubeconfigs, made by the pinned kubeadm: one set of CAs (cluster, etcd,
    front-proxy, service-account key) and per node the serving and client certificates and the
    kubeconfigs (admin.conf's server is the VIP; the kubelet's, the controller-manager's and the
    scheduler's as kubeadm writes them)."""

    def __init__(self, L: lab.Lab, kubeadm: str):
        self.L, self.kubeadm = L, kubeadm
        self.shared = L.path("pki-shared")
        os.makedirs(self.shared)

    def config(self, node: lab.Node, name: str, pki: str) -> str:
        """The kubeadm InitConfiguration + ClusterConfiguration of one node."""
        path = self.L.path(f"kubeadm-{name}.yaml")
        with open(path, "w") as f:
            f.write(f"""apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: {node.v4}
  bindPort: {APISERVER_PORT}
nodeRegistration:
  name: {name}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: {KUBERNETES_VERSION}
clusterName: vipd-lab
certificatesDir: {pki}
controlPlaneEndpoint: "{VIP}:{APISERVER_PORT}"
apiServer:
  certSANs: ["{VIP}"]
networking:
  serviceSubnet: 10.96.0.0/12
  dnsDomain: cluster.local
""")
        return path

    def make(self, node: lab.Node, name: str, etc_kubernetes: str) -> None:
        """etc_kubernetes/pki and etc_kubernetes/*.conf for node, with the shared CAs."""
        pki = os.path.join(etc_kubernetes, "pki")
        os.makedirs(os.path.join(pki, "etcd"), exist_ok=True)
        shared = ["ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "sa.key",
                  "sa.pub", "etcd/ca.crt", "etcd/ca.key"]
        have_shared = os.path.exists(os.path.join(self.shared, "ca.crt"))
        if have_shared:
            for f in shared:
                _copy(os.path.join(self.shared, f), os.path.join(pki, f))
        conf = self.config(node, name, pki)
        lab.run([self.kubeadm, "init", "phase", "certs", "all", "--config", conf], timeout=60)
        lab.run([self.kubeadm, "init", "phase", "kubeconfig", "all", "--config", conf,
                 "--kubeconfig-dir", etc_kubernetes], timeout=60)
        if not have_shared:
            os.makedirs(os.path.join(self.shared, "etcd"), exist_ok=True)
            for f in shared:
                _copy(os.path.join(pki, f), os.path.join(self.shared, f))


def kill_node(holder: int, cgroup: str) -> None:
    """SIGKILL to every process of a lab node but its holder: those in its mount namespace
    (the kubelet, containerd, the shims, its control plane) and those in the kubelet's cgroups
    (the pods' processes, each in a mount namespace of its own), by PID, until none is left."""
    mnt = os.readlink(f"/proc/{holder}/ns/mnt")
    for _ in range(10):
        pids = set(_cgroup_pids(cgroup))
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) in (holder, os.getpid()):
                continue
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/ns/mnt") == mnt:
                    pids.add(int(pid))
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def _cgroup_pids(cgroup: str) -> list[int]:
    pids = []
    for dirpath, _, files in os.walk(os.path.join(CGROUP_ROOT, "pids", cgroup)):
        if "cgroup.procs" in files:
            with contextlib.suppress(OSError), open(os.path.join(dirpath, "cgroup.procs")) as f:
                pids += [int(p) for p in f.read().split()]
    return pids


def _copy(src: str, dst: str) -> None:
    with open(src, "rb") as s, open(dst, "wb") as d:
        d.write(s.read())
    os.chmod(dst, 0o600)


class ClusterNode:
    """One control-plane node: its host (mount namespace), etcd, the control plane, containerd
    and the kubelet. Paths are as the node sees them (/etc/kubernetes/...); host.path() gives
    where the test reads them."""

    PATHS = ("/run/vipd", "/var/lib/vipd", "/etc/vipd", "/etc/kubernetes", "/var/lib/kubelet",
             "/var/log/pods", "/run/containerd", "/var/lib/etcd")

    def __init__(self, C: "Cluster", node: lab.Node):
        self.C, self.L, self.node = C, C.L, node
        self.name = f"node{node.index}"
        self.host = pods.NodeHost(self.L, node, paths=self.PATHS, hostname=self.name)
        self.etc = self.host.path("/etc/kubernetes")
        self.procs: dict[str, lab.Proc] = {}
        self.cgroup = f"vipd-lab-{os.getpid()}-{self.name}"
        self.containerd_sock = "/run/containerd/containerd.sock"

    # --- etcd and the control plane ---------------------------------------------------------

    def etcd_argv(self, initial: dict[str, str], state: str) -> list[str]:
        ip, pki = self.node.v4, "/etc/kubernetes/pki"
        return [os.path.join(self.C.tools, "etcd"), f"--name={self.name}",
                "--data-dir=/var/lib/etcd",
                f"--advertise-client-urls=https://{ip}:2379",
                f"--listen-client-urls=https://127.0.0.1:2379,https://{ip}:2379",
                f"--listen-peer-urls=https://{ip}:2380",
                f"--initial-advertise-peer-urls=https://{ip}:2380",
                "--initial-cluster=" + ",".join(f"{n}=https://{a}:2380" for n, a in initial.items()),
                f"--initial-cluster-state={state}", "--initial-cluster-token=vipd-lab",
                "--listen-metrics-urls=http://127.0.0.1:2381",
                f"--cert-file={pki}/etcd/server.crt", f"--key-file={pki}/etcd/server.key",
                "--client-cert-auth=true", f"--trusted-ca-file={pki}/etcd/ca.crt",
                f"--peer-cert-file={pki}/etcd/peer.crt", f"--peer-key-file={pki}/etcd/peer.key",
                "--peer-client-cert-auth=true", f"--peer-trusted-ca-file={pki}/etcd/ca.crt",
                "--snapshot-count=10000"]

    def start_etcd(self, initial: dict[str, str], state: str = "new") -> None:
        self.start("etcd", self.etcd_argv(initial, state))

    def start(self, what: str, argv: list[str]) -> lab.Proc:
        proc = self.L.start(None, f"{self.name}-{what}", self.host.argv(argv))
        self.procs[what] = proc
        return proc

    def apiserver_argv(self) -> list[str]:
        pki = "/etc/kubernetes/pki"
        return [os.path.join(self.C.tools, "kube-apiserver"),
                f"--advertise-address={self.node.v4}", "--allow-privileged=true",
                "--authorization-mode=Node,RBAC", f"--client-ca-file={pki}/ca.crt",
                "--enable-admission-plugins=NodeRestriction", "--enable-bootstrap-token-auth=true",
                f"--etcd-cafile={pki}/etcd/ca.crt",
                f"--etcd-certfile={pki}/apiserver-etcd-client.crt",
                f"--etcd-keyfile={pki}/apiserver-etcd-client.key",
                "--etcd-servers=https://127.0.0.1:2379",
                f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
                f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
                "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
                f"--proxy-client-cert-file={pki}/front-proxy-client.crt",
                f"--proxy-client-key-file={pki}/front-proxy-client.key",
                "--requestheader-allowed-names=front-proxy-client",
                f"--requestheader-client-ca-file={pki}/front-proxy-ca.crt",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-username-headers=X-Remote-User",
                f"--secure-port={APISERVER_PORT}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki}/sa.pub",
                f"--service-account-signing-key-file={pki}/sa.key",
                "--service-cluster-ip-range=10.96.0.0/12",
                f"--tls-cert-file={pki}/apiserver.crt",
                f"--tls-private-key-file={pki}/apiserver.key"]

    def start_control_plane(self) -> None:
        for what, argv in self.control_plane_argvs():
            self.start(what, argv)

    def control_plane_argvs(self) -> list[tuple[str, list[str]]]:
        """kube-apiserver, kube-controller-manager and kube-scheduler with kubeadm's flags."""
        k, pki = "/etc/kubernetes", "/etc/kubernetes/pki"
        return [("kube-apiserver", self.apiserver_argv()), ("kube-controller-manager", [
            os.path.join(self.C.tools, "kube-controller-manager"),
            f"--kubeconfig={k}/controller-manager.conf",
            f"--authentication-kubeconfig={k}/controller-manager.conf",
            f"--authorization-kubeconfig={k}/controller-manager.conf",
            "--bind-address=127.0.0.1", f"--client-ca-file={pki}/ca.crt",
            f"--cluster-signing-cert-file={pki}/ca.crt",
            f"--cluster-signing-key-file={pki}/ca.key",
            "--controllers=*,bootstrapsigner,tokencleaner", "--leader-elect=true",
            f"--requestheader-client-ca-file={pki}/front-proxy-ca.crt",
            f"--root-ca-file={pki}/ca.crt", f"--service-account-private-key-file={pki}/sa.key",
            "--use-service-account-credentials=true"]), ("kube-scheduler", [
            os.path.join(self.C.tools, "kube-scheduler"), f"--kubeconfig={k}/scheduler.conf",
            f"--authentication-kubeconfig={k}/scheduler.conf",
            f"--authorization-kubeconfig={k}/scheduler.conf", "--bind-address=127.0.0.1",
            "--leader-elect=true"])]

    # --- containerd and the kubelet -----------------------------------------------------------

    def _write(self, node_path: str, text: str) -> str:
        path = self.host.path(node_path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return node_path

    def start_containerd(self) -> None:
        conf = self._write("/etc/kubernetes/lab/containerd.toml", f"""version = 2
root = "/var/lib/kubelet/lab-containerd/root"
state = "/run/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.containerd_sock}"
[ttrpc]
  address = "{self.containerd_sock}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/kubelet/lab-containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  # These machines' root lacks CAP_SYS_RESOURCE, so runc cannot lower a container's
  # oom_score_adj (the kubelet asks -998 for every sandbox, -997 for critical pods) and every
  # pod fails to start; this keeps it at containerd's own (0), as rootless containerd does.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/kubernetes/lab/cni"
""")
        # hostNetwork pods need no CNI plugin, but the runtime reports its network ready (and
        # the kubelet the node Ready) only once a network configuration is there.
        self._write("/etc/kubernetes/lab/cni/10-lab.conflist", json.dumps({
            "cniVersion": "1.0.0", "name": "vipd-lab",
            "plugins": [{"type": "loopback"}]}))
        self.start("containerd", [os.path.join(self.C.tools, "containerd"), "--config",
                                  conf])
        lab.wait_until(lambda: os.path.exists(self.host.path(self.containerd_sock)), 30, 0.1,
                       f"{self.name}: containerd's socket")

    def ctr(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return self.host.run(["ctr", "--address", self.containerd_sock, "--namespace", "k8s.io",
                              *args], timeout=timeout)

    def import_image(self, archive: str) -> None:
        self.ctr("images", "import", archive, timeout=300)

    def tag_vipd_image(self, version: str) -> None:
        images = self.ctr("images", "ls", "-q").stdout.split()
        have = [i for i in images if i.startswith("localhost/vipd:")]
        want = f"localhost/vipd:{version}"
        if want not in have:
            self.ctr("images", "tag", have[0], want)

    def _make_cgroup(self) -> None:
        """The kubelet's cgroupRoot, in every v1 hierarchy (cpuset's needs its cpus and mems)."""
        for ctl in sorted(os.listdir(CGROUP_ROOT)):
            base = os.path.join(CGROUP_ROOT, ctl)
            if os.path.islink(base) or not os.path.isdir(base):
                continue
            path = os.path.join(base, self.cgroup)
            os.makedirs(path, exist_ok=True)
            if ctl == "cpuset":
                for f in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(base, f)) as src, open(os.path.join(path, f), "w") as d:
                        d.write(src.read())

    def _remove_cgroup(self) -> None:
        """The kubelet's cgroup root, deepest first, in every hierarchy; a cgroup whose last
        process is still exiting is busy for a moment, so this retries for a few seconds."""
        deadline = time.monotonic() + 10
        while True:
            left = []
            for ctl in os.listdir(CGROUP_ROOT):
                top = os.path.join(CGROUP_ROOT, ctl, self.cgroup)
                if os.path.islink(os.path.join(CGROUP_ROOT, ctl)) or not os.path.isdir(top):
                    continue
                for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                    with contextlib.suppress(OSError):
                        os.rmdir(dirpath)
                if os.path.isdir(top):
                    left.append(top)
            if not left or time.monotonic() > deadline:
                if left:
                    lab.log(f"{self.name}: cgroups left behind: {left}")
                return
            time.sleep(0.2)

    def start_kubelet(self) -> None:
        self._make_cgroup()
        conf = self._write("/var/lib/kubelet/config.yaml", f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /{self.cgroup}
containerRuntimeEndpoint: unix://{self.containerd_sock}
staticPodPath: /etc/kubernetes/manifests
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: /etc/kubernetes/pki/ca.crt}}
authorization: {{mode: Webhook}}
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
failSwapOn: false
readOnlyPort: 0
rotateCertificates: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {{memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}}
fileCheckFrequency: 5s
""")
        os.makedirs(self.host.path("/etc/kubernetes/manifests"), exist_ok=True)
        self.start("kubelet", [os.path.join(self.C.tools, "kubelet"), f"--config={conf}",
                               "--kubeconfig=/etc/kubernetes/kubelet.conf",
                               f"--hostname-override={self.name}", f"--node-ip={self.node.v4}",
                               "--root-dir=/var/lib/kubelet", "--v=1"])

    # --- vipd on the node -----------------------------------------------------------------------

    def render(self, bootstrap: bool = True) -> subprocess.CompletedProcess:
        """`vipd render` as the node's first boot runs it, from its instance metadata: the
        config and node file in /etc/vipd, the static pod in the kubelet's manifest folder."""
        yaml = lab.yaml_module()
        metadata = {"apiVersion": "vipd.io/v1alpha1", "kind": "InstanceMetadata",
                    "node": {"addresses": [self.node.v4]}, "localAsn": self.node.asn,
                    "vips": [lab.VIP4], "peers": [{"address": lab.FABRIC_V4,
                                                   "asn": lab.FABRIC_ASN}],
                    "bootstrap": {"enabled": bootstrap}, "health": {"type": "apiserver"}}
        with open(self.host.path("/etc/vipd/metadata.yaml"), "w") as f:
            yaml.safe_dump(metadata, f, sort_keys=False)
        p = self.host.run([lab.vipd_binary(), "render", "--metadata", "/etc/vipd/metadata.yaml",
                           "--config-out", "/etc/vipd/vipd.yaml", "--manifest-dir",
                           "/etc/kubernetes/manifests"], check=False)
        lab.log(f"{self.name}: vipd render -> {p.returncode}: {p.stdout.strip()} "
                f"{p.stderr.strip()}")
        return p

    def vipctl_status(self) -> dict:
        """`vipctl status --json` on the node's host (the tree's vipctl, without --socket: it
        finds whichever vipd holds the node); {} when none answers."""
        p = self.host.run([lab.vipd_binary("vipctl"), "status", "--json"], check=False)
        return json.loads(p.stdout) if p.returncode == 0 else {}

    def exec_in_pod(self, pod: str, argv: list[str], container: str = "vipd",
                    namespace: str = "kube-system") -> subprocess.CompletedProcess:
        """`kubectl exec` into this node's pod (a static pod's mirror is POD-NODENAME), as an
        operator runs it: through the apiserver to this node's kubelet."""
        name = pod if pod.endswith(self.name) else f"{pod}-{self.name}"
        return self.C.kubectl("exec", "-n", namespace, name, "-c", container, "--", *argv,
                              check=False, timeout=60)

    def pod(self, prefix: str, exclude: str = "vipd-bootstrap") -> dict:
        """This node's pod named prefix* but not exclude* as the API has it (a static pod's
        mirror is vipd-bootstrap-NODE: pod("vipd-bootstrap", exclude="") finds it)."""
        got = self.C.get("pods", "-n", "kube-system", "--field-selector",
                         f"spec.nodeName={self.name}")
        mine = [p for p in got["items"] if p["metadata"]["name"].startswith(prefix) and
                not (exclude and p["metadata"]["name"].startswith(exclude))]
        lab.check(len(mine) == 1, f"{self.name}: one pod {prefix}*: "
                  f"{[p['metadata']['name'] for p in got['items']]} {got.get('error', '')}")
        return mine[0]

    def container_pid(self, pod: dict, container: str = "vipd") -> int:
        """The PID of the container's main process, found as the kubelet placed it: in the cgroup
        named after the container's ID, under the pod's (a static pod's kubelet UID is its
        config hash, not the mirror's UID)."""
        meta = pod["metadata"]
        uid = meta.get("annotations", {}).get("kubernetes.io/config.hash", meta["uid"])
        cid = [c for c in pod["status"]["containerStatuses"]
               if c["name"] == container][0]["containerID"].split("://", 1)[1]
        for dirpath, _, files in os.walk(os.path.join(CGROUP_ROOT, "pids", self.cgroup)):
            if os.path.basename(dirpath) == cid and uid.replace("-", "_") in dirpath.replace(
                    "-", "_") and "cgroup.procs" in files:
                with open(os.path.join(dirpath, "cgroup.procs")) as f:
                    pids = [int(p) for p in f.read().split()]
                return min(pids)
        raise AssertionError(f"{self.name}: no cgroup for container {cid} of pod {uid}")

    def check_container(self, pod: dict, container: str = "vipd") -> int:
        """Asserts that the kubelet ran the container as its pod spec says: exactly the
        capabilities it adds (every set of its process), no new privileges, a seccomp filter, a
        read-only root, and each volumeMount of a hostPath this node's folder, read-only where
        written so. Returns its PID."""
        spec = [c for c in pod["spec"]["containers"] if c["name"] == container][0]
        sc = spec.get("securityContext", {})
        pid = self.container_pid(pod, container)
        status = lab.proc_status(pid)
        added = sc["capabilities"].get("add", [])
        want = lab.capability_mask(added)
        name = f"{self.name} {pod['metadata']['name']}/{container}"
        for field in ("CapEff", "CapPrm", "CapBnd"):
            lab.check(int(status[field], 16) == want, f"{name}: {field} {status[field]} is the "
                      f"spec's capabilities {added} ({want:#x})")
        lab.check(status["NoNewPrivs"] == "1", f"{name}: no_new_privs")
        lab.check(status["Seccomp"] == "2", f"{name}: a seccomp filter (RuntimeDefault)")
        with open(f"/proc/{pid}/mountinfo") as f:
            mounts = {line.split()[4]: line.split()[5].split(",") for line in f}
        lab.check(sc.get("readOnlyRootFilesystem") and "ro" in mounts.get("/", []),
                  f"{name}: / is read-only, as written: {mounts.get('/')}")
        volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
        for vm in spec.get("volumeMounts", []):
            where = vm["mountPath"]
            lab.check(where in mounts, f"{name}: {where} is mounted")
            lab.check(("ro" in mounts[where]) is vm.get("readOnly", False),
                      f"{name}: {where} read-only={vm.get('readOnly', False)}: {mounts[where]}")
            host = volumes[vm["name"]].get("hostPath")
            if host:
                inside, outside = os.stat(f"/proc/{pid}/root{where}"), \
                    os.stat(self.host.path(host["path"]))
                lab.check((inside.st_dev, inside.st_ino) == (outside.st_dev, outside.st_ino),
                          f"{name}: {where} is this node's {host['path']}")
        return pid

    # --- cleanup --------------------------------------------------------------------------------

    def kill_all(self) -> None:
        """Every process of this node gone (kill_node), then its cgroups."""
        kill_node(self.host.holder.pid, self.cgroup)
        self._remove_cgroup()

    def poweroff_command(self, stamp: str) -> str:
        """A shell command that stops this machine as a power-off would (kill_node, from
        another process: the replacement script's --stop), first writing the wall-clock time
        into stamp."""
        return shlex.join([sys.executable, os.path.abspath(__file__), "poweroff",
                           str(self.host.holder.pid), self.cgroup, stamp])

    def join_script(self) -> str:
        """What `kubeadm join --control-plane` starts on this node, as a script the replacement
        script's --join runs: the etcd member (VIPD_ETCD_INITIAL_CLUSTER from its environment, state
        existing), the apiserver, controller-manager and scheduler, each in the node's
        namespaces, detached, its output in the lab's folder. kill_node stops them by their
        mount namespace."""
        lines = ["#!/bin/sh", "set -eu"]
        for what, argv in [("etcd", self.etcd_argv({}, "existing")),
                           *self.control_plane_argvs()]:
            words = [shlex.quote(a) if not a.startswith("--initial-cluster=") else
                     '"--initial-cluster=$VIPD_ETCD_INITIAL_CLUSTER"' for a in self.host.argv(argv)]
            log = shlex.quote(self.L.path(f"{self.name}-{what}.joined.log"))
            lines.append(f"setsid {' '.join(words)} >{log} 2>&1 </dev/null &")
        path = self.L.path(f"join-{self.name}.sh")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(path, 0o755)
        return path


class Cluster:
    """The lab's cluster: a BIRD fabric, n control-plane nodes (ClusterNode), a client namespace
    behind the fabric with the admin kubeconfig (server: the VIP)."""

    def __init__(self, L: lab.Lab, n: int = 3, spares: int = 0):
        """n member nodes and spares: machines on the fabric with their PKI, not yet part of
        the cluster (provision() and a join make them members)."""
        self.L = L
        self.tools = tools()
        # Where kubectl runs unless told (None: node 1; a test that withdraws node 1 sets the
        # client network, which reaches the VIP through the fabric).
        self.kubectl_ns: Optional[lab.Namespace] = None
        self.topo = L.fabric_with_nodes(n + spares)
        self.fabric = self.topo.fabric
        self.pki = Pki(L, os.path.join(self.tools, "kubeadm"))
        everyone: list[ClusterNode] = []
        for node in self.topo.nodes:
            cn = ClusterNode(self, node)
            self.pki.make(node, cn.name, cn.etc)
            everyone.append(cn)
        self.nodes, self.spares = everyone[:n], everyone[n:]
        self._sysctls = {}
        for key in KUBELET_SYSCTLS:
            with contextlib.suppress(OSError), open(f"/proc/sys/{key}") as f:
                self._sysctls[key] = f.read()
        L.on_cleanup(self._kill_nodes)
        self.admin_conf = os.path.join(self.nodes[0].etc, "admin.conf")

    def _kill_nodes(self) -> None:
        for cn in self.nodes + self.spares:
            with contextlib.suppress(Exception):
                cn.kill_all()
        for key, value in self._sysctls.items():
            with contextlib.suppress(OSError), open(f"/proc/sys/{key}", "w") as f:
                f.write(value)

    @property
    def version(self) -> str:
        return lab.run([lab.vipd_binary(), "--version"]).stdout.split()[-1]

    @property
    def pause_archive(self) -> str:
        return os.path.join(self.tools, "pause.oci.tar")

    def fabric_bird(self, add_paths_tx: bool = True) -> lab.Bird:
        """BIRD on the fabric (AS 65000), each node an eBGP neighbour with its own AS, graceful
        restart on, ECMP into the fabric's kernel with an L4 hash."""
        self.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        self.bird = lab.Bird(self.L, self.fabric, self.topo.fabric_v4, lab.FABRIC_ASN,
                             [lab.Neighbor(cn.node.v4, cn.node.asn, name=cn.name,
                                           bird_options=["graceful restart on;"],
                                           add_paths_tx=add_paths_tx)
                              for cn in self.nodes + self.spares],
                             interfaces=[self.topo.fabric_if])
        return self.bird

    def start_control_plane(self) -> None:
        """etcd (one three-member cluster), then each node's apiserver, controller-manager and
        scheduler."""
        initial = {cn.name: cn.node.v4 for cn in self.nodes}
        for cn in self.nodes:
            cn.start_etcd(initial)
        for cn in self.nodes:
            cn.start_control_plane()

    def wait_apiservers(self, timeout: float) -> float:
        """Until every node's apiserver answers /readyz ok on its own address."""
        t0 = time.monotonic()
        for cn in self.nodes:
            lab.wait_until(lambda cn=cn: self.readyz(cn) == "ok", timeout, 1.0,
                           lambda cn=cn: f"{cn.name}: kube-apiserver /readyz ok: "
                           f"{self.readyz(cn, verbose=True)!r}")
        took = time.monotonic() - t0
        lab.log(f"every apiserver ready in {took:.1f} s")
        # What `kubeadm init` does once the API answers: admin.conf's group is bound to
        # cluster-admin, by the super-admin (system:masters) credentials.
        n1 = self.nodes[0]
        lab.run(n1.node.ns.argv([
            os.path.join(self.tools, "kubectl"), f"--kubeconfig={n1.etc}/super-admin.conf",
            f"--server=https://{n1.node.v4}:{APISERVER_PORT}", "create", "clusterrolebinding",
            "kubeadm:cluster-admins", "--clusterrole=cluster-admin",
            "--group=kubeadm:cluster-admins"]), timeout=30, check=False)
        return took

    def readyz(self, cn: ClusterNode, verbose: bool = False) -> str:
        p = self.kubectl("get", "--raw", "/readyz" + ("?verbose" if verbose else ""),
                         ns=cn.node.ns, server=f"https://{cn.node.v4}:{APISERVER_PORT}",
                         check=False, timeout=10)
        return (p.stdout or p.stderr).strip()

    def vipd_archive(self) -> str:
        """The release archive of this build's version (pods.release_archive: e2e_image makes it
        in CI). VIPD_IMAGE_ARCHIVE names another archive holding localhost/vipd under any tag (a
        developer's `podman save` of `scripts/dev.sh image`); it is tagged as this build's
        version once imported."""
        return os.environ.get("VIPD_IMAGE_ARCHIVE") or pods.release_archive(self.version)

    def start_kubelets(self, image_archives: Optional[list[str]] = None) -> None:
        """Every member node provisioned (provision)."""
        for cn in self.nodes:
            self.provision(cn, image_archives)

    def provision(self, cn: ClusterNode, image_archives: Optional[list[str]] = None) -> None:
        """A machine as it is before it joins: containerd, the images imported into it
        (default: vipd's and the pause image), then the kubelet."""
        cn.start_containerd()
        for archive in image_archives or [self.vipd_archive(), self.pause_archive]:
            cn.import_image(archive)
        if os.environ.get("VIPD_IMAGE_ARCHIVE"):
            cn.tag_vipd_image(self.version)
        cn.start_kubelet()

    def on_node_command(self) -> str:
        """The replacement script's --on for the lab: a script that runs a shell command line
        (its second argument) on the node its first argument names, in that node's
        namespaces, as ssh would."""
        path = self.L.path("on-node")
        cases = "\n".join(f"  {cn.name}) exec {shlex.join(cn.host.argv(['sh', '-c']))} \"$2\" ;;"
                          for cn in self.nodes + self.spares)
        with open(path, "w") as f:
            f.write(f"""#!/bin/sh
case $1 in
{cases}
  *) echo "on-node: no lab node $1" >&2; exit 255 ;;
esac
""")
        os.chmod(path, 0o755)
        return path

    def day0(self, monitor, timeout: float = 240) -> float:
        """`vipd render` on every node; waits until the fabric's route (monitor: a
        benchlab.RouteMonitor on the fabric) has every node. Returns the seconds that took."""
        t0 = time.time()
        for cn in self.nodes:
            p = cn.render()
            lab.check(p.returncode == 0 and "wrote /etc/kubernetes/manifests/vipd.yaml" in p.stdout,
                      f"{cn.name}: render wrote the static pod: {p.stdout} {p.stderr}")
        hops = {cn.node.v4 for cn in self.nodes}
        return monitor.wait(lambda h: hops <= h, t0, timeout,
                            "every node's path from its static pod") - t0

    @property
    def ca_file(self) -> str:
        return os.path.join(self.pki.shared, "ca.crt")

    def mark_control_plane(self) -> None:
        """What `kubeadm init phase mark-control-plane` does to each node: the control-plane
        label (the DaemonSet's nodeSelector) and the NoSchedule taint (its toleration)."""
        for cn in self.nodes:
            self.kubectl("label", "--overwrite", "node", cn.name,
                         "node-role.kubernetes.io/control-plane=")
            self.kubectl("taint", "--overwrite", "node", cn.name,
                         "node-role.kubernetes.io/control-plane:NoSchedule")

    def requests(self, load: lab.Proc, out: str, timeout: float = 60) -> list[dict]:
        """The load client's outcome (benchlab.run_load) once it has exited."""
        lab.wait_until(lambda: not load.alive(), timeout, 0.2, "the load client to finish")
        with open(out) as f:
            return json.load(f)["requests"]

    def get(self, *args: str, ns: Optional[lab.Namespace] = None) -> dict:
        p = self.kubectl("get", *args, "-o", "json", ns=ns, check=False, timeout=15)
        return json.loads(p.stdout) if p.returncode == 0 else {"items": [], "error": p.stderr}

    def ready_nodes(self, ns: Optional[lab.Namespace] = None) -> set[str]:
        got = self.get("nodes", ns=ns)
        if "error" in got:
            lab.log(f"kubectl get nodes: {got['error'].strip()[-300:]}")
        return {n["metadata"]["name"] for n in got["items"]
                if any(c["type"] == "Ready" and c["status"] == "True"
                       for c in n["status"].get("conditions", []))}

    def pod_phases(self, namespace: str, ns: Optional[lab.Namespace] = None) -> dict[str, str]:
        return {p["metadata"]["name"]: p["status"].get("phase", "?")
                for p in self.get("pods", "-n", namespace, ns=ns)["items"]}

    def pods_ready(self, namespace: str, prefix: str, count: int,
                   ns: Optional[lab.Namespace] = None) -> Optional[dict[str, str]]:
        """{pod: node} when count pods named prefix* are Ready, else None."""
        ready = {}
        for p in self.get("pods", "-n", namespace, ns=ns)["items"]:
            if p["metadata"]["name"].startswith(prefix) and any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in p["status"].get("conditions", [])):
                ready[p["metadata"]["name"]] = p["spec"].get("nodeName", "")
        return ready if len(ready) >= count else None

    def kubectl(self, *args: str, ns: Optional[lab.Namespace] = None, timeout: float = 30,
                check: bool = True, server: Optional[str] = None) -> subprocess.CompletedProcess:
        """The pinned kubectl with the admin kubeconfig (its server: the VIP), from ns (default:
        kubectl_ns, else node 1; the client namespace reaches the VIP through the fabric). server: another
        apiserver address (an apiserver's own, before anything announces the VIP)."""
        ns = ns or self.kubectl_ns or self.nodes[0].node.ns
        argv = [os.path.join(self.tools, "kubectl"), f"--kubeconfig={self.admin_conf}",
                f"--request-timeout={max(1, int(timeout) - 2)}s"]
        if server:
            argv.append(f"--server={server}")
        return lab.run(ns.argv(argv + list(args)), check=check, timeout=timeout)


def daemonset_overlay(C: "Cluster", tag: str, communities: list[str], hashed: bool,
                      typo: bool = False) -> str:
    """An overlay of manifests/ as a user writes one: the shipped vipd.yaml (with communities),
    the image pinned to tag. hashed=False: the ConfigMap keeps its name when it changes, so a
    change reaches the running pods through the kubelet's volume swap, not a rollout. typo: the
    VIP's prefix length mistyped (/33), which vipd refuses at start."""
    yaml = lab.yaml_module()
    path = C.L.path(f"overlay-{tag}-{len(communities)}{'-typo' if typo else ''}")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(SOURCE_DIR, "manifests", "daemonset", "vipd.yaml")) as f:
        config = yaml.safe_load(f)
    if communities:
        config["communities"] = communities
    if typo:
        config["vips"][0]["address"] = config["vips"][0]["address"].replace("/32", "/33")
    with open(os.path.join(path, "vipd.yaml"), "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    generator = {"name": "vipd-config", "namespace": "kube-system", "behavior": "replace",
                 "files": ["vipd.yaml"]}
    if not hashed:
        generator["options"] = {"disableNameSuffixHash": True}
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(os.path.join(SOURCE_DIR, "manifests"), path)],
        "images": [{"name": "localhost/vipd", "newTag": tag}],
        "configMapGenerator": [generator]}
    with open(os.path.join(path, "kustomization.yaml"), "w") as f:
        yaml.safe_dump(kustomization, f, sort_keys=False)
    return path


def up(L: lab.Lab, n: int = 3, spares: int = 0):
    """What every scenario starts from, before day 0: the cluster of n nodes (and spares, not
    yet provisioned), BIRD on the fabric, the client network behind it, the fabric's route to
    the VIP watched (`ip monitor`), every apiserver ready and the kubelets running. Returns
    (cluster, client namespace, route monitor)."""
    C = Cluster(L, n, spares)
    C.fabric_bird()
    client = pods.benchlab.add_client(L, C.topo, http=False)
    monitor = pods.benchlab.RouteMonitor(L, C.fabric)
    C.start_control_plane()
    C.wait_apiservers(120)
    C.start_kubelets()
    return C, client, monitor


if __name__ == "__main__":
    # The lab's power-off (ClusterNode.poweroff_command): HOLDER CGROUP STAMP.
    if len(sys.argv) != 5 or sys.argv[1] != "poweroff":
        sys.exit("usage: cluster.py poweroff HOLDER_PID CGROUP STAMP_FILE")
    with open(sys.argv[4], "w") as stamp:
        stamp.write(f"{time.time()}\n")
    kill_node(int(sys.argv[2]), sys.argv[3])
