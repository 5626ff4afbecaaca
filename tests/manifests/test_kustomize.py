#!/usr/bin/env python3
"""The Kubernetes manifests: what `kubectl kustomize manifests/` builds, and the static-pod
template that `vipd render` fills.

Asserts:
- `kubectl kustomize manifests/` builds the objects of `manifests/daemonset` and `manifests/kube`
  and nothing else, with nothing on stderr but kustomize's own deprecation notice for `bases`
  (which kubectl 1.20 needs); the first is exactly the DaemonSet and its ConfigMap (the
  static-pod template is not picked up);
- manifests/kube (issue 41): the CRD vipdnodes.vipd.io (cluster-scoped, v1alpha1, the status
  subresource, the printer columns, the condition types kube/vipd_node.h writes), the service
  account kube-system/vipd, a ClusterRole of exactly read nodes / write vipdnodes and their
  status / post events, its binding, and the ValidatingAdmissionPolicy (fails closed, applies to
  vipd's account, the object's name must be the token's node-name) with a Deny binding; nothing
  cluster-scoped carries a namespace;
- the DaemonSet: kube-system, hostNetwork, system-node-critical, the control-plane role label as
  nodeSelector and tolerations, RollingUpdate maxSurge 1 / maxUnavailable 0, capabilities exactly
  NET_ADMIN + NET_BIND_SERVICE + NET_RAW with ALL dropped (tests/e2e/test_capabilities.py runs vipd with
  that set), not privileged, no privilege escalation, read-only root,
  a memory limit of at least MEMORY_LIMIT_MIN_MI (both pods: a refused config file never
  reaches it, issue 40), the preStop `vipctl ... withdraw --wait --transient` and exec probes (`vipctl status --json`,
  `vipctl ready`) on the pod's own socket (control.instanceSocket, an emptyDir), the ConfigMap
  mounted where --config points and the
  host's /etc/vipd (read-only) where --node-config points, hostPaths for every directory the
  config names, a selector that does not match the static pod, and a grace period above the
  config's drain;
- the ConfigMap's vipd.yaml: cluster-wide policy only (no routerId, localAsn, peers or
  metrics.listen: those are the node file's), mode daemonset, the socket and health listener
  above, TEST-NET example values, the apiserver check against the mounted CA; `vipd validate`
  accepts it with a node file as `vipd render` writes one (the renderer's golden file), with
  /metrics on the node's address from that file (`vipd config --show`), refuses it without one
  (no router ID, AS or peers), and refuses a node file that also sets a key the ConfigMap sets,
  naming both files;
- the static-pod template holds exactly the six placeholders, is YAML as it stands, and after
  substitution is a Pod with the same security fields, probes on METRICS_PORT and the preStop
  on CONTROL_SOCKET;
- manifests/distros/k3s and rke2: manifests/ with only the CA volume's host path changed, to the
  CA file `vipd render --distro` mounts into the static pod and names in health.caFile;
- one version: the DaemonSet's image is localhost/vipd:<meson's project version> (the release
  CHANGELOG.md's first entry describes), and no image anywhere in manifests/ or in what kustomize
  builds is `:latest` or untagged; in both pods VIPD_CONTROL_SOCKET (vipctl's default inside the
  pod) is the pod's own control socket, the one its preStop hook uses;
- manifests/probe (issue 19): builds the probe DaemonSets, their ConfigMap, the PodMonitor and the
  dashboard's ConfigMap; each DaemonSet is placed by the node label vipd.io/probe-site, its
  selector and pod label name the same site, and --site comes from that pod label through the
  downward API (nothing reads a node's name); the ConfigMap's probe.yaml is mounted where --config
  points, the CA where its caFile points, the metrics port is its metrics.listen; `vipd probe
  --validate` accepts it with each DaemonSet's site and refuses it without one.
Needs kubectl and PyYAML (missing: skip outside CI, fail with CI=true) and the built vipd.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

from checks import BUILD_DIR, SOURCE_DIR, Checks, main, missing, run, seconds, yaml_module

yaml = yaml_module()

MANIFESTS = os.path.join(SOURCE_DIR, "manifests")
# The least memory limit a vipd pod may have: what a refused config file can make vipd allocate
# (about 40 MiB, docs/operations.md) with room to spare.
MEMORY_LIMIT_MIN_MI = 96


def mebibytes(quantity: str) -> float:
    """A Kubernetes memory quantity ("128Mi", "1Gi", "134217728") in MiB; 0 when unparsable."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(quantity))
    if not m:
        return 0
    return int(m.group(1)) * {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, None: 1 / 2**20}[m.group(2)]
STATIC_POD = os.path.join(MANIFESTS, "static-pod", "vipd.yaml")
VIPD = os.path.join(BUILD_DIR, "daemon", "vipd")
# A node file as `vipd render` writes one: the renderer's golden output (router ID 192.0.2.11,
# so /metrics on 192.0.2.11:9472).
NODE_FILE = os.path.join(SOURCE_DIR, "tests", "data", "bootstrap", "ipv4-only.node.yaml")
NODE_METRICS_ADDRESS = "192.0.2.11"

# kustomize v5 (kubectl >= 1.27) still builds `bases:` but says so on stderr; v2.0.3 (kubectl
# 1.20, Debian 12) accepts a directory only there.
# The same for `patchesStrategicMerge` (manifests/distros/), which v2.0.3 needs too.
BASES_NOTICE = re.compile(r"^# Warning: '(bases|patchesStrategicMerge)' is deprecated\.")

PLACEHOLDERS = {
    "IMAGE": "registry.example/vipd:test",
    "CONFIG_PATH": "/etc/vipd/vipd.yaml",
    "CONFIG_DIR": "/etc/vipd",
    "METRICS_PORT": "9473",
    "CONTROL_SOCKET": "/run/vipd/static-pod.sock",
    "CA_FILE": "/etc/kubernetes/pki/ca.crt",
}

CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
CONFIG_MOUNT = "/etc/vipd-cluster"
CONFIG_FILE = CONFIG_MOUNT + "/vipd.yaml"
NODE_DIR = "/etc/vipd"
NODE_CONFIG = NODE_DIR + "/node.yaml"
CA_FILE = "/etc/kubernetes/pki/ca.crt"
INSTANCE_SOCKET = "/run/vipd-instance/vipd.sock"  # control.instanceSocket: the pod's own


def kubectl() -> str:
    path = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not path:
        missing("kubectl is not installed (Debian: apt-get install kubernetes-client)")
    return path


def kustomize(c: Checks, directory: str) -> list[dict]:
    p = run([kubectl(), "kustomize", directory])
    c.equal(p.returncode, 0, f"kubectl kustomize {directory} exits 0")
    noise = [l for l in p.stderr.splitlines() if l.strip() and not BASES_NOTICE.match(l)]
    c.equal(noise, [], f"kubectl kustomize {directory} prints nothing else on stderr")
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def container_of(pod_spec: dict) -> dict:
    containers = pod_spec.get("containers", [])
    assert len(containers) == 1, f"one container expected, got {len(containers)}"
    return containers[0]


def host_paths(pod_spec: dict, container: dict) -> dict[str, tuple[str, bool, str]]:
    """mountPath -> (host path, readOnly, hostPath type) for each hostPath volume mounted."""
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    out = {}
    for m in container.get("volumeMounts", []):
        v = volumes.get(m["name"], {})
        if "hostPath" in v:
            out[m["mountPath"]] = (v["hostPath"]["path"], bool(m.get("readOnly", False)),
                                   v["hostPath"].get("type", ""))
    return out


def check_pod_common(c: Checks, who: str, spec: dict, port: int, socket: str,
                     metrics_port: int = 0, exec_probes: bool = False) -> dict:
    """What the DaemonSet's pod and the static pod share: security, probes, drain, host paths.
    exec_probes: the probes are `vipctl --socket SOCKET status --json` (liveness) and `... ready`
    (readiness) on the pod's own socket, not GETs on 127.0.0.1:PORT (the DaemonSet: two pods of
    a rollout share the node's ports)."""
    ctr = container_of(spec)
    c.equal(spec.get("hostNetwork"), True, f"{who}: hostNetwork")
    c.equal(spec.get("priorityClassName"), "system-node-critical", f"{who}: priority class")
    if who == "DaemonSet":
        # The link to the API (issue 41): the vipd service account's token, bound to the pod
        # (and so to its node); the Node's name and this node's own apiserver from the downward
        # API, never the VIP.
        c.equal(spec.get("serviceAccountName"), "vipd", f"{who}: the vipd service account")
        c.equal(spec.get("automountServiceAccountToken"), True, f"{who}: its token mounted")
        env = {e["name"]: e for e in ctr.get("env", [])}
        c.equal(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {})
                .get("fieldPath"), "spec.nodeName", f"{who}: NODE_NAME from spec.nodeName")
        c.equal(env.get("KUBERNETES_SERVICE_HOST", {}).get("valueFrom", {}).get("fieldRef", {})
                .get("fieldPath"), "status.hostIP",
                f"{who}: the API at the node's own address, not the VIP")
    else:
        c.equal(spec.get("automountServiceAccountToken"), False, f"{who}: no API token mounted")
    c.expect(isinstance(spec.get("terminationGracePeriodSeconds"), int),
             f"{who}: terminationGracePeriodSeconds is set")

    sc = ctr.get("securityContext", {})
    caps = sc.get("capabilities", {})
    c.equal(sorted(caps.get("add", [])), ["NET_ADMIN", "NET_BIND_SERVICE", "NET_RAW"],
            f"{who}: capabilities added are exactly NET_ADMIN, NET_BIND_SERVICE and NET_RAW")
    c.equal(caps.get("drop"), ["ALL"], f"{who}: every other capability dropped")
    c.equal(sc.get("privileged"), False, f"{who}: not privileged")
    c.equal(sc.get("allowPrivilegeEscalation"), False, f"{who}: no privilege escalation")
    c.equal(sc.get("readOnlyRootFilesystem"), True, f"{who}: read-only root filesystem")
    c.equal(sc.get("runAsUser"), 0, f"{who}: runs as root (for the capabilities)")

    if exec_probes:
        for probe, command in (("livenessProbe", ["alive"]),
                               ("readinessProbe", ["ready"])):
            got = ctr.get(probe, {}).get("exec", {}).get("command")
            c.equal(got, ["vipctl", "--socket", socket, *command],
                    f"{who}: {probe} runs vipctl {' '.join(command)} on the pod's own socket")
    else:
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = ctr.get(probe, {}).get("httpGet", {})
            c.equal((get.get("host"), get.get("path"), get.get("port")),
                    ("127.0.0.1", path, port), f"{who}: {probe} GET 127.0.0.1:{port}{path}")
    metrics_port = metrics_port or port
    if exec_probes:
        # The DaemonSet: on a hostNetwork pod a container port is a host port to the scheduler,
        # and a rollout's surge pod could never be placed beside the pod it replaces.
        c.equal(ctr.get("ports", []), [], f"{who}: declares no container port (a host port)")
    else:
        c.equal([p.get("containerPort") for p in ctr.get("ports", [])], [metrics_port],
                f"{who}: declares the metrics port {metrics_port}")

    pre_stop = ctr.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")
    c.equal(pre_stop, ["vipctl", "--socket", socket, "withdraw", "--wait", "--transient"],
            f"{who}: preStop drains this instance without persisting the withdraw")

    mounts = host_paths(spec, ctr)
    c.equal(mounts.get("/run/vipd"), ("/run/vipd", False, "DirectoryOrCreate"),
            f"{who}: hostPath /run/vipd (handoff lock, control sockets)")
    c.equal(mounts.get("/var/lib/vipd"), ("/var/lib/vipd", False, "DirectoryOrCreate"),
            f"{who}: hostPath /var/lib/vipd (withdrawn state)")
    c.equal(mounts.get(CA_FILE), (CA_FILE, True, "File"),
            f"{who}: the cluster CA certificate read-only from the host")
    c.expect(not any(p.startswith("/etc/kubernetes/pki") and p != CA_FILE
                     for p, _, _ in mounts.values()),
             f"{who}: nothing else under /etc/kubernetes/pki (the CA key stays on the host)")
    # Issue 40: a config file vipd refuses (4 MiB, an alias bomb) must not reach the limit: the
    # bounds in config/ keep a refused file's cost to a few times 4 MiB over an idle 8 MiB.
    resources = ctr.get("resources", {})
    limit = mebibytes(resources.get("limits", {}).get("memory", "0"))
    request = mebibytes(resources.get("requests", {}).get("memory", "0"))
    c.expect(MEMORY_LIMIT_MIN_MI <= limit and 0 < request <= limit,
             f"{who}: memory limit {limit} Mi (at least {MEMORY_LIMIT_MIN_MI}), request {request} Mi "
             f"within it")
    return ctr


def check_config(c: Checks, text: str, ds_spec: dict, ctr: dict) -> dict:
    cfg = yaml.safe_load(text)
    for key in ("routerId", "localAsn", "peers"):
        c.expect(key not in cfg, f"ConfigMap: no {key} (a node fact: the node file's)")
    c.equal(cfg.get("mode"), "daemonset", "ConfigMap: mode daemonset")
    c.equal(cfg.get("control", {}).get("socket"), "/run/vipd/vipd.sock", "ConfigMap: socket")
    c.equal(cfg.get("control", {}).get("instanceSocket"), INSTANCE_SOCKET,
            "ConfigMap: the pod's own socket (hooks, probes)")
    c.equal(cfg.get("control", {}).get("stateDir", "/var/lib/vipd"), "/var/lib/vipd",
            "ConfigMap: stateDir is the hostPath")
    c.equal(cfg.get("handoff", {}).get("dir", "/run/vipd"), "/run/vipd",
            "ConfigMap: handoff.dir is the hostPath")
    c.expect("listen" not in cfg.get("metrics", {}),
             "ConfigMap: no metrics.listen (the node file puts /metrics on the node's address; "
             "0.0.0.0 would serve it on the VIP too)")
    c.equal(cfg.get("metrics", {}).get("healthListen"), "127.0.0.1:9474",
            "ConfigMap: /healthz and /readyz on 127.0.0.1 only")
    c.equal([v.get("address") for v in cfg.get("vips", [])], ["203.0.113.10/32"],
            "ConfigMap: example VIP")
    health = cfg.get("health", {})
    c.equal((health.get("type"), health.get("caFile")), ("apiserver", CA_FILE),
            "ConfigMap: apiserver health check against the cluster CA")

    drain = cfg.get("drain", {})
    total = (seconds(drain.get("gracefulShutdownTime", "2s")) + seconds(drain.get("timeout", "10s"))
             + seconds(drain.get("unbindDelay", "1s")))
    grace = ds_spec.get("terminationGracePeriodSeconds", 30)
    c.expect(grace > total, f"DaemonSet: grace period {grace}s > the drain's {total:g}s")
    return cfg


def check_validate(c: Checks, text: str) -> None:
    if not os.access(VIPD, os.X_OK):
        c.expect(False, f"{VIPD} is built (set VIPD_BUILD_DIR)")
        return
    tmp = tempfile.mkdtemp(prefix="vipd-manifests-")
    try:
        config = os.path.join(tmp, "vipd.yaml")
        with open(config, "w") as f:
            f.write(text)
        node = os.path.join(tmp, "node.yaml")
        with open(NODE_FILE) as f:
            node_text = f.read()
        with open(node, "w") as f:
            f.write(node_text)
        p = run([VIPD, "validate", "--config", config, "--node-config", node])
        c.equal(p.returncode, 0, f"ConfigMap's vipd.yaml validates with a node file: "
                f"{(p.stdout + p.stderr).strip()}")
        p = run([VIPD, "config", "--show", "--config", config, "--node-config", node])
        shown = {key: (value, source) for key, value, source in
                 re.findall(r"^metrics\.(address|port): (\S+)\s+# (\S+)$", p.stdout, re.MULTILINE)}
        c.equal(shown, {"address": (NODE_METRICS_ADDRESS, node), "port": ("9472", node)},
                "the DaemonSet's /metrics is on the node's address, from the node file")

        p = run([VIPD, "validate", "--config", config])
        out = p.stdout + p.stderr
        c.expect(p.returncode != 0 and all(k in out for k in ("routerId", "localAsn", "peers")),
                 f"without the node file it is refused (no router ID, AS or peers): exit "
                 f"{p.returncode}")

        twice = os.path.join(tmp, "node-with-vips.yaml")
        with open(twice, "w") as f:
            f.write(node_text + "vips: [{address: 203.0.113.99/32}]\n")
        p = run([VIPD, "validate", "--config", config, "--node-config", twice])
        out = (p.stdout + p.stderr).strip()
        c.expect(p.returncode == 1 and f"vips: set in both {config}" in out and twice in out,
                 f"a key in the ConfigMap and the node file is an error naming both: exit "
                 f"{p.returncode}: {out}")
    finally:
        shutil.rmtree(tmp)


def check_daemonset(c: Checks, objects: list[dict]) -> dict:
    """Returns the DaemonSet's selector, for the static pod's check."""
    kinds = sorted(o.get("kind", "") for o in objects)
    c.equal(kinds, ["ConfigMap", "DaemonSet"], "manifests/daemonset builds exactly a ConfigMap "
            "and a DaemonSet (not the static-pod template)")
    ds = next((o for o in objects if o.get("kind") == "DaemonSet"), None)
    cm = next((o for o in objects if o.get("kind") == "ConfigMap"), None)
    if ds is None or cm is None:
        return {}

    c.equal((ds["metadata"].get("name"), ds["metadata"].get("namespace")), ("vipd", "kube-system"),
            "DaemonSet: kube-system/vipd")
    c.equal(cm["metadata"].get("namespace"), "kube-system", "ConfigMap: in kube-system")
    c.expect(cm["metadata"].get("name", "").startswith("vipd-config"),
             "ConfigMap: named vipd-config (plus kustomize's content hash)")

    strategy = ds["spec"].get("updateStrategy", {})
    rolling = strategy.get("rollingUpdate", {})
    c.equal((strategy.get("type"), rolling.get("maxSurge"), rolling.get("maxUnavailable")),
            ("RollingUpdate", 1, 0),
            "DaemonSet: RollingUpdate, maxSurge 1, maxUnavailable 0 (the new pod takes over)")
    selector = ds["spec"].get("selector", {}).get("matchLabels", {})
    template_labels = ds["spec"]["template"].get("metadata", {}).get("labels", {})
    c.expect(selector.items() <= template_labels.items(), "DaemonSet: selector matches its pods")

    spec = ds["spec"]["template"]["spec"]
    c.equal(spec.get("nodeSelector"), {CONTROL_PLANE: ""},
            "DaemonSet: control-plane nodes by role label only")
    c.expect("nodeName" not in spec and "affinity" not in spec, "DaemonSet: no node names")
    tolerations = {(t.get("key"), t.get("operator"), t.get("effect"))
                   for t in spec.get("tolerations", [])}
    c.expect((CONTROL_PLANE, "Exists", "NoSchedule") in tolerations,
             "DaemonSet: tolerates the control-plane NoSchedule taint")

    ctr = check_pod_common(c, "DaemonSet", spec, 9474, INSTANCE_SOCKET, metrics_port=9472,
                           exec_probes=True)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    instance = [m for m in ctr.get("volumeMounts", [])
                if m.get("mountPath") == os.path.dirname(INSTANCE_SOCKET)]
    c.expect(bool(instance) and "emptyDir" in volumes.get(instance[0]["name"], {}),
             f"DaemonSet: {os.path.dirname(INSTANCE_SOCKET)} is the pod's own emptyDir")
    c.equal(ctr.get("args"), ["--config", CONFIG_FILE, "--node-config", NODE_CONFIG],
            "DaemonSet: args --config (the ConfigMap) and --node-config (the node file)")
    c.equal(host_paths(spec, ctr).get(NODE_DIR), (NODE_DIR, True, "Directory"),
            f"DaemonSet: the host's {NODE_DIR} read-only at the same path (node file, keys)")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    config_mounts = [m for m in ctr.get("volumeMounts", []) if m.get("mountPath") == CONFIG_MOUNT]
    config_volume = volumes.get(config_mounts[0]["name"], {}) if config_mounts else {}
    c.equal(config_volume.get("configMap", {}).get("name"), cm["metadata"].get("name"),
            f"DaemonSet: the generated ConfigMap is mounted at {CONFIG_MOUNT}")

    text = cm.get("data", {}).get("vipd.yaml")
    if c.expect(isinstance(text, str), "ConfigMap: has the key vipd.yaml"):
        check_config(c, text, spec, ctr)
        check_validate(c, text)
    return selector


def render_static_pod(template: str) -> str:
    """The template with each placeholder filled as `vipd render` would (test values). Also used
    by tests/e2e/test_capabilities.py, which reads the capabilities the pod grants."""
    for name, value in PLACEHOLDERS.items():
        template = template.replace("{{" + name + "}}", value)
    return template


def check_static_pod(c: Checks, daemonset_selector: dict) -> None:
    with open(STATIC_POD) as f:
        template = f.read()
    # Comments name the placeholders without braces, or render would fill them there too.
    found = set(re.findall(r"\{\{([A-Za-z_]+)\}\}", template))
    c.equal(found, set(PLACEHOLDERS), "static pod: exactly the placeholders vipd render fills")
    try:
        yaml.compose(template)
        parses = True
    except yaml.YAMLError:
        parses = False
    c.expect(parses, "static pod: the template itself is YAML")

    pod = yaml.safe_load(render_static_pod(template))
    c.equal((pod.get("apiVersion"), pod.get("kind")), ("v1", "Pod"), "static pod: a v1 Pod")
    meta = pod.get("metadata", {})
    c.equal((meta.get("name"), meta.get("namespace")), ("vipd-bootstrap", "kube-system"),
            "static pod: kube-system/vipd-bootstrap")
    labels = meta.get("labels", {})
    c.equal((labels.get("app.kubernetes.io/name"), labels.get("app.kubernetes.io/component")),
            ("vipd", "bootstrap"), "static pod: labels")
    c.expect(not daemonset_selector.items() <= labels.items(),
             "static pod: the DaemonSet's selector does not match it")
    spec = pod.get("spec", {})
    c.equal(spec.get("terminationGracePeriodSeconds"), 30, "static pod: grace period 30s")
    ctr = check_pod_common(c, "static pod", spec, int(PLACEHOLDERS["METRICS_PORT"]),
                           PLACEHOLDERS["CONTROL_SOCKET"])
    c.equal(ctr.get("image"), PLACEHOLDERS["IMAGE"], "static pod: image")
    c.equal(ctr.get("command"), ["vipd", "--config", PLACEHOLDERS["CONFIG_PATH"]],
            "static pod: command vipd --config CONFIG_PATH")
    c.equal(host_paths(spec, ctr).get(PLACEHOLDERS["CONFIG_DIR"]),
            (PLACEHOLDERS["CONFIG_DIR"], True, "Directory"),
            "static pod: CONFIG_DIR read-only at the same path")


def project_version() -> str:
    p = run(["meson", "introspect", "--projectinfo", BUILD_DIR])
    return json.loads(p.stdout).get("version", "") if p.returncode == 0 else ""


def check_versions(c: Checks, objects: list[dict]) -> None:
    version = project_version()
    c.expect(re.fullmatch(r"\d+\.\d+\.\d+", version), f"meson.build's version {version!r}")
    with open(os.path.join(SOURCE_DIR, "CHANGELOG.md")) as f:
        releases = re.findall(r"^## \[?(\d+\.\d+\.\d+)\]?", f.read(), re.M)
    c.expect(releases[:1] == [version],
             f"CHANGELOG.md's first release {releases[:1]} is meson's version {version}")
    ds = next((o for o in objects if o.get("kind") == "DaemonSet"), {})
    containers = ds.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    c.equal([ctr.get("image") for ctr in containers], [f"localhost/vipd:{version}"],
            "DaemonSet: the image pins this release's tag")
    images = []
    for root, _, files in os.walk(MANIFESTS):
        for name in files:
            with open(os.path.join(root, name)) as f:
                images += re.findall(r"^\s*(?:-\s*)?image:\s*\"?([^\s\"#]+)", f.read(), re.M)
    for image in images:
        if "{{" in image:
            continue
        tag = image.rsplit("/", 1)[-1]
        c.expect(":" in tag and not tag.endswith(":latest"),
                 f"manifests/: image {image} is pinned to a tag other than latest")

    template = {"DaemonSet": containers[0] if containers else {}}
    with open(STATIC_POD) as f:
        static_pod = yaml.safe_load(render_static_pod(f.read()))
    template["static pod"] = static_pod["spec"]["containers"][0]
    for what, ctr in template.items():
        env = {e["name"]: e.get("value") for e in ctr.get("env", [])}
        hook = ctr.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
        socket = hook[hook.index("--socket") + 1] if "--socket" in hook else None
        c.expect(socket is not None and env.get("VIPD_CONTROL_SOCKET") == socket,
                 f"{what}: VIPD_CONTROL_SOCKET {env.get('VIPD_CONTROL_SOCKET')} is the pod's "
                 f"own control socket {socket}")


def ca_volume(objects: list[dict]) -> dict:
    ds = next((o for o in objects if o.get("kind") == "DaemonSet"), {})
    volumes = ds.get("spec", {}).get("template", {}).get("spec", {}).get("volumes", [])
    return next((v for v in volumes if v.get("name") == "kubernetes-ca"), {})


def rendered_ca(c: Checks, distro: str) -> tuple[str, str]:
    """(the static pod's CA hostPath, the config's health.caFile) as `vipd render --distro`
    writes them."""
    tmp = tempfile.mkdtemp(prefix="vipd-distro-")
    try:
        config = os.path.join(tmp, "etc", "vipd", "vipd.yaml")
        manifests = os.path.join(tmp, "manifests")
        metadata = os.path.join(SOURCE_DIR, "tests", "data", "bootstrap", "ipv4-only.metadata.yaml")
        p = run([VIPD, "render", "--metadata", metadata, "--config-out", config, "--distro",
                 distro, "--manifest-dir", manifests])
        if not c.equal(p.returncode, 0, f"vipd render --distro {distro}: {p.stderr.strip()}"):
            return "", ""
        with open(os.path.join(manifests, "vipd.yaml")) as f:
            pod = yaml.safe_load(f)
        with open(config) as f:
            ca_file = yaml.safe_load(f).get("health", {}).get("caFile", "")
        volume = next((v for v in pod["spec"]["volumes"] if v["name"] == "kubernetes-ca"), {})
        return volume.get("hostPath", {}).get("path", ""), ca_file
    finally:
        shutil.rmtree(tmp)


def check_distros(c: Checks, base: list[dict]) -> None:
    """manifests/distros/<name>: what manifests/ builds (`base`) with only the CA volume's host
    path changed, to the file `vipd render --distro <name>` mounts into the static pod and checks
    against."""
    if not os.access(VIPD, os.X_OK):
        c.expect(False, f"{VIPD} is built (set VIPD_BUILD_DIR)")
        return
    host, ca_file = rendered_ca(c, "kubeadm")
    c.equal((ca_volume(base).get("hostPath", {}).get("path"), host), (CA_FILE, CA_FILE),
            "kubeadm: the base DaemonSet and vipd render mount the same CA")
    for distro in ("k3s", "rke2"):
        objects = kustomize(c, os.path.join(MANIFESTS, "distros", distro))
        host, ca_file = rendered_ca(c, distro)
        c.expect(host.startswith(f"/var/lib/rancher/{distro}/"),
                 f"{distro}: vipd render mounts {distro}'s own CA: {host}")
        c.equal(ca_file, host, f"{distro}: the rendered config checks against the mounted CA")
        c.equal(ca_volume(objects).get("hostPath"), {"path": host, "type": "File"},
                f"{distro}: the DaemonSet mounts the CA vipd render uses")
        # Everything else is the base: the same ConfigMap, the CA at the same path in the pod
        # (volumes compared by name: a strategic merge moves the patched one).
        def normal(objs: list[dict], ca: str) -> list[dict]:
            objs = json.loads(json.dumps(objs))
            for o in objs:
                if ca_volume([o]):
                    ca_volume([o])["hostPath"]["path"] = ca
                    o["spec"]["template"]["spec"]["volumes"].sort(key=lambda v: v["name"])
            return sorted(objs, key=key)
        c.expect(normal(objects, CA_FILE) == normal(base, CA_FILE),
                 f"{distro}: nothing but the CA's host path differs from the base")


PROBE_SITE_LABEL = "vipd.io/probe-site"


def check_probe(c: Checks) -> None:
    objects = kustomize(c, os.path.join(MANIFESTS, "probe"))
    by_kind: dict[str, list[dict]] = {}
    for o in objects:
        by_kind.setdefault(o.get("kind", ""), []).append(o)
    c.equal(sorted((k, len(v)) for k, v in by_kind.items()),
            [("ConfigMap", 2), ("DaemonSet", 2), ("PodMonitor", 1)],
            "manifests/probe builds two DaemonSets, two ConfigMaps and a PodMonitor")
    configs = [o for o in by_kind.get("ConfigMap", []) if "probe.yaml" in o.get("data", {})]
    dashboards = [o for o in by_kind.get("ConfigMap", [])
                  if "vipd-probe-dashboard.json" in o.get("data", {})]
    if not (c.equal(len(configs), 1, "one ConfigMap holds probe.yaml")
            and c.equal(len(dashboards), 1, "one ConfigMap holds the dashboard")):
        return
    cm = configs[0]
    c.equal(dashboards[0]["metadata"].get("labels", {}).get("grafana_dashboard"), "1",
            "probe dashboard ConfigMap: labelled for the Grafana sidecar")
    json.loads(dashboards[0]["data"]["vipd-probe-dashboard.json"])
    probe_cfg = yaml.safe_load(cm["data"]["probe.yaml"])
    c.expect("site" not in probe_cfg, "probe.yaml: no site (each DaemonSet passes its own)")
    listen_port = int(probe_cfg.get("metrics", {}).get("listen", ":0").rsplit(":", 1)[1])
    sites = []
    for ds in by_kind.get("DaemonSet", []):
        name = ds["metadata"]["name"]
        spec = ds["spec"]["template"]["spec"]
        site = spec.get("nodeSelector", {}).get(PROBE_SITE_LABEL)
        sites.append(site)
        c.expect(site and ds["spec"]["selector"]["matchLabels"].get(PROBE_SITE_LABEL) == site
                 and ds["spec"]["template"]["metadata"]["labels"].get(PROBE_SITE_LABEL) == site,
                 f"{name}: nodeSelector, selector and pod label name the same site {site}")
        c.equal(list(spec.get("nodeSelector", {})), [PROBE_SITE_LABEL],
                f"{name}: placed by the site label only")
        c.expect("nodeName" not in spec and "affinity" not in spec, f"{name}: no node names")
        ctr = container_of(spec)
        env = {e["name"]: e for e in ctr.get("env", [])}
        args = ctr.get("args", [])
        c.equal(ctr.get("command"), ["vipd"], f"{name}: runs vipd")
        c.equal(args[:1], ["probe"], f"{name}: vipd probe")
        site_arg = args[args.index("--site") + 1] if "--site" in args else ""
        var = site_arg[2:-1] if site_arg.startswith("$(") else ""
        field = env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        c.equal(field, f"metadata.labels['{PROBE_SITE_LABEL}']",
                f"{name}: --site {site_arg} is the pod's own site label (downward API)")
        c.expect("spec.nodeName" not in json.dumps(ctr), f"{name}: nothing reads the node's name")
        c.equal([p.get("containerPort") for p in ctr.get("ports", [])], [listen_port],
                f"{name}: declares metrics.listen's port {listen_port}")
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mounts = {m["mountPath"]: volumes.get(m["name"], {}) for m in ctr.get("volumeMounts", [])}
        config_arg = args[args.index("--config") + 1] if "--config" in args else ""
        c.equal(mounts.get(os.path.dirname(config_arg), {}).get("configMap", {}).get("name"),
                cm["metadata"]["name"], f"{name}: the generated ConfigMap is where --config points")
        for t in probe_cfg.get("targets", []):
            c.expect(mounts.get(os.path.dirname(t["caFile"])) is not None,
                     f"{name}: target {t['name']}'s caFile {t['caFile']} is mounted")
        sc = ctr.get("securityContext", {})
        c.expect(sc.get("capabilities", {}).get("drop") == ["ALL"]
                 and not sc.get("capabilities", {}).get("add"),
                 f"{name}: no capability")
        c.equal(spec.get("automountServiceAccountToken"), False, f"{name}: no API token")
    c.equal(len(set(sites)), len(sites), f"one DaemonSet per site: {sites}")
    pm = by_kind.get("PodMonitor", [{}])[0]
    selector = pm.get("spec", {}).get("selector", {}).get("matchLabels", {})
    for ds in by_kind.get("DaemonSet", []):
        labels = ds["spec"]["template"]["metadata"]["labels"]
        c.expect(selector.items() <= labels.items(),
                 f"PodMonitor selects {ds['metadata']['name']}'s pods")
    if not os.access(VIPD, os.X_OK):
        c.expect(False, f"{VIPD} is built (set VIPD_BUILD_DIR)")
        return
    tmp = tempfile.mkdtemp(prefix="vipd-probe-manifests-")
    try:
        path = os.path.join(tmp, "probe.yaml")
        with open(path, "w") as f:
            f.write(cm["data"]["probe.yaml"])
        for site in sites:
            p = run([VIPD, "probe", "--validate", "--config", path, "--site", site])
            c.equal(p.returncode, 0, f"vipd probe --validate accepts probe.yaml as {site}: "
                    f"{(p.stdout + p.stderr).strip()}")
        p = run([VIPD, "probe", "--validate", "--config", path])
        c.expect(p.returncode == 1 and "site" in p.stderr,
                 f"without --site it is refused, naming the site: exit {p.returncode}: "
                 f"{p.stderr.strip()}")
    finally:
        shutil.rmtree(tmp)


def key(o: dict) -> tuple[str, str]:
    return (o.get("kind", ""), o.get("metadata", {}).get("name", ""))


# What manifests/kube holds (issue 41): kind -> name.
KUBE_OBJECTS = {
    ("CustomResourceDefinition", "vipdnodes.vipd.io"),
    ("ServiceAccount", "vipd"),
    ("ClusterRole", "vipd"),
    ("ClusterRoleBinding", "vipd"),
    ("ValidatingAdmissionPolicy", "vipdnodes.vipd.io-own-node"),
    ("ValidatingAdmissionPolicyBinding", "vipdnodes.vipd.io-own-node"),
}
SERVICE_ACCOUNT = "system:serviceaccount:kube-system:vipd"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


def conditions_in_code() -> list[str]:
    """The condition types kube/vipd_node.h writes (kCondition... = "...")."""
    with open(os.path.join(SOURCE_DIR, "kube", "vipd_node.h")) as f:
        return re.findall(r'kCondition\w+ = "(\w+)"', f.read())


def check_kube(c: Checks, objects: list[dict]) -> None:
    """manifests/kube: the VipdNode CRD, vipd's account and RBAC, and the admission policy that
    keeps each vipd to its own node's VipdNode."""
    by = {key(o): o for o in objects}
    c.equal(set(by), KUBE_OBJECTS, "manifests/kube builds the CRD, the account, its RBAC and the "
            "admission policy with its binding")
    for o in objects:
        if o["kind"] != "ServiceAccount":
            c.expect("namespace" not in o["metadata"],
                     f"{o['kind']} {o['metadata']['name']}: cluster-scoped, no namespace")
    crd = by.get(("CustomResourceDefinition", "vipdnodes.vipd.io"), {}).get("spec", {})
    c.equal((crd.get("group"), crd.get("scope"), crd.get("names", {}).get("kind"),
             crd.get("names", {}).get("plural")), ("vipd.io", "Cluster", "VipdNode", "vipdnodes"),
            "CRD: vipd.io VipdNode, cluster-scoped")
    versions = crd.get("versions", [{}])
    v = versions[0]
    c.equal((len(versions), v.get("name"), v.get("served"), v.get("storage"),
             v.get("subresources")), (1, "v1alpha1", True, True, {"status": {}}),
            "CRD: v1alpha1, served and stored, with the status subresource")
    c.equal([col["name"] for col in v.get("additionalPrinterColumns", [])],
            ["Announcing", "VIPs", "Fabric announcers", "Reason", "Age"], "CRD: printer columns")
    status = v.get("schema", {}).get("openAPIV3Schema", {}).get("properties", {}).get("status", {})
    c.equal(sorted(status.get("properties", {})),
            ["conditions", "peers", "updatedAt", "version", "vips"],
            "CRD: status holds what kube/vipd_node.h writes")
    cond = status.get("properties", {}).get("conditions", {}).get("items", {})
    c.equal(cond.get("properties", {}).get("type", {}).get("enum"), conditions_in_code(),
            "CRD: the condition types are kube/vipd_node.h's")
    vip = status.get("properties", {}).get("vips", {}).get("items", {}).get("properties", {})
    c.equal(sorted(vip), ["address", "announced", "fabricAnnouncers", "reason", "state"],
            "CRD: a VIP's fields")

    sa = by.get(("ServiceAccount", "vipd"), {})
    c.equal(sa.get("metadata", {}).get("namespace"), "kube-system",
            "ServiceAccount kube-system/vipd")
    rules = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(sorted(r["verbs"])))
                   for r in by.get(("ClusterRole", "vipd"), {}).get("rules", []))
    c.equal(rules, sorted([
        (("",), ("nodes",), ("get", "list", "watch")),
        (("vipd.io",), ("vipdnodes",), ("create", "get", "patch", "update")),
        (("vipd.io",), ("vipdnodes/status",), ("patch", "update")),
        (("",), ("events",), ("create", "patch")),
        (("events.k8s.io",), ("events",), ("create", "patch")),
    ]), "ClusterRole: read nodes, write VipdNodes and their status, post events; nothing else")
    binding = by.get(("ClusterRoleBinding", "vipd"), {})
    c.equal((binding.get("roleRef", {}).get("name"), binding.get("subjects")),
            ("vipd", [{"kind": "ServiceAccount", "name": "vipd", "namespace": "kube-system"}]),
            "ClusterRoleBinding: the role to kube-system/vipd")

    policy = by.get(("ValidatingAdmissionPolicy", "vipdnodes.vipd.io-own-node"), {}).get("spec", {})
    rules = policy.get("matchConstraints", {}).get("resourceRules", [])
    c.equal([(r.get("apiGroups"), sorted(r.get("operations", [])), sorted(r.get("resources", [])))
             for r in rules],
            [(["vipd.io"], ["CREATE", "UPDATE"], ["vipdnodes", "vipdnodes/status"])],
            "policy: every create and update of a VipdNode and its status")
    c.equal([m.get("expression") for m in policy.get("matchConditions", [])],
            [f'request.userInfo.username == "{SERVICE_ACCOUNT}"'],
            "policy: applies to vipd's service account")
    variables = {v.get("name"): " ".join(v.get("expression", "").split())
                 for v in policy.get("variables", [])}
    c.equal(variables.get("nodeNames"),
            f"has(request.userInfo.extra) && '{NODE_NAME_EXTRA}' in request.userInfo.extra ? "
            f"request.userInfo.extra['{NODE_NAME_EXTRA}'] : []",
            "policy: the token's node names, none when it carries no extra")
    expressions = [v.get("expression", "") for v in policy.get("validations", [])]
    c.equal(expressions, ["variables.nodeNames.size() == 1 && "
                          "variables.nodeNames[0] == object.metadata.name"],
            "policy: the object's name is the token's one node")
    c.equal(policy.get("failurePolicy"), "Fail", "policy: fails closed")
    pb = by.get(("ValidatingAdmissionPolicyBinding", "vipdnodes.vipd.io-own-node"),
                {}).get("spec", {})
    c.equal((pb.get("policyName"), pb.get("validationActions")),
            ("vipdnodes.vipd.io-own-node", ["Deny"]), "policy binding: denies")


def test(c: Checks) -> None:
    p = run([kubectl(), "version", "--client"])
    print(p.stdout.strip() or p.stderr.strip())
    objects = kustomize(c, MANIFESTS)
    base = kustomize(c, os.path.join(MANIFESTS, "daemonset"))
    kube = kustomize(c, os.path.join(MANIFESTS, "kube"))
    c.expect(sorted(base + kube, key=key) == sorted(objects, key=key),
             "manifests/ builds the objects of its daemonset/ and kube/ bases, nothing else")
    selector = check_daemonset(c, base)
    check_kube(c, kube)
    check_static_pod(c, selector)
    check_versions(c, objects)
    check_distros(c, objects)
    check_probe(c)


if __name__ == "__main__":
    main(test)
