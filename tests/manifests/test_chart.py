#!/usr/bin/env python3
"""charts/vipd against the kustomization (issue 42 part 2): the chart renders the same objects
as `kubectl kustomize manifests/` (and manifests/monitoring behind monitoring.enabled), compared
object by object, so the two cannot drift; and its values do what they say.

Uses the pinned helm and kubectl (`scripts/dev.sh tools`; it waits for their build as the cluster
suite does). Asserts:
- `helm lint` passes; `helm template` with the defaults gives exactly the kustomization's objects
  (kind, namespace, name, every field), the ConfigMap's name compared without its content hash
  (each tool hashes its own way: a config change is a new name, and so a rollout, in both) and
  its vipd.yaml compared as YAML (the chart writes it from the parsed file);
- with monitoring.enabled, also the PodMonitor, the PrometheusRule and the dashboard ConfigMap of
  manifests/monitoring;
- values: image.tag and image.digest name the image (a digest wins), config merges over the
  shipped vipd.yaml (a changed config is a new ConfigMap name and the DaemonSet follows it),
  node.caFile moves the CA's host path, resources replace the shipped ones.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import cluster  # noqa: E402  (tools(): the pinned helm and kubectl)
import lab  # noqa: E402

SOURCE = cluster.SOURCE_DIR
CHART = os.path.join(SOURCE, "charts", "vipd")
HASHED = re.compile(r"^(vipd-config)-[a-z0-9]{10}$")


def run(argv: list[str]) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stderr}")
    return p.stdout


def docs(text: str) -> list[dict]:
    yaml = lab.yaml_module()
    return [d for d in yaml.safe_load_all(text) if d]


def normalize(objects: list[dict]) -> dict:
    """{(kind, namespace, name): object} with the ConfigMap's hash suffix dropped (in its name and
    in the DaemonSet's reference) and its vipd.yaml parsed."""
    yaml = lab.yaml_module()
    out = {}
    for o in json.loads(json.dumps(objects)):
        meta = o["metadata"]
        meta["name"] = HASHED.sub(r"\1", meta["name"])
        if o["kind"] == "ConfigMap" and "vipd.yaml" in o.get("data", {}):
            o["data"]["vipd.yaml"] = yaml.safe_load(o["data"]["vipd.yaml"])
        if o["kind"] == "DaemonSet":
            for v in o["spec"]["template"]["spec"]["volumes"]:
                if "configMap" in v:
                    v["configMap"]["name"] = HASHED.sub(r"\1", v["configMap"]["name"])
        out[(o["kind"], meta.get("namespace", ""), meta["name"])] = o
    return out


def diff(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b))
                for d in (diff(a.get(k), b.get(k), f"{path}.{k}") if k in a and k in b
                          else [f"{path}.{k}: only in {'helm' if k in a else 'kustomize'}"])]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: helm {a!r} != kustomize {b!r}"]


def test() -> None:
    tools = cluster.tools()
    helm, kubectl = os.path.join(tools, "helm"), os.path.join(tools, "kubectl")

    def template(*args: str) -> list[dict]:
        return docs(run([helm, "template", "vipd", CHART, *args]))

    def kustomize(path: str) -> list[dict]:
        return docs(run([kubectl, "kustomize", os.path.join(SOURCE, path)]))

    lint = run([helm, "lint", CHART])
    lab.check("0 chart(s) failed" in lint, f"helm lint: {lint}")

    for what, chart, kust in [
            ("defaults", template(), kustomize("manifests")),
            ("monitoring.enabled", template("--set", "monitoring.enabled=true"),
             kustomize("manifests") + kustomize("manifests/monitoring"))]:
        h, k = normalize(chart), normalize(kust)
        lab.check(sorted(h) == sorted(k), f"{what}: the same objects: helm {sorted(h)} "
                  f"kustomize {sorted(k)}")
        problems = [d for key in sorted(k) for d in diff(h[key], k[key], f"{key[0]}/{key[2]}")]
        lab.check(not problems, f"{what}: every field the same: {problems[:20]}")
        print(f"chart: {what}: {len(h)} objects, each equal to kustomize's "
              f"({', '.join(f'{kind}/{name}' for kind, _, name in sorted(h))})")

    def daemonset(objects: list[dict]) -> dict:
        return [o for o in objects if o["kind"] == "DaemonSet"][0]

    def config_map_name(objects: list[dict]) -> str:
        return [o for o in objects if o["kind"] == "ConfigMap"][0]["metadata"]["name"]

    base = template()
    ds = daemonset(base)
    lab.check(ds["spec"]["template"]["spec"]["containers"][0]["image"] == "localhost/vipd:0.2.0",
              "the default image is the chart's appVersion")
    tagged = template("--set", "image.repository=registry.example/vipd", "--set",
                      "image.tag=0.2.1")
    lab.check(daemonset(tagged)["spec"]["template"]["spec"]["containers"][0]["image"] ==
              "registry.example/vipd:0.2.1", "image.repository and image.tag")
    digest = "sha256:" + "ab" * 32
    pinned = template("--set", "image.repository=registry.example/vipd", "--set",
                      f"image.digest={digest}", "--set", "image.tag=ignored")
    lab.check(daemonset(pinned)["spec"]["template"]["spec"]["containers"][0]["image"] ==
              f"registry.example/vipd@{digest}", "image.digest pins the image by content")
    changed = template("--set", "config.guard.expectedAnnouncers=5", "--set",
                       "node.caFile=/var/lib/rancher/rke2/server/tls/server-ca.crt", "--set",
                       "resources.limits.memory=256Mi")
    yaml = lab.yaml_module()
    cm = [o for o in changed if o["kind"] == "ConfigMap"][0]
    config = yaml.safe_load(cm["data"]["vipd.yaml"])
    lab.check(config["guard"] == {"expectedAnnouncers": 5} and config["mode"] == "daemonset",
              f"config merges over the shipped vipd.yaml: {config}")
    lab.check(config_map_name(changed) != config_map_name(base),
              "a changed config is a new ConfigMap name (a rollout)")
    spec = daemonset(changed)["spec"]["template"]["spec"]
    names = {v["name"]: v for v in spec["volumes"]}
    lab.check(names["config"]["configMap"]["name"] == config_map_name(changed),
              "the DaemonSet mounts the new ConfigMap")
    lab.check(names["kubernetes-ca"]["hostPath"]["path"] ==
              "/var/lib/rancher/rke2/server/tls/server-ca.crt", "node.caFile")
    lab.check(spec["containers"][0]["resources"]["limits"]["memory"] == "256Mi", "resources")


if __name__ == "__main__":
    lab.main(test, binaries=[])
