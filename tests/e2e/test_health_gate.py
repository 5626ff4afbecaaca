#!/usr/bin/env python3
"""e2e: vipd's health gate against a stand-in kube-apiserver. BIRD fabric (AS 65000), vipd on
node 1 (AS 65001) with health {type: apiserver, url: https://127.0.0.1:6443/readyz, caFile,
interval 200ms, timeout 200ms, rise 2, fall 3} and no serverName; the apiserver is
fake_apiserver.py (python ssl) in node 1's namespace. Its certificate, from a CA made with the
openssl CLI, is shaped like a stock kubeadm one (lab.make_server_cert): DNS kubernetes,
kubernetes.default, kubernetes.default.svc, kubernetes.default.svc.cluster.local, IP 10.96.0.1 and
the node's address, and no 127.0.0.1, so vipd must verify the default server name `kubernetes`.

Asserts:
- /readyz answers 503 "not ready: ..." before any session, /healthz 200 "ok";
- healthy ("ok"): both VIPs reach BIRD (time from vipd's start printed; at least rise x
  interval); status healthy with serverName kubernetes, every health check's SNI kubernetes
  (the doctor's certificate read, at most two, sends none),
  vipd_health_healthy 1, vipd_vip_announced 1, /readyz 200 "ok";
- a proxy's 502 HTML page (hard evidence: not an apiserver): both VIPs leave BIRD within one
  interval + margin (hardFall 2: the second check runs at once), with hardFall hard failures in a
  row; the session stays up; status lastDetail names the 502; vipd_health_healthy 0; /readyz 200
  (every VIP is in its intended, withdrawn, state);
- back to "ok": announced again within rise x interval + margin;
- "not ready" (500 with the apiserver's failed-check list; soft evidence): withdrawn within
  fall x interval + margin and not before (fall-1) x interval, with no hard failure; back to "ok";
- 200 with a body other than "ok": withdrawn again;
- a vipd restarted against an apiserver presenting a certificate from a foreign CA (with the
  same kubeadm names): the session comes up but the VIPs are never announced (watched for a few
  seconds) and lastDetail names the unknown issuer;
- a vipd restarted against an apiserver presenting a certificate from the cluster CA whose only
  name is the IP SAN 127.0.0.1 (the URL's own address, but not `kubernetes`): never announced
  either, and lastDetail names the hostname mismatch, `kubernetes` and health.serverName.
"""
import signal
import time

import lab

INTERVAL_S, RISE, FALL, HARD_FALL = 0.2, 2, 3, 2  # hardFall: the default
MARGIN_S = 1.0  # a probe in flight at the switch + BGP UPDATE + BIRD + birdc polling
FOREIGN_WATCH_S = 4.0
VIPS = (lab.VIP4, lab.VIP6)


def in_bird(bird: lab.Bird) -> bool:
    return all(bird.has_route(p) for p in VIPS)


def out_of_bird(bird: lab.Bird) -> bool:
    return not any(bird.has_route(p) for p in VIPS)


def check_metrics(vipd: lab.Vipd, healthy: int, announced: int) -> None:
    h = vipd.metric("vipd_health_healthy")
    a = [vipd.metric("vipd_vip_announced", vip=p) for p in VIPS]
    lab.log(f"metrics: vipd_health_healthy={h} vipd_vip_announced={a}")
    lab.check(h == healthy, f"vipd_health_healthy should be {healthy}, is {h}")
    lab.check(a == [announced, announced], f"vipd_vip_announced should be {announced}: {a}")


def switch(api: lab.FakeApiserver, bird: lab.Bird, mode: str, want_in: bool,
           bound: float) -> float:
    """Switches the apiserver to mode; returns the seconds until BIRD has (want_in) or lacks
    both VIPs, bounded."""
    t0 = time.monotonic()
    api.set_mode(mode)
    pred = (lambda: in_bird(bird)) if want_in else (lambda: out_of_bird(bird))
    lab.wait_until(pred, bound, 0.01,
                   f"both VIPs to {'reach' if want_in else 'leave'} BIRD after mode {mode!r}")
    return time.monotonic() - t0


def test() -> None:
    with lab.Lab("health-gate") as L:
        ca = lab.make_ca(L, "cluster-ca")
        foreign_ca = lab.make_ca(L, "foreign-ca")
        ip_only = lab.make_server_cert(L, ca, "apiserver-iponly-cert", only_ip="127.0.0.1")
        st: dict = {}

        def edit(c: dict, topo: lab.Topology) -> None:
            node_ip = topo.nodes[0].v4
            server = lab.make_server_cert(L, ca, "apiserver-cert", node_ip=node_ip)
            st["foreign"] = lab.make_server_cert(L, foreign_ca, "apiserver-foreign-cert",
                                                 node_ip=node_ip)
            st["api"] = lab.FakeApiserver(L, topo.nodes[0].ns, server, mode="ok")
            c["health"] = {"type": "apiserver", "url": st["api"].url(), "caFile": ca[0],
                           "interval": "200ms", "timeout": "200ms", "rise": RISE, "fall": FALL}

        s = lab.build_single_vipd(L, edit)
        t_start = s.vipd.proc.started
        bird, vipd, node, api = s.bird, s.vipd, s.node, st["api"]

        code, body = lab.wait_until(lambda: vipd.http("/healthz"), 10, 0.05, "vipd's /healthz")
        lab.check((code, body.strip()) == (200, "ok"), f"/healthz: {code} {body!r}")
        code, body = vipd.http("/readyz")
        lab.log(f"/readyz right after start: {code} {body.strip()!r}")
        if bird.neighbor_state(node.v4) != "Established":
            lab.check(code == 503 and body.startswith("not ready:"),
                      f"/readyz without a session should be 503 'not ready: ...': {code} {body!r}")

        # Healthy: announced after rise successes.
        lab.wait_until(lambda: in_bird(bird), 30, 0.01, "both VIPs in BIRD with a healthy apiserver")
        dt = time.monotonic() - t_start
        lab.log(f"healthy: both VIPs in BIRD {dt:.2f}s after vipd started "
                f"(session {bird.neighbor_state(node.v4)})")
        h = vipd.status()["health"]
        lab.log(f"health status: {h}")
        lab.check(h["type"] == "apiserver" and h["healthy"] is True, f"health: {h}")
        lab.check(h["consecutiveSuccesses"] >= RISE and h["lastResult"] == "success", f"health: {h}")
        lab.check(h["serverName"] == "kubernetes", f"the default server name: {h}")
        names = api.server_names()
        lab.log(f"apiserver: {len(names)} handshakes, SNI {sorted(set(names))}")
        # The doctor (at start, and once more if the gate opens after a failed read) reads the
        # certificate without SNI on purpose, as a client dialling the VIP's address sends none;
        # every health check carries kubernetes.
        checks = [n for n in names if n != "-"]
        lab.check(checks and set(checks) == {"kubernetes"} and names.count("-") <= 2,
                  f"every health check's handshake should carry SNI kubernetes, and at most the "
                  f"doctor's two none: {sorted(set(names))}, {names.count('-')} without")
        check_metrics(vipd, 1, 1)
        code, body = lab.wait_until(lambda: (lambda r: r if r[0] == 200 else None)(
            vipd.http("/readyz")), 5, 0.1, "/readyz 200 once announced")
        lab.check(body.strip() == "ok", f"/readyz body: {body!r}")

        # A proxy's 502 page is hard evidence (no apiserver answered): the failed check is
        # repeated at once, and hardFall of them in a row withdraw, without waiting for fall.
        dt = switch(api, bird, "proxy502", False, INTERVAL_S + MARGIN_S)
        lab.log(f"proxy 502: both VIPs left BIRD {dt:.3f}s after the switch "
                f"(hard evidence: hardFall {HARD_FALL}, the next check at most {INTERVAL_S}s "
                f"away, bound +{MARGIN_S}s)")
        lab.check(bird.neighbor_state(node.v4) == "Established", "the session should stay up")
        h = vipd.status()["health"]
        lab.log(f"health status: {h}")
        lab.check(h["healthy"] is False and h["consecutiveHardFailures"] >= HARD_FALL
                  and h["hardFailures"] >= HARD_FALL, f"health: {h}")
        lab.check("502" in h["lastDetail"], f"lastDetail should name the 502: {h['lastDetail']!r}")
        v = vipd.vip_status(lab.VIP4)
        lab.check(not v["announced"] and "health" in v["reason"], f"VIP status: {v}")
        check_metrics(vipd, 0, 0)
        code, body = vipd.http("/readyz")
        lab.log(f"/readyz while unhealthy and withdrawn: {code} {body.strip()!r}")
        lab.check(code == 200, f"/readyz: every VIP is in its intended state: {code} {body!r}")

        # Back to ok: announced again after rise successes.
        dt = switch(api, bird, "ok", True, RISE * INTERVAL_S + MARGIN_S)
        lab.log(f"ok again: both VIPs back in BIRD {dt:.3f}s after the switch "
                f"(rise x interval = {RISE * INTERVAL_S:.1f}s)")
        check_metrics(vipd, 1, 1)

        # "Not ready" is an apiserver's own answer, soft evidence: fall failures, no sooner.
        dt = switch(api, bird, "unready", False, FALL * INTERVAL_S + MARGIN_S)
        h = vipd.status()["health"]
        lab.log(f"unready (500, [-]etcd failed): both VIPs left BIRD {dt:.3f}s after the switch "
                f"(fall x interval = {FALL * INTERVAL_S:.1f}s); health {h}")
        lab.check(dt >= (FALL - 1) * INTERVAL_S - 0.05,
                  f"withdrawn after {dt:.3f}s: sooner than {FALL} failures can have happened")
        lab.check(h["healthy"] is False and h["consecutiveFailures"] >= FALL
                  and h["consecutiveHardFailures"] == 0, f"soft failures only: {h}")
        switch(api, bird, "ok", True, RISE * INTERVAL_S + MARGIN_S)

        # 200 with another body is a failure too.
        dt = switch(api, bird, "other", False, FALL * INTERVAL_S + MARGIN_S)
        h = vipd.status()["health"]
        lab.log(f"200 with body '{{\"status\": \"ok\"}}': withdrawn after {dt:.3f}s; "
                f"lastDetail {h['lastDetail']!r}")
        lab.check(h["healthy"] is False, f"health: {h}")

        # A certificate from a foreign CA, with the right names: a fresh vipd never announces.
        api = restart_against(L, vipd, bird, node, api, st["foreign"], "apiserver-foreign",
                              "from a foreign CA")
        detail = never_announced(vipd, bird, api, "an untrusted apiserver")
        lab.check("certificate verify failed" in detail and "local issuer" in detail,
                  f"lastDetail should name the unknown issuer: {detail!r}")

        # A certificate from the cluster CA naming only 127.0.0.1 (the URL's address) and not
        # `kubernetes`: never announced either, and the detail says what to set.
        api = restart_against(L, vipd, bird, node, api, ip_only, "apiserver-iponly",
                              "from the cluster CA, IP SAN 127.0.0.1 only")
        detail = never_announced(vipd, bird, api, "an apiserver certificate without 'kubernetes'")
        lab.check("hostname mismatch" in detail and "'kubernetes'" in detail
                  and "health.serverName" in detail,
                  f"lastDetail should name the mismatch, kubernetes and health.serverName: "
                  f"{detail!r}")


def restart_against(L: lab.Lab, vipd: lab.Vipd, bird: lab.Bird, node: lab.Node,
                    api: lab.FakeApiserver, cert: tuple[str, str], name: str,
                    what: str) -> lab.FakeApiserver:
    """Replaces the apiserver with one presenting cert, restarts vipd and waits for its session:
    the new apiserver."""
    api.stop()
    api = lab.FakeApiserver(L, node.ns, cert, mode="ok", name=name)
    vipd.restart(signal.SIGTERM)
    lab.wait_established(bird, [node.v4], 30)
    lab.log(f"restarted vipd's session is Established; the apiserver's certificate is {what}")
    return api


def never_announced(vipd: lab.Vipd, bird: lab.Bird, api: lab.FakeApiserver, what: str) -> str:
    """Watches BIRD for FOREIGN_WATCH_S: no VIP may arrive, and vipd's health must have failed
    every check and the apiserver logged the failed handshakes. Returns lastDetail."""
    lab.wait_never(lambda: bird.has_route(lab.VIP4) or bird.has_route(lab.VIP6),
                   FOREIGN_WATCH_S, 0.05, f"a VIP announced with {what}")
    h = vipd.status()["health"]
    lab.log(f"after {FOREIGN_WATCH_S}s: health {h}")
    lab.check(h["healthy"] is False and h["consecutiveSuccesses"] == 0, f"health: {h}")
    lab.check(h["lastResult"] == "failure" and h["checks"] > 0, f"health: {h}")
    check_metrics(vipd, 0, 0)
    failed = [ln for ln in api.proc.log_text().splitlines() if "handshake failed" in ln]
    lab.check(failed, "the apiserver should log vipd's failed handshakes")
    lab.log(f"apiserver: {len(failed)} failed handshakes, e.g. {failed[0]}")
    return h["lastDetail"]


if __name__ == "__main__":
    lab.main(test, binaries=lab.Bird.binaries + lab.FakeApiserver.binaries, vipd=True)
