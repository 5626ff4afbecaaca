#!/usr/bin/env python3
"""monitoring: the manifests in manifests/monitoring, without a cluster or root.

- plain_rules.py turns prometheusrule.yaml into a plain rule file that `promtool check rules`
  accepts;
- `promtool test rules` passes tests/monitoring/rules_test.yaml against it, and that file has,
  for every alert in the PrometheusRule, at least one case where it fires and one where it does
  not;
- the return-path alerts are there (issue 19 gave them their metrics);
- the dashboard is JSON with a unique id per panel, every target has an expression, and every
  $variable it uses is one of its own template variables or Grafana's $__rate_interval;
- the probe matrix's dashboard (manifests/probe/dashboard) passes the same checks, and every
  vipd_ metric its queries name is one `vipd probe` defines (daemon/probe/metrics.cc; a
  histogram's _bucket, _count and _sum included); tests/e2e/test_probe_matrix.py checks the same
  names against a live scrape;
- with kubectl: `kubectl kustomize manifests/monitoring` prints the PodMonitor, the
  PrometheusRule and the dashboard's ConfigMap, and the PodMonitor selects exactly the pods of
  the DaemonSet in `kubectl kustomize manifests/daemonset` by their labels and names a
  container port of theirs.

Exit 77 outside CI when promtool, kubectl or PyYAML is missing; with CI=true that fails.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "e2e"))
import lab  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MONITORING = os.path.join(ROOT, "manifests", "monitoring")
RULES_TEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules_test.yaml")


def alerts_of(rule: dict) -> list[str]:
    return [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]


def check_rules(yaml) -> None:
    sys.path.insert(0, MONITORING)
    from plain_rules import plain_rules  # noqa: E402
    with open(os.path.join(MONITORING, "prometheusrule.yaml")) as f:
        text = f.read()
    rule = yaml.safe_load(text)
    alerts = alerts_of(rule)
    lab.log(f"alerts: {', '.join(alerts)}")
    lab.check(len(alerts) == len(set(alerts)), f"duplicate alert names: {alerts}")
    for name in ("VipdReturnPathBroken", "VipdReturnPathCheckUnavailable"):
        lab.check(name in alerts, f"the return-path alert {name} is missing")
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "vipd-rules.yaml")
        with open(rules, "w") as f:
            f.write(plain_rules())
        p = lab.run(["promtool", "check", "rules", rules], check=False)
        lab.log(f"promtool check rules: {(p.stdout + p.stderr).strip()}")
        lab.check(p.returncode == 0, f"promtool check rules failed:\n{p.stdout}{p.stderr}")
        shutil.copy(RULES_TEST, tmp)
        p = lab.run(["promtool", "test", "rules", os.path.join(tmp, "rules_test.yaml")],
                    check=False, timeout=60)
        lab.log(f"promtool test rules: {(p.stdout + p.stderr).strip()}")
        lab.check(p.returncode == 0, f"promtool test rules failed:\n{p.stdout}{p.stderr}")

    with open(RULES_TEST) as f:
        tests = yaml.safe_load(f)["tests"]
    fires, quiet = set(), set()
    for t in tests:
        for case in t.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
    for a in alerts:
        lab.check(a in fires, f"rules_test.yaml has no case where {a} fires")
        lab.check(a in quiet, f"rules_test.yaml has no case where {a} stays quiet")
    lab.log(f"every alert ({len(alerts)}) fires and stays quiet in rules_test.yaml "
            f"({len(tests)} test groups)")


def dashboard_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, expression) for every target of every panel, rows included."""
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                out.append((p.get("title", "?"), t.get("expr", "")))
    walk(dashboard["panels"])
    return out


PROBE_DASHBOARD = os.path.join(ROOT, "manifests", "probe", "dashboard",
                               "vipd-probe-dashboard.json")
PROBE_METRICS_SOURCE = os.path.join(ROOT, "daemon", "probe", "metrics.cc")


def probe_metric_names() -> set[str]:
    """The metric names daemon/probe/metrics.cc registers, with a histogram's series."""
    with open(PROBE_METRICS_SOURCE) as f:
        text = f.read()
    # prometheus::BuildGauge().Name("vipd_..."), BuildCounter(), BuildHistogram() (prometheus-cpp)
    names = set(re.findall(r'Build(?:Gauge|Counter)\(\)\s*\.Name\(\s*"(vipd_\w+)"', text))
    for h in re.findall(r'BuildHistogram\(\)\s*\.Name\(\s*"(vipd_\w+)"', text):
        names |= {h + "_bucket", h + "_count", h + "_sum"}
    return names


def check_probe_dashboard() -> None:
    check_dashboard(PROBE_DASHBOARD)
    with open(PROBE_DASHBOARD) as f:
        dashboard = json.load(f)
    defined = probe_metric_names()
    lab.check(len(defined) >= 5, f"metric names found in {PROBE_METRICS_SOURCE}: {defined}")
    used = set()
    for title, expr in dashboard_queries(dashboard):
        for name in re.findall(r"\bvipd_\w+", expr):
            used.add(name)
            lab.check(name in defined, f"probe dashboard panel {title!r} queries {name}, which "
                      f"vipd probe does not export ({sorted(defined)})")
    for v in dashboard["templating"]["list"]:
        for name in re.findall(r"\bvipd_\w+", v.get("definition", "")):
            lab.check(name in defined, f"probe dashboard variable {v['name']} reads {name}")
    lab.log(f"probe dashboard: queries name {sorted(used)}, all exported by vipd probe")


def check_dashboard(path: str = os.path.join(MONITORING, "vipd-dashboard.json")) -> None:
    with open(path) as f:
        dashboard = json.load(f)
    ids = []

    def walk(panels):
        for p in panels:
            ids.append(p["id"])
            walk(p.get("panels", []))
    walk(dashboard["panels"])
    lab.check(len(ids) == len(set(ids)), f"panel ids repeat: {ids}")
    names = {v["name"] for v in dashboard["templating"]["list"]} | {"__rate_interval"}
    queries = dashboard_queries(dashboard)
    for title, expr in queries:
        lab.check(expr.strip() != "", f"panel {title!r} has a target without an expression")
        for var in re.findall(r"\$\{?(\w+)", expr):
            lab.check(var in names, f"panel {title!r} uses ${var}, which is not a variable")
    lab.log(f"dashboard: {len(ids)} panels, {len(queries)} queries, variables {sorted(names)}")


def check_kustomize(yaml) -> None:
    if not shutil.which("kubectl"):
        if lab.in_ci():
            raise AssertionError("CI=true and kubectl is missing")
        lab.log("kubectl missing: kustomize checks skipped")
        return

    def build(d):
        p = lab.run(["kubectl", "kustomize", os.path.join(ROOT, "manifests", d)], timeout=60)
        return list(yaml.safe_load_all(p.stdout))
    objects = {o["kind"]: o for o in build("monitoring")}
    lab.check(set(objects) == {"PodMonitor", "PrometheusRule", "ConfigMap"},
              f"manifests/monitoring builds {sorted(objects)}")
    cm = objects["ConfigMap"]
    lab.check(cm["metadata"]["labels"].get("grafana_dashboard") == "1",
              f"dashboard ConfigMap labels {cm['metadata']['labels']}")
    json.loads(cm["data"]["vipd-dashboard.json"])
    ds = [o for o in build("daemonset") if o["kind"] == "DaemonSet"][0]
    pm = objects["PodMonitor"]
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    selector = pm["spec"]["selector"]["matchLabels"]
    lab.check(all(pod_labels.get(k) == v for k, v in selector.items()),
              f"PodMonitor selector {selector} does not match the DaemonSet's pods {pod_labels}")
    lab.check(selector.get("app.kubernetes.io/component") == "daemonset",
              "the PodMonitor must not select the static pod (component: bootstrap)")
    namespaces = pm["spec"]["namespaceSelector"]["matchNames"]
    lab.check(ds["metadata"]["namespace"] in namespaces,
              f"PodMonitor namespaces {namespaces}, DaemonSet in {ds['metadata']['namespace']}")
    ports = [p for c in ds["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])]
    lab.check(not ports, f"the DaemonSet declares no container port (on a hostNetwork pod it is "
              f"a host port, and a rollout's surge pod could not be scheduled): {ports}")
    addresses = []
    for endpoint in pm["spec"]["podMetricsEndpoints"]:
        address = [r for r in endpoint.get("relabelings", [])
                   if r.get("targetLabel") == "__address__"]
        lab.check(len(address) == 1 and address[0]["sourceLabels"] == [
                      "__meta_kubernetes_pod_ip"] and address[0]["replacement"] == "$1:9472",
                  f"the PodMonitor scrapes the pod's IP at metrics.listen's port 9472: {address}")
        addresses.append(address[0]["replacement"])
    lab.log(f"kustomize: PodMonitor selects {selector} in {namespaces} at {addresses}")


def test() -> None:
    yaml = lab.yaml_module()
    check_rules(yaml)
    check_dashboard()
    check_probe_dashboard()
    check_kustomize(yaml)


if __name__ == "__main__":
    lab.main(test, binaries=["promtool"], root=False)
