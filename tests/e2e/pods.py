"""vipd's image and pods under a real container runtime (podman 4.3 with runc) in a lab node.

- dev_sh(), image(): scripts/dev.sh release / image, the commands users run; the image lands in
  the machine's podman store (a second build takes its layers from the cache).
- NodeHost: a lab node as a container host. Its network namespace is the node's; in a private
  mount namespace the host paths the manifests name (/run/vipd, /var/lib/vipd, /etc/vipd,
  /etc/kubernetes) are this node's own directories in the lab's temp dir, so a hostPath volume
  means this node, never the machine the test runs on.
- Podman: podman with a store of its own in the lab's temp dir (the pods of one test never meet
  another's or the machine's), run as the node's host.
- for_podman(): the only changes made to a manifest before `podman kube play`, each one a
  documented gap between podman 4.3 and a kubelet:
    * `ports:` is removed: podman rejects it on hostNetwork pods (for a kubelet it is only
      informational there);
    * `$(VAR)` from the downward API is expanded by the test: podman does not do it;
    * the probes are removed and run by the test the way a kubelet runs them (probe()): an
      httpGet from the node's network namespace, an exec probe with `podman exec` in the
      container; podman turns an httpGet probe into `/bin/sh -c "curl ..."` inside the image,
      and the image has neither, on purpose; it would also need systemd for its timers, which
      these machines lack;
    * a DaemonSet becomes its pod template (podman refuses kind DaemonSet);
    * an emptyDir volume is named after its pod: podman makes it a named volume, shared by every
      pod whose volume has the same name (two pods of one DaemonSet on a node, in a rollout).
  podman also ignores preStop hooks and the grace period (a test stops a pod with
  `podman pod stop -t 30`: SIGTERM, then the wait), and `podman kube down` kills with SIGKILL, so
  it is never used on a running pod.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import fcntl
import json
import os
import re
import subprocess
import sys
import time
from typing import Optional

import lab

SOURCE_DIR = os.path.dirname(os.path.dirname(lab.E2E_DIR))
DEV_SH = os.path.join(SOURCE_DIR, "scripts", "dev.sh")
# Written by scripts/dev.sh (runc, limits these machines allow); every podman here uses it.
CONTAINERS_CONF = os.path.join(SOURCE_DIR, "build-podman", "containers.conf")
BINARIES = ["podman", "runc", "nsenter", "unshare", "kubectl"]

# bench/ holds the drain benchmark's client side: add_client, run_load, RouteMonitor.
sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))
import benchlab  # noqa: E402

# Held by every scripts/dev.sh image or release a test runs, and by scripts/dev.sh test's build
# of the images beside the other suites.
IMAGE_LOCK = os.path.join(SOURCE_DIR, "build-podman", "image.lock")


def _try_lock(f) -> bool:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


# How long a cold image build may take here (two cores: apt in the build stage and a release
# build of vipd); a warm one takes seconds.
BUILD_TIMEOUT_S = 1500


yaml_module = lab.yaml_module  # test_pod_probe calls it as pods.yaml_module()


def _env() -> dict:
    env = dict(os.environ)
    env.pop("CONTAINERS_CONF", None)  # dev.sh writes and uses its own
    return env


def dev_sh(*args: str, timeout: float = BUILD_TIMEOUT_S) -> tuple[str, float, str]:
    """Runs scripts/dev.sh ARGS; returns (its last stdout line, seconds, stderr). Holds
    IMAGE_LOCK meanwhile: `scripts/dev.sh test` builds the images under it while the other
    suites run (its prebuild_image), and a build here waits for that one, then hits its cache."""
    lab.log(f"$ scripts/dev.sh {' '.join(args)}")
    os.makedirs(os.path.dirname(IMAGE_LOCK), exist_ok=True)
    with open(IMAGE_LOCK, "a") as lock:
        waited = time.monotonic()
        lab.wait_until(lambda: _try_lock(lock), timeout, 1.0,
                       f"{IMAGE_LOCK}: the image build scripts/dev.sh test started "
                       "(meson-logs/image-prebuild.log) to finish")
        if time.monotonic() - waited > 1:
            lab.log(f"waited {time.monotonic() - waited:.0f}s for the prebuilt image")
        t0 = time.monotonic()
        p = subprocess.run([DEV_SH, *args], capture_output=True, text=True, timeout=timeout,
                           env=_env())
    took = time.monotonic() - t0
    if p.returncode != 0:
        raise AssertionError(f"scripts/dev.sh {' '.join(args)} failed ({p.returncode}) after "
                             f"{took:.0f}s:\n{p.stderr[-6000:]}\n{p.stdout[-2000:]}")
    lines = p.stdout.strip().splitlines()
    return (lines[-1] if lines else ""), took, p.stderr


def image(target: str = "runtime") -> tuple[str, float, str]:
    """scripts/dev.sh image [slim]: (reference, seconds, build log)."""
    return dev_sh("image", *([] if target == "runtime" else [target]))


def enable_qemu_user() -> None:
    """Lets this machine run arm64 binaries through qemu-user: scripts/dev.sh qemu-user, the
    one place that knows how."""
    lab.run([DEV_SH, "qemu-user"], timeout=60)


def release_archive(version: str) -> str:
    """dist/vipd-VERSION.oci.tar, made by `scripts/dev.sh release` unless this version's is
    there already (e2e_image, which runs first, makes it)."""
    archive = os.path.join(SOURCE_DIR, "dist", f"vipd-{version}.oci.tar")
    if not os.path.exists(archive):
        made, took, _ = dev_sh("release")
        lab.check(made == archive, f"scripts/dev.sh release wrote {archive}: {made!r}")
        lab.log(f"scripts/dev.sh release: {took:.0f}s")
    return archive


def podman_env() -> dict:
    return dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF)


def machine_podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    """podman on the machine's own store, where scripts/dev.sh builds the image."""
    return lab.run(["podman", *args], check=check, timeout=timeout, env=podman_env())


class NodeHost:
    """The host side of a lab node (see the module docstring). run() executes a command on the
    node's host: its network, its /run/vipd, /var/lib/vipd, /etc/vipd and /etc/kubernetes."""

    PATHS = ("/run/vipd", "/var/lib/vipd", "/etc/vipd", "/etc/kubernetes")

    def __init__(self, L: lab.Lab, node: lab.Node, paths: tuple[str, ...] = PATHS,
                 hostname: Optional[str] = None):
        """hostname: the node also gets a UTS namespace of its own with this host name (the
        cluster lab's apiservers name their identity lease after it)."""
        self.L, self.node, self.uts = L, node, hostname is not None
        self.root = L.path(f"n{node.index}-host")
        mine = os.readlink("/proc/self/ns/mnt")
        holder = ["unshare", "--mount", "--propagation", "private", "sleep", "infinity"]
        if hostname is not None:
            holder = ["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c",
                      f"hostname {hostname} && exec sleep infinity"]
        self.holder = L.start(None, f"n{node.index}-mount-ns", holder)
        lab.wait_until(lambda: os.readlink(f"/proc/{self.holder.pid}/ns/mnt") != mine, 5, 0.01,
                       "the node's mount namespace")
        self._made: list[str] = []
        L.on_cleanup(self._remove_mountpoints)
        for path in paths:
            if not os.path.isdir(path):
                # A bind mount needs a mount point; on the machine it stays an empty directory
                # until cleanup removes it.
                os.makedirs(path)
                self._made.append(path)
            os.makedirs(self.path(path), exist_ok=True)
            lab.run(["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt", "mount", "--bind",
                     self.path(path), path])

    def path(self, host_path: str) -> str:
        """Where the test reads and writes what the node sees at host_path."""
        return os.path.join(self.root, host_path.lstrip("/"))

    def argv(self, cmd: list[str]) -> list[str]:
        uts = [f"--uts=/proc/{self.holder.pid}/ns/uts"] if self.uts else []
        return ["nsenter", f"--net=/run/netns/{self.node.ns.name}",
                f"--mount=/proc/{self.holder.pid}/ns/mnt", *uts, "--"] + cmd

    def run(self, cmd: list[str], check: bool = True, timeout: float = 30,
            env: Optional[dict] = None) -> subprocess.CompletedProcess:
        return lab.run(self.argv(cmd), check=check, timeout=timeout, env=env)

    def _remove_mountpoints(self) -> None:
        self.holder.stop()
        for path in reversed(self._made):
            with contextlib.suppress(OSError):
                os.rmdir(path)


class Podman:
    """podman with its own store under the lab's temp dir, run on a node's host (NodeHost; None:
    the machine's). Its pods are stopped gracefully (SIGTERM, 30 s) and removed at cleanup; then
    the store goes."""

    def __init__(self, L: lab.Lab, host: Optional[NodeHost], name: str = "podman"):
        self.L, self.host = L, host
        base = L.path(name)
        self.flags = ["--root", os.path.join(base, "root"), "--runroot",
                      os.path.join(base, "runroot"), "--tmpdir", os.path.join(base, "tmp")]
        L.on_cleanup(self.cleanup)

    def run(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        run = self.host.run if self.host is not None else lab.run
        return run(["podman", *self.flags, *args], check=check, timeout=timeout,
                   env=podman_env())

    def load_from_machine(self, ref: str) -> None:
        """Copies ref from the machine's store (where dev.sh built it) into this one."""
        archive = self.L.path(f"{ref.replace('/', '_').replace(':', '_')}.tar")
        machine_podman("save", "--quiet", "--format", "oci-archive", "-o", archive, ref)
        self.run("load", "--quiet", "-i", archive)
        os.remove(archive)

    def load_release(self, archive: str, arch: str, ref: str) -> None:
        """The image for arch from a release archive (an OCI index) into this store, as ref:
        what `podman pull --arch` takes from a registry's multi-arch tag."""
        image_id = self.run("pull", "--quiet", "--arch", arch, f"oci-archive:{archive}",
                            timeout=300).stdout.split()[-1]
        self.run("tag", image_id, ref)
        got = self.run("image", "inspect", "--format", "{{.Architecture}}", ref).stdout.strip()
        lab.check(got == arch, f"the archive's {arch} image loaded as {ref}: it is {got}")

    def play(self, name: str, docs: list[dict], *options: str) -> str:
        """`podman kube play [options]` of docs (written to the lab dir as name.yaml); returns
        the file."""
        yaml = yaml_module()
        path = self.L.path(f"{name}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump_all(docs, f, sort_keys=False)
        lab.log(f"podman kube play {path}")
        self.run("kube", "play", *options, path, timeout=120)
        return path

    def inspect(self, container: str) -> dict:
        return json.loads(self.run("inspect", container).stdout)[0]

    def pod_stop(self, pod: str) -> subprocess.CompletedProcess:
        return self.run("pod", "stop", "-t", "30", pod, timeout=60)

    def logs(self, container: str) -> str:
        p = self.run("logs", container, check=False)
        return p.stdout + p.stderr

    def cleanup(self) -> None:
        pods = self.run("pod", "ps", "-q", check=False).stdout.split()
        for pod in pods:
            with contextlib.suppress(Exception):
                self.run("pod", "stop", "-t", "30", pod, check=False, timeout=60)
            with contextlib.suppress(Exception):
                self.run("pod", "rm", "-f", pod, check=False)
        with contextlib.suppress(Exception):
            self.run("system", "reset", "--force", check=False, timeout=120)


def expand(text: str, env: dict[str, str]) -> str:
    """$(VAR) as a kubelet expands it in command and args (unknown names stay as written)."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)),
                  text)


def for_podman(doc: dict, downward: dict[str, str]) -> tuple[dict, dict[str, dict]]:
    """A Pod or DaemonSet as podman 4.3 can play it (see the module docstring: the only changes)
    and the probes taken out of it, {"<container>/liveness": probe, ...} for Prober. downward:
    the values of env vars that come from the downward API (fieldRef), by name."""
    doc = copy.deepcopy(doc)
    if doc.get("kind") == "DaemonSet":
        template = doc["spec"]["template"]
        doc = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": doc["metadata"]["name"],
                            "namespace": doc["metadata"].get("namespace"),
                            "labels": template.get("metadata", {}).get("labels", {})},
               "spec": template["spec"]}
    # podman 4.3 makes an emptyDir a named volume called as the pod's volume, which every pod
    # with a volume of that name shares: named after the pod here, it is the pod's own again.
    renamed = {}
    for vol in doc["spec"].get("volumes", []):
        if "emptyDir" in vol:
            renamed[vol["name"]] = vol["name"] = f"{doc['metadata']['name']}-{vol['name']}"
    probes = {}
    for ctr in doc["spec"]["containers"]:
        for vm in ctr.get("volumeMounts", []):
            vm["name"] = renamed.get(vm["name"], vm["name"])
        ctr.pop("ports", None)
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            if kind in ctr:
                probes[f"{ctr['name']}/{kind}"] = ctr.pop(kind)
        env = {}
        for e in ctr.get("env", []):
            if "valueFrom" in e:
                env[e["name"]] = downward[e["name"]]
                e.pop("valueFrom")
                e["value"] = env[e["name"]]
            else:
                env[e["name"]] = e.get("value", "")
        for key in ("command", "args"):
            if key in ctr:
                ctr[key] = [expand(a, env) for a in ctr[key]]
    return doc, probes


def probe(ns: lab.Namespace, p: dict, podman: Optional["Podman"] = None,
          container: Optional[str] = None) -> tuple[bool, str]:
    """One probe as a kubelet runs it for a hostNetwork pod: an httpGet from the node's network
    namespace (success: a status from 200 to 399), or an exec probe in the container (podman
    exec; success: exit 0)."""
    if "exec" in p:
        if podman is None or container is None:
            raise AssertionError(f"an exec probe needs the container: {p}")
        r = podman.run("exec", container, *p["exec"]["command"], check=False,
                       timeout=p.get("timeoutSeconds", 1) + 10)
        detail = (r.stdout + r.stderr).strip()[:120]
        return r.returncode == 0, f"exec {' '.join(p['exec']['command'])}: {r.returncode} " \
                                  f"{detail!r}"
    get = p.get("httpGet")
    if get is None:
        raise AssertionError(f"the test runs httpGet and exec probes only, not {p}")
    url = f"{get.get('scheme', 'HTTP').lower()}://{get.get('host', '127.0.0.1')}:{get['port']}" \
          f"{get.get('path', '/')}"
    try:
        code, body = lab.http_get(ns, url, timeout=p.get("timeoutSeconds", 1))
    except Exception as e:  # noqa: BLE001 - a failed probe
        return False, f"{url}: {e}"
    return 200 <= code < 400, f"{url}: {code} {body.strip()[:80]!r}"


def check_container(podman: Podman, container: str, spec: dict) -> dict:
    """Asserts that the running container is what the manifest's spec says: exactly the
    capabilities it adds (every set of vipd's process), no new privileges, seccomp on, a
    read-only root filesystem, and each volumeMount backed by its hostPath (read-only where
    written so). Returns the container's inspect document."""
    info = podman.inspect(container)
    ctr = spec["containers"][0]
    sc = ctr.get("securityContext", {})
    pid = info["State"]["Pid"]
    lab.check(info["State"].get("Running") and pid > 0,
              f"{container} is running: {info['State']}; its log:\n{podman.logs(container)}")
    status = lab.proc_status(pid)
    added = sc["capabilities"].get("add", [])
    want = lab.capability_mask(added)
    for field in ("CapEff", "CapPrm", "CapBnd"):
        lab.check(int(status[field], 16) == want,
                  f"{container}: {field} {status[field]} is the manifest's capabilities "
                  f"{added} ({want:#x})")
    lab.check(status["NoNewPrivs"] == "1", f"{container}: no_new_privs (allowPrivilegeEscalation)")
    lab.check(status["Seccomp"] == "2", f"{container}: seccomp filter on (RuntimeDefault)")
    lab.check(info["HostConfig"]["ReadonlyRootfs"] is sc.get("readOnlyRootFilesystem"),
              f"{container}: read-only root filesystem as written")
    with open(f"/proc/{pid}/mountinfo") as f:
        root = [line.split() for line in f if line.split()[4] == "/"]
    lab.check(root and "ro" in root[0][5].split(","), f"{container}: / is mounted read-only")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["Destination"]: m for m in info["Mounts"]}
    for vm in ctr.get("volumeMounts", []):
        vol = volumes[vm["name"]]
        m = mounts.get(vm["mountPath"])
        lab.check(m is not None, f"{container}: {vm['mountPath']} is mounted")
        if "hostPath" in vol:
            lab.check(m["Source"] == vol["hostPath"]["path"],
                      f"{container}: {vm['mountPath']} is the host's {vol['hostPath']['path']} "
                      f"(podman says {m['Source']})")
        lab.check(m["RW"] is not vm.get("readOnly", False),
                  f"{container}: {vm['mountPath']} read-only={vm.get('readOnly', False)}")
    lab.check(info["State"]["Status"] == "running", f"{container} runs")
    return info


def wall_time(podman_time: str) -> float:
    """podman's RFC 3339 time with nanoseconds ("2026-12-04T04:15:01.123456789Z" or with an
    offset) as seconds since the epoch."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", podman_time)
    if not m:
        raise AssertionError(f"unexpected podman time {podman_time!r}")
    tz = datetime.timezone.utc if m.group(3) == "Z" else datetime.datetime.strptime(
        m.group(3).replace(":", ""), "%z").tzinfo
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=tz)
    return t.timestamp() + float("0." + (m.group(2) or "0"))


def main(test, binaries: list[str]) -> None:
    lab.main(test, binaries=BINARIES + binaries, vipd=True)


# --- the lab both pod tests use --------------------------------------------------------------

NODE_ASN = 65001  # node 1's localAsn in its instance metadata (BIRD's neighbour "node1")
LOAD_RATE, LOAD_TIMEOUT_S = 200, 1.0  # requests a second through the VIP, each one's deadline


class PodLab:
    """A BIRD fabric (AS 65000: ECMP into its kernel with an L4 hash, GRACEFUL_SHUTDOWN ->
    local-pref 0, graceful restart on) and two nodes. Node 1 is a container host (NodeHost) with
    its own podman store, a stand-in kube-apiserver on 127.0.0.1:6443 whose certificate is shaped
    like kubeadm's (no 127.0.0.1 in it) and the cluster CA at /etc/kubernetes/pki/ca.crt. Node 2
    runs vipd as a process: the rest of the control plane, which carries the VIP's traffic while
    node 1 drains. Behind the fabric a client namespace; on both nodes an HTTP responder on the
    VIP (bench/'s, with its load client)."""

    def __init__(self, L: lab.Lab, arch: Optional[str] = None):
        """arch: run the release archive's image for that architecture (release_image) instead
        of the machine's image build."""
        self.L = L
        self.version = lab.run([lab.vipd_binary(), "--version"]).stdout.split()[-1]
        if arch is None:
            self.ref, build_s, _ = image()
            lab.log(f"image {self.ref} ready in {build_s:.1f}s")
        else:
            archive = release_archive(self.version)
            self.ref = f"localhost/vipd:{self.version}"
        lab.check(self.ref == f"localhost/vipd:{self.version}",
                  f"the image is this build's version: {self.ref} vs vipd {self.version}")
        self.topo = L.fabric_with_nodes(2)
        self.fabric = self.topo.fabric
        self.n1, self.n2 = self.topo.nodes
        self.fabric.sysctl("net.ipv4.fib_multipath_hash_policy", "1")
        gr = "graceful restart on;"
        self.bird = lab.Bird(L, self.fabric, self.topo.fabric_v4, lab.FABRIC_ASN,
                             [lab.Neighbor(self.n1.v4, NODE_ASN, name="node1", bird_options=[gr]),
                              lab.Neighbor(self.n2.v4, self.n2.asn, name="node2",
                                           bird_options=[gr])],
                             interfaces=[self.topo.fabric_if])
        self.client = benchlab.add_client(L, self.topo)
        self.monitor = benchlab.RouteMonitor(L, self.fabric)
        self.other = lab.Vipd(L, self.n2.ns, lab.vipd_config(L, self.n2, self.n2.asn,
                                                             lab.FABRIC_V4, lab.FABRIC_ASN,
                                                             "vipd-n2"), name="vipd-n2")
        self.host = NodeHost(L, self.n1)
        self.podman = Podman(L, self.host)
        if arch is None:
            self.podman.load_from_machine(self.ref)
        else:
            self.podman.load_release(archive, arch, self.ref)
        ca = lab.make_ca(L, "cluster-ca")
        os.makedirs(self.host.path("/etc/kubernetes/pki"))
        with open(ca[0]) as src, open(self.host.path("/etc/kubernetes/pki/ca.crt"), "w") as dst:
            dst.write(src.read())
        self.apiserver = lab.FakeApiserver(L, self.n1.ns,
                                           lab.make_server_cert(L, ca, "apiserver", self.n1.v4))

    def hops(self) -> list[str]:
        return self.fabric.kernel_nexthops(lab.VIP4)

    def wait_hops(self, want: list[str], timeout: float, what: str) -> float:
        return lab.timed_wait(lambda: self.hops() == sorted(want), timeout, 0.02,
                              lambda: f"{what}: fabric route {lab.VIP4} via {sorted(want)} "
                              f"(have {self.hops()}; BIRD: {self.bird.neighbor_state(self.n1.v4)},"
                              f" {self.bird.neighbor_state(self.n2.v4)})")

    def render(self, bootstrap: bool = True) -> subprocess.CompletedProcess:
        """`vipd render` as a node's first boot runs it: from the image, with the node's
        /etc/vipd (the metadata, the config it writes) and /etc/kubernetes (the static-pod
        directory and the archive beside it), no network."""
        yaml = yaml_module()
        metadata = {"apiVersion": "vipd.io/v1alpha1", "kind": "InstanceMetadata",
                    "node": {"addresses": [self.n1.v4]}, "localAsn": NODE_ASN,
                    "vips": [lab.VIP4], "peers": [{"address": lab.FABRIC_V4,
                                                   "asn": lab.FABRIC_ASN}],
                    "bootstrap": {"enabled": bootstrap}, "health": {"type": "apiserver"}}
        with open(self.host.path("/etc/vipd/metadata.yaml"), "w") as f:
            yaml.safe_dump(metadata, f, sort_keys=False)
        p = self.podman.run("run", "--rm", "--network", "none", "-v", "/etc/vipd:/etc/vipd",
                            "-v", "/etc/kubernetes:/etc/kubernetes", self.ref, "render",
                            "--metadata", "/etc/vipd/metadata.yaml", "--config-out",
                            "/etc/vipd/vipd.yaml", "--manifest-dir", "/etc/kubernetes/manifests")
        lab.log(f"vipd render (from the image): {p.stdout.strip()} {p.stderr.strip()}")
        return p

    def static_manifest(self) -> dict:
        with open(self.host.path("/etc/kubernetes/manifests/vipd.yaml")) as f:
            text = f.read()
        lab.check("#%" not in text, "the rendered manifest carries no template notes")
        return yaml_module().safe_load(text)

    def play(self, name: str, docs: list[dict]) -> tuple[dict, dict[str, dict]]:
        """Plays the Pod or DaemonSet among docs (ConfigMaps go along as they are) the way podman
        needs it (for_podman); returns the played pod and the probes taken out of it."""
        played, probes, pod = [], {}, None
        for doc in docs:
            if doc.get("kind") in ("Pod", "DaemonSet"):
                pod, probes = for_podman(doc, {"NODE_IP": self.n1.v4})
                played.append(pod)
            else:
                played.append(doc)
        lab.check(pod is not None, f"{name}: a Pod or DaemonSet to play")
        self.podman.play(name, played)
        return pod, probes

    def load(self, name: str, duration: float) -> tuple[lab.Proc, str]:
        out = self.L.path(f"{name}.json")
        return benchlab.run_load(self.L, self.client, LOAD_RATE, duration, LOAD_TIMEOUT_S,
                                      out), out

    def requests(self, load: lab.Proc, out: str, duration: float) -> list[dict]:
        lab.wait_until(lambda: not load.alive(), duration + LOAD_TIMEOUT_S + 20, 0.1,
                       "the load client to finish")
        with open(out) as f:
            return json.load(f)["requests"]
