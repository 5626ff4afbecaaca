#!/usr/bin/env python3
"""monitoring: a real Prometheus scraping real vipd nodes, with the rules and the dashboard of
manifests/monitoring.

Lab: BIRD fabric (AS 65000, BFD 300/300/3) and two vipd nodes (AS 65001, 65002) as the DaemonSet
would run them on hostNetwork: metrics.listen on the node's address (192.0.2.1N:9472), the
probes on metrics.healthListen 127.0.0.1:9474, BFD on, and a tcp health gate against that
health listener. Prometheus 2 (Debian's `prometheus`, started by the test in the fabric
namespace with a temporary data directory, scrape and rule interval 1 s) scrapes both nodes and
loads plain_rules.py's rule file.

Asserts:
- healthListen separates the endpoints: on 127.0.0.1:9474 /healthz and /readyz answer and
  /metrics is 404 naming metrics.listen; on the node's address /metrics answers and /healthz,
  /readyz are 404 naming metrics.healthListen; status `listeners` and vipd_listener_* have a
  `health` listener;
- `promtool check metrics` accepts a live scrape of each node (no errors, no lint findings);
- Prometheus reports both targets up, and every rule evaluates without error;
- the recording rules see both nodes announcing both VIPs (sum 2, expected 2) and no alert is
  pending or firing once the lab has settled;
- every dashboard query, with $instance and $vip as .+ and $__rate_interval as 1m, returns at
  least one series (a BIRD `restart` of one session first, so NOTIFICATION counters exist);
- a SIGHUP with a broken file on node 2: vipd_config_last_reload_successful 0, the failure
  counted, status config.lastReloadError set, and Prometheus has VipdConfigReloadFailed pending
  for node 2 only; the file restored and SIGHUP again: 1, the success counted, the alert gone.

Exit 77 outside CI when not root or BIRD/Prometheus/promtool are missing; CI=true fails then.
"""
import json
import os
import re
import signal
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "manifests", "monitoring"))
import lab  # noqa: E402

HEALTH_LISTEN = "127.0.0.1:9474"
METRICS_PORT = 9472
PROMETHEUS = "127.0.0.1:19090"  # in the fabric namespace
TIMERS = lab.BfdTimers(300, 300, 3)
SUBSTITUTIONS = {"instance": ".+", "vip": ".+", "__rate_interval": "1m"}


def edit(config: dict, node: lab.Node) -> None:
    config["metrics"] = {"listen": f"{node.v4}:{METRICS_PORT}", "healthListen": HEALTH_LISTEN}
    config["health"] = {"type": "tcp", "address": HEALTH_LISTEN, "interval": "200ms",
                        "timeout": "200ms"}
    config["peers"][0]["bfd"] = TIMERS.vipd()


class Prometheus:
    """prometheus in ns with a config of our own and a temporary TSDB; queried over HTTP from
    inside ns."""

    def __init__(self, L: lab.Lab, ns: lab.Namespace, targets: list[str], rules: str):
        self.ns = ns
        conf = L.path("prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files: [{json.dumps(rules)}]\n"
                    "scrape_configs:\n  - job_name: vipd\n    static_configs:\n"
                    f"      - targets: {json.dumps(targets)}\n")
        lab.run(["promtool", "check", "config", conf])
        self.proc = L.start(ns, "prometheus", [
            "prometheus", f"--config.file={conf}", f"--storage.tsdb.path={L.path('tsdb')}",
            f"--web.listen-address={PROMETHEUS}", "--log.level=warn"])
        lab.wait_until(lambda: self.ready(), 30, 0.2, "Prometheus to be ready")

    def ready(self) -> bool:
        lab.check(self.proc.alive(), "prometheus exited; see its log")
        try:
            return lab.http_get(self.ns, f"http://{PROMETHEUS}/-/ready", 2)[0] == 200
        except (RuntimeError, ValueError):
            return False

    def api(self, path: str, **params: str) -> dict:
        url = f"http://{PROMETHEUS}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        code, body = lab.http_get(self.ns, url, 5)
        answer = json.loads(body)
        lab.check(code == 200 and answer.get("status") == "success",
                  f"GET {url}: {code} {body[:300]}")
        return answer["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]


def substitute(expr: str) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: SUBSTITUTIONS[m.group(1)], expr)


def check_health_listen(vipd: lab.Vipd, node: lab.Node) -> None:
    ns = node.ns
    code, body = lab.http_get(ns, f"http://{HEALTH_LISTEN}/healthz")
    lab.check((code, body) == (200, "ok\n"), f"health listener /healthz: {code} {body!r}")
    code, body = lab.http_get(ns, f"http://{HEALTH_LISTEN}/readyz")
    lab.check(code in (200, 503), f"health listener /readyz: {code} {body!r}")
    code, body = lab.http_get(ns, f"http://{HEALTH_LISTEN}/metrics")
    lab.check(code == 404 and f"{node.v4}:{METRICS_PORT} (metrics.listen)" in body,
              f"health listener /metrics should be 404 naming metrics.listen: {code} {body!r}")
    metrics = f"http://{node.v4}:{METRICS_PORT}"
    code, body = lab.http_get(ns, f"{metrics}/metrics")
    lab.check(code == 200 and "vipd_build_info" in body, f"/metrics: {code} {body[:200]!r}")
    for path in ("/healthz", "/readyz"):
        code, body = lab.http_get(ns, f"{metrics}{path}")
        lab.check(code == 404 and f"{HEALTH_LISTEN} (metrics.healthListen)" in body,
                  f"metrics listener {path} should be 404 naming healthListen: {code} {body!r}")
    listeners = vipd.status()["listeners"]
    lab.check("health" in listeners and "metrics" in listeners, f"status listeners {listeners}")
    lab.check(vipd.metric("vipd_listener_connection_limit", listener="health") is not None,
              "vipd_listener_connection_limit{listener=\"health\"} missing")
    lab.log(f"node {node.index}: probes only on {HEALTH_LISTEN}, /metrics only on "
            f"{node.v4}:{METRICS_PORT}; status listeners {sorted(listeners)}")


def check_promtool_metrics(vipd: lab.Vipd, node: lab.Node) -> None:
    code, body = lab.http_get(node.ns, f"http://{node.v4}:{METRICS_PORT}/metrics")
    lab.check(code == 200, f"/metrics answered {code}")
    p = lab.run(["promtool", "check", "metrics"], check=False, input=body)
    out = (p.stdout + p.stderr).strip()
    lab.check(p.returncode == 0 and out == "",
              f"promtool check metrics on node {node.index}'s scrape: exit {p.returncode}\n{out}")
    families = len(re.findall(r"^# TYPE ", body, re.M))
    lab.log(f"node {node.index}: promtool check metrics: clean ({families} families, "
            f"{len(body)} bytes)")


def wait_scrapes(prom: Prometheus, targets: list[str], scrapes: int = 3) -> None:
    def enough():
        result = prom.query('count_over_time(up{job="vipd"}[1m])')
        have = {r["metric"]["instance"]: float(r["value"][1]) for r in result}
        up = {r["metric"]["instance"]: r["value"][1] for r in prom.query('up{job="vipd"}')}
        return all(have.get(t, 0) >= scrapes and up.get(t) == "1" for t in targets)
    lab.wait_until(enough, 30, 0.5, lambda: f"{scrapes} successful scrapes of {targets} "
                   f"(targets: {prom.api('targets')['activeTargets']})")


def check_rules_healthy(prom: Prometheus) -> None:
    groups = prom.api("rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    bad = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
    lab.check(rules and not bad, f"rules not healthy: {bad}")
    lab.log(f"Prometheus: {len(rules)} rules in {len(groups)} groups, all health ok")


def no_alerts(prom: Prometheus) -> bool:
    return not prom.api("alerts")["alerts"]


def check_dashboard(prom: Prometheus) -> None:
    from test_rules import dashboard_queries  # noqa: E402  (tests/monitoring)
    with open(os.path.join(ROOT, "manifests", "monitoring", "vipd-dashboard.json")) as f:
        queries = dashboard_queries(json.load(f))
    for title, expr in queries:
        q = substitute(expr)
        result = lab.wait_until(lambda q=q: prom.query(q), 20, 0.5,
                                lambda q=q, t=title: f"dashboard panel {t!r}: {q} to return data")
        lab.log(f"dashboard {title!r}: {len(result)} series  <- {q}")
    lab.log(f"every dashboard query ({len(queries)}) returned data")


def reload_failure(prom: Prometheus, vipd: lab.Vipd, node: lab.Node) -> None:
    instance = f"{node.v4}:{METRICS_PORT}"
    with open(vipd.conf) as f:
        good = f.read()
    with open(vipd.conf, "w") as f:
        f.write(good.replace("localAsn:", "localAsn: [not, a, number]\nbroken:", 1))
    vipd.proc.signal(signal.SIGHUP)
    lab.wait_until(lambda: vipd.metric("vipd_config_last_reload_successful") == 0, 10, 0.1,
                   "vipd_config_last_reload_successful 0 after a bad SIGHUP")
    status = vipd.status()["config"]
    lab.check(status["reloadFailures"] == 1 and status.get("lastReloadError"),
              f"status config after a bad reload: {status}")
    lab.check(vipd.metric("vipd_config_reloads_total", result="failure") == 1,
              "vipd_config_reloads_total{result=\"failure\"} should be 1")

    def pending():
        alerts = [a for a in prom.api("alerts")["alerts"]
                  if a["labels"]["alertname"] == "VipdConfigReloadFailed"]
        return alerts if alerts and all(a["labels"]["instance"] == instance for a in alerts) \
            else None
    alerts = lab.wait_until(pending, 20, 0.5, "VipdConfigReloadFailed pending in Prometheus")
    lab.log(f"bad reload on node {node.index}: {status['lastReloadError']!r}; Prometheus: "
            f"{[(a['labels']['alertname'], a['labels']['instance'], a['state']) for a in alerts]}")
    with open(vipd.conf, "w") as f:
        f.write(good)
    vipd.proc.signal(signal.SIGHUP)
    lab.wait_until(lambda: vipd.metric("vipd_config_last_reload_successful") == 1, 10, 0.1,
                   "vipd_config_last_reload_successful 1 after a good SIGHUP")
    lab.check(vipd.metric("vipd_config_reloads_total", result="success") == 1,
              "vipd_config_reloads_total{result=\"success\"} should be 1")
    lab.wait_until(lambda: no_alerts(prom), 20, 0.5,
                   lambda: f"no alert after the good reload: {prom.api('alerts')['alerts']}")
    lab.log("good reload: vipd_config_last_reload_successful 1, the alert gone")


def test() -> None:
    from plain_rules import plain_rules  # noqa: E402  (manifests/monitoring)
    with lab.Lab("monitoring") as L:
        e = lab.build_ecmp(L, ["vipd", "vipd"], vipd_edit=edit, bird_bfd=TIMERS)
        nodes, vipds = e.topo.nodes, e.speakers
        for vipd, node in zip(vipds, nodes):
            check_health_listen(vipd, node)
            check_promtool_metrics(vipd, node)
        # A NOTIFICATION for the dashboard's panel: BIRD resets node 1's session (Cease 6/4).
        e.bird.birdc("restart", e.bird.neighbor(nodes[0].v4).name)
        lab.wait_until(lambda: vipds[0].metric("vipd_notifications_received_total") is not None,
                       15, 0.2, "node 1 to count the NOTIFICATION BIRD sent")
        lab.wait_established(e.bird, [n.v4 for n in nodes], 30)
        lab.wait_until(lambda: vipds[0].metric("vipd_bfd_state", state="Up") == 1, 30, 0.2,
                       "node 1's BFD Up again")
        rules = L.path("vipd-rules.yaml")
        with open(rules, "w") as f:
            f.write(plain_rules())
        targets = [f"{n.v4}:{METRICS_PORT}" for n in nodes]
        prom = Prometheus(L, e.topo.fabric, targets, rules)
        wait_scrapes(prom, targets)
        check_rules_healthy(prom)
        for rule in ("vipd:vip_announcing_nodes:sum", "vipd:vip_announcing_nodes:expected"):
            got = lab.wait_until(
                lambda r=rule: (lambda v: v if len(v) == 2 and all(x == "2" for x in v.values())
                                else None)({s["metric"]["vip"]: s["value"][1]
                                            for s in prom.query(r)}),
                15, 0.5, lambda r=rule: f"{r} 2 for both VIPs: {prom.query(r)}")
            lab.log(f"{rule}: {got}")
        lab.wait_until(lambda: no_alerts(prom), 20, 0.5,
                       lambda: f"no alert pending or firing: {prom.api('alerts')['alerts']}")
        check_dashboard(prom)
        check_promtool_metrics(vipds[0], nodes[0])  # after the reset: notification counters
        reload_failure(prom, vipds[1], nodes[1])
        check_rules_healthy(prom)


if __name__ == "__main__":
    lab.main(test, binaries=["bird", "birdc", "prometheus", "promtool"], vipd=True)
