#!/usr/bin/env python3
"""e2e: the probe matrix's DaemonSet (manifests/probe) as users run it: built by `kubectl
kustomize` from an overlay that only pins the image, points the probe's ConfigMap at this lab's
front-ends and adds the kube-root-ca.crt ConfigMap every namespace has, and played by podman
(pods.for_podman's documented changes only) on a lab node, in a pod network of its own
(198.51.100.128/25: the pod is not hostNetwork).

Front-ends in the fabric namespace: a stand-in apiserver (192.0.2.101:6443, /readyz "ok", a
kubeadm-shaped certificate from the cluster CA) and a proxy answering an HTML 502 page
(192.0.2.103:6443). Asserts: the container runs as the manifest says (uid 65534, no
capabilities, read-only root, the config and CA volumes read-only), vipd probe takes its site from
the pod's label (site-a), the apiserver's probes succeed and the proxy's fail as not_apiserver in
the pod's /metrics, and the liveness probe passes as a kubelet would run it against the pod's IP.
"""
import os

import lab
import pods

SITE = "site-a"
DS_NAME = f"vipd-probe-{SITE}"
CONTAINER = f"{DS_NAME}-probe"
POD_SUBNET = "198.51.100.128/25"
API, PROXY = "192.0.2.101", "192.0.2.103"
UP_S = 60


def probe_docs(L: lab.Lab, version: str, ca_pem: str) -> list[dict]:
    yaml = pods.yaml_module()
    overlay = L.path("probe-overlay")
    os.makedirs(overlay)
    config = {"apiVersion": "vipd.io/v1alpha1", "kind": "ProbeConfiguration",
              "interval": "1s", "timeout": "500ms",
              "targets": [{"name": "apiserver", "url": f"https://{API}:6443/readyz",
                           "caFile": "/etc/vipd-probe/ca/ca.crt"},
                          {"name": "proxy", "url": f"https://{PROXY}:6443/readyz",
                           "caFile": "/etc/vipd-probe/ca/ca.crt"}],
              "metrics": {"listen": "0.0.0.0:9474"}}
    with open(os.path.join(overlay, "probe.yaml"), "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "bases": [os.path.relpath(os.path.join(pods.SOURCE_DIR, "manifests", "probe"), overlay)],
        "images": [{"name": "localhost/vipd", "newTag": version}],
        "configMapGenerator": [{"name": "vipd-probe-config", "namespace": "kube-system",
                                "behavior": "replace", "files": ["probe.yaml"]}],
    }
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        yaml.safe_dump(kustomization, f, sort_keys=False)
    docs = list(yaml.safe_load_all(lab.run(["kubectl", "kustomize", overlay], timeout=60).stdout))
    daemonsets = [d for d in docs if d["kind"] == "DaemonSet"]
    lab.check(sorted(d["metadata"]["name"] for d in daemonsets)
              == ["vipd-probe-site-a", "vipd-probe-site-b"], "one DaemonSet per site")
    config_maps = [d for d in docs if d["kind"] == "ConfigMap"
                   and d["metadata"]["name"].startswith("vipd-probe-config")]
    lab.check(len(config_maps) == 1, "the probe's ConfigMap")
    root_ca = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "kube-root-ca.crt", "namespace": "kube-system"},
               "data": {"ca.crt": ca_pem}}
    # This node is site-a's: the DaemonSet whose nodeSelector its label would match.
    return config_maps + [root_ca] + [d for d in daemonsets if d["metadata"]["name"] == DS_NAME]


def test() -> None:
    with lab.Lab("pod-probe") as L:
        version = lab.run([lab.vipd_binary(), "--version"]).stdout.split()[-1]
        ref, build_s, _ = pods.image()
        lab.check(ref == f"localhost/vipd:{version}",
                  f"the image is this build's version: {ref} vs vipd {version}")
        lab.log(f"image {ref} ready in {build_s:.1f}s")
        topo = L.fabric_with_nodes(1)
        node = topo.nodes[0]
        ca = lab.make_ca(L, "cluster-ca")
        cert = lab.make_server_cert(L, ca, "apiserver")
        for addr, name, mode in ((API, "apiserver", "ok"), (PROXY, "proxy", "proxy502")):
            topo.fabric.add_address(topo.fabric_if, f"{addr}/24")
            lab.FakeApiserver(L, topo.fabric, cert, mode=mode, addr=addr, name=name)
        host = pods.NodeHost(L, node)
        podman = pods.Podman(L, host)
        podman.load_from_machine(ref)
        podman.run("network", "create", "--subnet", POD_SUBNET, "probe-net")
        with open(ca[0]) as f:
            docs = probe_docs(L, version, f.read())
        played, probes = [], {}
        for doc in docs:
            if doc["kind"] == "DaemonSet":
                doc, probes = pods.for_podman(doc, {"VIPD_PROBE_SITE": SITE})
            played.append(doc)
        try:
            podman.play("probe", played, "--network", "probe-net")
            spec = next(d for d in played if d["kind"] == "Pod")["spec"]
            info = pods.check_container(podman, CONTAINER, spec)
            status = lab.proc_status(info["State"]["Pid"])
            lab.check(status["Uid"].split()[:2] == ["65534", "65534"],
                      f"vipd probe runs as uid 65534: {status['Uid']}")
            pod_ip = info["NetworkSettings"]["Networks"]["probe-net"]["IPAddress"]
            lab.log(f"pod {DS_NAME} at {pod_ip}")

            def metric(name: str, **labels: str) -> float:
                code, text = lab.http_get(node.ns, f"http://{pod_ip}:9474/metrics")
                lab.check(code == 200, f"/metrics answers: {code}")
                return sum(v for n, ls, v in lab.parse_prometheus(text)
                           if n == name and all(ls.get(k) == w for k, w in labels.items()))

            lab.wait_until(lambda: metric("vipd_probe_successes_total", site=SITE,
                                          target="apiserver") >= 2
                           and metric("vipd_probe_failures_total", site=SITE, target="proxy",
                                      reason="not_apiserver") >= 2, UP_S, 0.5,
                           lambda: f"the pod's probes: {podman.logs(CONTAINER)[-2000:]}")
            ok = metric("vipd_probe_successes_total", site=SITE, target="apiserver")
            bad = metric("vipd_probe_failures_total", site=SITE, target="proxy")
            lab.check(metric("vipd_probe_successes_total", site=SITE, target="proxy") == 0,
                      "the proxy's page never passes for an apiserver")
            for what, p in probes.items():
                p = dict(p, httpGet=dict(p["httpGet"], host=pod_ip))
                passed, detail = pods.probe(node.ns, p)
                lab.check(passed, f"{what}: {detail}")
                lab.log(f"probe {what}: {detail}")
            print(f"probe DaemonSet under podman: site {SITE} from the pod label, apiserver "
                  f"{ok:.0f} successes, proxy {bad:.0f} failures (not_apiserver), as uid 65534 "
                  f"with no capabilities", flush=True)
        except BaseException:
            print(f"----- podman logs {CONTAINER} -----\n{podman.logs(CONTAINER)[-5000:]}")
            raise


if __name__ == "__main__":
    pods.main(test, ["openssl", "kubectl"])
