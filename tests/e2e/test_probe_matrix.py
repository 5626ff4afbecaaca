#!/usr/bin/env python3
"""e2e: the probe matrix (issue 19). Three API front-ends in the fabric namespace, each on an
address of its own on br0, each with a certificate from the cluster CA shaped like kubeadm's
(DNS kubernetes, ..., and its address):
  apiserver-a  192.0.2.101:6443  /readyz  answers 200 "ok"           (expect readyz)
  apiserver-b  api-b.probe.test  /version answers JSON with gitVersion (expect version), by
                                 name: 192.0.2.102 in each site's /etc/hosts (ip netns exec
                                 mounts /etc/netns/<ns>/hosts there); serverName kubernetes
  proxy        192.0.2.103:6443  answers a proxy's HTML 502 page       (expect readyz)
Two sites, two lab namespaces (n1 site-a at 192.0.2.11, n2 site-b at 192.0.2.12), each running
`vipd probe` (interval 1s, timeout 500ms; the site from --site in one and from the file in the
other), /metrics and /probe.json on its own address.

Asserts:
- `vipd probe --validate` accepts both configs;
- per (site, target): vipd_probe_successes_total grows for both apiservers, never for the proxy;
  the proxy's failures are all reason not_apiserver (every other reason 0, so a proxy's page never
  passes for "down"); vipd_probe_duration_seconds_count equals the successes; vipd_probe_up;
- every handshake carried SNI kubernetes (the default server name for an IP URL);
- the live scrape passes `promtool check metrics`, and every vipd_ metric the probe dashboard
  (manifests/probe/dashboard) queries is in it;
- `vipd probe --watch URL URL --json` (from n1) shows both sites and the three targets, with
  success rate 1.0 for the apiservers and 0.0 with reason not_apiserver for the proxy, and
  `--watch --once` draws the table (rows site-a, site-b; the three target columns), and
  `--watch` alone redraws it in place (cursor home) until stopped;
- apiserver-a killed: from both sites its failures are reason connection_refused, and the
  matrix's cell says so; apiserver-b is unaffected.
Prints per (site, target) p50/p99 latency from /probe.json (the figure in docs/probe-matrix.md).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import lab

INTERVAL_S = 1.0
TARGETS = {  # name: (address, fake apiserver mode, path, expect)
    "apiserver-a": ("192.0.2.101", "ok", "/readyz", "readyz"),
    "apiserver-b": ("192.0.2.102", "version", "/version", "version"),  # by name: HOSTNAMES
    "proxy": ("192.0.2.103", "proxy502", "/readyz", "readyz"),
}
HOSTNAMES = {"apiserver-b": "api-b.probe.test"}  # a DNS name as the URL's host
SITES = {"site-a": 0, "site-b": 1}  # site: node index
PORT = 9474


def probe_config(L: lab.Lab, ca: str, listen: str, site: str = "") -> str:
    doc = {"apiVersion": "vipd.io/v1alpha1", "kind": "ProbeConfiguration",
           "interval": "1s", "timeout": "500ms",
           "targets": [{"name": name, "url": f"https://{HOSTNAMES.get(name, addr)}:6443{path}",
                        "caFile": ca, "expect": expect}
                       | ({"serverName": "kubernetes"} if name in HOSTNAMES else {})
                       for name, (addr, _, path, expect) in TARGETS.items()],
           "metrics": {"listen": listen}}
    if site:
        doc["site"] = site
    path = L.path(f"probe-{listen.replace(':', '-')}.yaml")
    with open(path, "w") as f:
        f.write(lab.to_yaml(doc))
    return path


def scrape(ns: lab.Namespace, listen: str) -> list:
    code, body = lab.http_get(ns, f"http://{listen}/metrics")
    lab.check(code == 200, f"GET /metrics from {listen}: {code}")
    return lab.parse_prometheus(body)


def value(samples: list, name: str, **labels: str) -> float:
    found = [v for n, lb, v in samples if n == name
             and all(lb.get(k) == want for k, want in labels.items())]
    lab.check(len(found) == 1, f"{name}{labels}: {len(found)} series")
    return found[0]


DASHBOARD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "manifests", "probe", "dashboard", "vipd-probe-dashboard.json")


def check_dashboard_and_promtool(ns: lab.Namespace, listen: str) -> None:
    code, body = lab.http_get(ns, f"http://{listen}/metrics")
    lab.check(code == 200, f"/metrics: {code}")
    scraped = {n for n, _, _ in lab.parse_prometheus(body)}
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = [v.get("definition", "") for v in dashboard["templating"]["list"]]

    def walk(panels: list) -> None:
        for p in panels:
            walk(p.get("panels", []))
            exprs.extend(t.get("expr", "") for t in p.get("targets", []))
    walk(dashboard["panels"])
    used = {name for e in exprs for name in re.findall(r"\bvipd_\w+", e)}
    lab.log(f"probe dashboard names {sorted(used)}")
    missing = used - scraped
    lab.check(not missing, f"the dashboard queries metrics vipd probe does not export: {missing}")
    promtool = shutil.which("promtool")
    if promtool is None:
        lab.check(not lab.in_ci(), "CI=true and promtool is missing")
        lab.log("promtool missing: check metrics skipped")
        return
    p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                       text=True, timeout=30)
    lab.log(f"promtool check metrics: exit {p.returncode} {(p.stdout + p.stderr).strip()!r}")
    lab.check(p.returncode == 0, f"promtool check metrics: {p.stdout}{p.stderr}")


def test() -> None:
    vipd = lab.vipd_binary()
    with lab.Lab("probe-matrix") as L:
        topo = L.fabric_with_nodes(2)
        ca = lab.make_ca(L, "cluster-ca")
        apis = {}
        for name, (addr, mode, _, _) in TARGETS.items():
            topo.fabric.add_address("br0", f"{addr}/24")
            cert = lab.make_server_cert(L, ca, f"{name}-cert", node_ip=addr)
            apis[name] = lab.FakeApiserver(L, topo.fabric, cert, mode=mode, addr=addr, name=name)

        nodes = {site: topo.nodes[i] for site, i in SITES.items()}
        for node in nodes.values():
            etc = os.path.join("/etc/netns", node.ns.name)
            os.makedirs(etc, exist_ok=True)
            L.on_cleanup(lambda etc=etc: shutil.rmtree(etc))
            with open(os.path.join(etc, "hosts"), "w") as f:
                f.write("127.0.0.1 localhost\n" + "".join(
                    f"{TARGETS[name][0]} {host}\n" for name, host in HOSTNAMES.items()))
        listens = {site: f"{node.v4}:{PORT}" for site, node in nodes.items()}
        # site-a from --site (as the DaemonSet passes its pod's label), site-b from the file.
        configs = {"site-a": probe_config(L, ca[0], listens["site-a"]),
                   "site-b": probe_config(L, ca[0], listens["site-b"], site="site-b")}
        argv = {"site-a": [vipd, "probe", "--config", configs["site-a"], "--site", "site-a"],
                "site-b": [vipd, "probe", "--config", configs["site-b"]]}
        for site in SITES:
            out = lab.run(argv[site] + ["--validate"])
            lab.log(f"validate {site}: {out.stdout.strip()}")
        procs = {site: L.start(nodes[site].ns, f"probe-{site}", argv[site]) for site in SITES}

        # Enough probes for a matrix: 4 per target.
        def enough() -> bool:
            for site in SITES:
                s = scrape(nodes[site].ns, listens[site])
                for name in TARGETS:
                    done = value(s, "vipd_probe_successes_total", site=site, target=name) + sum(
                        v for n, lb, v in s if n == "vipd_probe_failures_total"
                        and lb["target"] == name)
                    if done < 4:
                        return False
            return True
        t0 = time.monotonic()
        lab.wait_until(enough, 20, 0.25, "4 probes of every target from both sites")
        lab.log(f"4 probes per (site, target) after {time.monotonic() - t0:.1f}s")

        for site in SITES:
            s = scrape(nodes[site].ns, listens[site])
            for name in ("apiserver-a", "apiserver-b"):
                ok = value(s, "vipd_probe_successes_total", site=site, target=name)
                failed = sum(v for n, lb, v in s if n == "vipd_probe_failures_total"
                             and lb["target"] == name)
                count = value(s, "vipd_probe_duration_seconds_count", site=site, target=name)
                lab.log(f"{site} {name}: {ok:.0f} successes, {failed:.0f} failures, "
                        f"histogram count {count:.0f}")
                lab.check(ok >= 4 and failed == 0, f"{site} {name}: {ok} successes, {failed} failed")
                lab.check(count == ok, f"{site} {name}: histogram count {count} != successes {ok}")
                lab.check(value(s, "vipd_probe_up", site=site, target=name) == 1, "up 1")
            ok = value(s, "vipd_probe_successes_total", site=site, target="proxy")
            by_reason = {lb["reason"]: v for n, lb, v in s
                         if n == "vipd_probe_failures_total" and lb["target"] == "proxy"}
            lab.log(f"{site} proxy: {ok:.0f} successes, failures by reason "
                    f"{ {k: v for k, v in by_reason.items() if v} }")
            lab.check(ok == 0, f"{site} proxy: {ok} successes")
            lab.check(by_reason["not_apiserver"] >= 4, f"{site} proxy: {by_reason}")
            lab.check(all(v == 0 for k, v in by_reason.items() if k != "not_apiserver"),
                      f"{site} proxy: only not_apiserver, never a connection failure: {by_reason}")
            lab.check(value(s, "vipd_probe_up", site=site, target="proxy") == 0, "proxy up 0")
        for name, api in apis.items():
            names = set(api.server_names())
            lab.check(names == {"kubernetes"}, f"{name}: SNI {names}")
        check_dashboard_and_promtool(nodes["site-a"].ns, listens["site-a"])

        watch = [vipd, "probe", "--watch", listens["site-a"], "--watch",
                 f"http://{listens['site-b']}"]
        out = nodes["site-a"].ns.run(watch + ["--json"])
        matrix = json.loads(out.stdout)
        lab.check(matrix["sites"] == ["site-a", "site-b"], f"sites: {matrix['sites']}")
        lab.check(matrix["targets"] == list(TARGETS), f"targets: {matrix['targets']}")
        lab.check(matrix["unreachable"] == [], f"unreachable: {matrix['unreachable']}")
        cells = {(c["site"], c["target"]): c for c in matrix["cells"]}
        lab.check(len(cells) == 6, f"{len(cells)} cells")
        lab.log("figure: per (site, target) latency of the successes, from /probe.json")
        for (site, name), c in sorted(cells.items()):
            lab.log(f"  {site:7} {name:12} success {c['successRate'] * 100:5.1f}%  "
                    f"p50 {c['p50Ms'] if c['p50Ms'] is not None else '-'} ms  "
                    f"p99 {c['p99Ms'] if c['p99Ms'] is not None else '-'} ms  "
                    f"probes {c['probes']:.0f}  {c['sparkline']}")
            if name == "proxy":
                lab.check(c["successRate"] == 0 and c["lastReason"] == "not_apiserver", f"{c}")
                lab.check("not an apiserver" in c["lastDetail"], f"{c}")
            else:
                lab.check(c["successRate"] == 1 and c["p50Ms"] > 0 and c["p99Ms"] >= c["p50Ms"],
                          f"{c}")

        out = nodes["site-a"].ns.run(watch + ["--once"])
        frame = out.stdout
        lab.log(f"--watch --once:\n{frame}")
        lines = frame.splitlines()
        header = next(line for line in lines if line.startswith("site "))
        lab.check(all(name in header for name in TARGETS), f"header: {header!r}")
        rows = [line for line in lines if line.startswith(("site-a ", "site-b "))]
        lab.check(len(rows) == 2, f"rows: {rows}")
        lab.check(all("not_apiserver" in r and "100.0%" in r for r in rows), f"rows: {rows}")

        # Live: frames redrawn in place every 200ms; stopped after 4s (a sanitized vipd beside
        # another test has drawn no frame within 1.5s: the first fetch of both sites is slow).
        live = subprocess.run(nodes["site-a"].ns.argv(["timeout", "-s", "INT", "4"] + watch
                                                      + ["--refresh", "200ms"]),
                              capture_output=True, text=True, timeout=15)
        frames = live.stdout.count("\x1b[H")
        lab.log(f"--watch for 4s: {frames} frames, clear-screen once: "
                f"{live.stdout.count(chr(27) + '[2J')}")
        lab.check(frames >= 3 and live.stdout.count("\x1b[2J") == 1
                  and live.stdout.count("site-b ") >= 3, f"live --watch: {live.stdout[:400]!r}")

        # apiserver-a gone: connection refused from both sites, apiserver-b unaffected.
        before = {site: value(scrape(nodes[site].ns, listens[site]), "vipd_probe_failures_total",
                              site=site, target="apiserver-a", reason="connection_refused")
                  for site in SITES}
        lab.check(before == {"site-a": 0, "site-b": 0}, f"refused before the kill: {before}")
        apis["apiserver-a"].stop()

        def refused() -> bool:
            return all(value(scrape(nodes[site].ns, listens[site]), "vipd_probe_failures_total",
                             site=site, target="apiserver-a", reason="connection_refused") >= 2
                       for site in SITES)
        lab.wait_until(refused, 10, 0.25, "2 connection_refused failures of apiserver-a per site")
        for site in SITES:
            s = scrape(nodes[site].ns, listens[site])
            by_reason = {lb["reason"]: v for n, lb, v in s
                         if n == "vipd_probe_failures_total" and lb["target"] == "apiserver-a"
                         and v}
            lab.log(f"{site} apiserver-a after the kill: failures {by_reason}")
            lab.check(set(by_reason) == {"connection_refused"}, f"{site}: {by_reason}")
            lab.check(value(s, "vipd_probe_up", site=site, target="apiserver-a") == 0, "up 0")
            lab.check(value(s, "vipd_probe_up", site=site, target="apiserver-b") == 1, "b up 1")
        matrix = json.loads(nodes["site-b"].ns.run(watch + ["--json"]).stdout)
        for c in matrix["cells"]:
            if c["target"] == "apiserver-a":
                lab.check(c["lastOk"] is False and c["lastReason"] == "connection_refused",
                          f"{c}")
                lab.check("Connection refused" in c["lastDetail"], f"{c}")
        lab.check(any("failing (connection_refused)" in line
                      for line in procs["site-a"].log_text().splitlines()),
                  "site-a's log names the change to failing")

        # One instance gone: --json still answers, names it unreachable, exits 1.
        procs["site-b"].signal(signal.SIGTERM)
        lab.wait_until(lambda: not procs["site-b"].alive(), 5, 0.05, "probe-site-b to exit")
        code = procs["site-b"].popen.returncode
        lab.check(code == 0, f"probe-site-b exited {code} on SIGTERM")
        out = nodes["site-a"].ns.run(watch + ["--json"], check=False)
        lab.check(out.returncode == 1, f"--json with one instance gone exits {out.returncode}")
        matrix = json.loads(out.stdout)
        lab.check(matrix["sites"] == ["site-a"] and len(matrix["unreachable"]) == 1,
                  f"{matrix['sites']} {matrix['unreachable']}")


if __name__ == "__main__":
    lab.main(test, binaries=["openssl"], vipd=True)
