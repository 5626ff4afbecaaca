#!/usr/bin/env python3
"""Unit checks (no root) for the benchmark's pure parts: the route monitor's parsing of
`ip -tshort -o monitor route` lines, the summaries, and the report's cells and goals."""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import benchlab  # noqa: E402
import report  # noqa: E402


def check(cond: bool, msg: str) -> None:
    if not cond:
        print(f"FAIL: {msg}", flush=True)
        sys.exit(1)


def stamp(line: str) -> float:
    return datetime.datetime.strptime(line[1:27], "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def test_monitor_parse() -> None:
    mon = benchlab.RouteMonitor.__new__(benchlab.RouteMonitor)
    mon.addr = "203.0.113.10"
    multi = ("[2026-12-03T10:11:26.623475] 203.0.113.10 proto bird metric 32 \\\tnexthop via "
             "192.0.2.11 dev br0 weight 1 \\\tnexthop via 192.0.2.12 dev br0 weight 1 ")
    t, hops = mon._parse(multi)
    check(hops == {"192.0.2.11", "192.0.2.12"} and abs(t - stamp(multi)) < 1e-6,
          f"multipath line parsed as {t}, {hops}")
    single = "[2026-12-03T10:11:26.636982] 203.0.113.10 via 192.0.2.12 dev br0 proto bird metric 32"
    check(mon._parse(single)[1] == {"192.0.2.12"}, f"single path: {mon._parse(single)}")
    gone = "[2026-12-03T10:11:26.650893] Deleted 203.0.113.10 via 192.0.2.12 dev br0 proto bird"
    check(mon._parse(gone)[1] == frozenset(), f"deleted route: {mon._parse(gone)}")
    for other in ("[2026-12-03T10:11:27.497986] local 203.0.113.10 dev lo table local proto kernel",
                  "[2026-12-03T10:11:27.497986] 203.0.113.100 via 192.0.2.12 dev br0",
                  "[2026-12-03T10:11:27.497986] 2001:db8:ffff::10 via 2001:db8::11 dev br0",
                  "garbage", ""):
        check(mon._parse(other) is None, f"not the VIP's route, but parsed: {other!r}")
    # wait(): the first change at or after `since` that satisfies the predicate.
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(multi + "\n" + single + "\n" + gone + "\n")
    try:
        mon.proc = type("P", (), {"log_path": f.name})()
        mon._events, mon._offset, mon._partial = [], 0, ""
        # The events property reads the log itself: a test that checks it after a scenario, with
        # no wait() since, sees every change (test_rollout, the pod tests).
        check([len(h) for _, h in mon.events] == [2, 1, 0], f"events: {mon.events}")
        t0 = stamp(multi)
        t = mon.wait(lambda h: "192.0.2.11" not in h, t0, 1, "test")
        check(abs(t - stamp(single)) < 1e-6, "wait() did not return the single-path change")
        check(abs(mon.wait(lambda h: not h, t0, 1, "test") - stamp(gone)) < 1e-6,
              "wait() did not return the deletion")
        try:
            mon.wait(lambda h: "192.0.2.13" in h, t0, 0.05, "test")
            check(False, "wait() returned for a change that never happened")
        except TimeoutError:
            pass
        check(mon.timeline(t0, t0 + 1) == [(0.0, 2), (round(stamp(single) - t0, 4), 1),
                                           (round(stamp(gone) - t0, 4), 0)],
              f"timeline: {mon.timeline(t0, t0 + 1)}")
    finally:
        os.unlink(f.name)


def test_summary_and_cells() -> None:
    s = bench.summary([0.3, 0.1, 0.2])
    check((s["median"], s["min"], s["max"], s["n"]) == (0.2, 0.1, 0.3, 3), f"summary: {s}")
    check(report.cell(s, "ms") == "200 (100-300)", f"cell: {report.cell(s, 'ms')}")
    base = bench.summary([0.05])
    check(report.cell(s, "ms", base) == "200 (100-300), 4.0x", f"ratio: {report.cell(s, 'ms', base)}")
    check(report.cell(None, "s") == "n/a", "a missing figure must read n/a")


def test_goals() -> None:
    doc = {"speakers": {
        "vipd": {"withdraw": {"median": 0.005}, "drain": {"failed_total": 0, "requests": 4500,
                                                  "runs": [{"errors": {}}]},
                 "failover": {"bfd50": {"freeze": {"max": 0.13}, "cut": {"max": 0.21}}},
                 "idle": {"rss_mib": {"median": 8.0}, "rss_anon_mib": {"median": 0.7},
                          "cpu_s_per_hour": {"median": 2.0}},
                 "table": {"rss_peak_mib": 8.1}},
        "gobgp": {"withdraw": {"median": 0.014}, "idle": {"rss_mib": {"median": 20.0}},
                  "table": {"rss_peak_mib": 1000.0}},
        "bird": {"idle": {"rss_mib": {"median": 4.0}, "rss_anon_mib": {"median": 0.8},
                          "cpu_s_per_hour": {"median": 1.0}},
                 "table": {"rss_peak_mib": 4.1}}}}
    got = {text: ok for text, ok, _ in report.goals(doc)}
    # 2.8x; 0; cut 210 ms; RSS 8.0 vs 20 and 4.0; RssAnon 0.7 vs 0.8; CPU 2.0 vs 1.0; table ...
    want = [False, True, False, False, False, True, False, True, False, None]
    check(list(got.values()) == want, f"goals: {got}")
    for median, ok in ((0.009, True), (0.3, True), (0.31, False)):
        doc["speakers"]["vipd"]["apiserver_kill"] = {"median": median}
        got = {text: ok for text, ok, _ in report.goals(doc)}
        check(got["apiserver killed to path gone, median <= 300 ms (goal 50 ms)"] is ok,
              f"apiserver kill goal at {median}: {got}")
    drain = {"runs": [{"errors": {report.RESET: 1, "Network is unreachable": 2}},
                      {"errors": {report.RESET: 2}}]}
    check(report.resets(drain) == 3, f"resets: {report.resets(drain)}")
    check(all(ok is None for _, ok, _ in report.goals({"speakers": {}})),
          "goals without figures must be 'not measured'")


def test_merged_run() -> None:
    """A separate run of some scenarios: its rows carry its date, the main run's do not, the
    header says both, and a cell from a different run than the rest of its row is dated alone."""
    kill = {"median": 0.009, "min": 0.008, "max": 0.012, "n": 3, "requests": 5400,
            "failed_total": 40, "refused_total": 38}
    doc = {"machine": {"date": "2026-12-03", "cpu": "cpu", "cores": 2, "memory_gib": 1.0,
                       "kernel": "k", "os": "os"},
           "versions": {"vipd": "vipd 1"},
           "settings": {"quick": False, "reps": 5, "drain_reps": 3, "failover_reps": 3,
                        "hold_s": 3, "table_prefixes": 1000},
           "speakers": {"vipd": {"withdraw": {"median": 0.005, "n": 1},
                                 "apiserver_kill": kill,
                                 "apiserver_unready": {"median": 2.3, "n": 1}},
                        "exabgp": {"withdraw": {"median": 0.004, "n": 1},
                                   "apiserver_kill": dict(kill, median=0.9)},
                        "gobgp": {"withdraw": {"median": 0.03, "n": 1}}},
           "partial_runs": [{"date": "2026-12-05 06:00 UTC",
                             "scenarios": ["apiserver-kill", "apiserver-unready"],
                             "speakers": ["vipd", "exabgp"], "versions": {"vipd": "vipd 2"},
                             "settings": {"quick": False, "failover_reps": 3,
                                          "scenarios": ["apiserver-kill", "apiserver-unready"],
                                          "apiserver_gates": {"vipd": "defaults"}},
                             "failures": []}]}
    md = report.markdown(doc)
    _, body = report.rows(doc)
    by = {r[0]: r[1:] for r in body}
    check("planned withdraw, command to next hop gone, ms" in by, f"main-run row dated: {by}")
    kill_row = "apiserver killed (SIGKILL), to next hop gone, ms (measured 2026-12-05 06:00 UTC)"
    check(by.get(kill_row) == ["9.0 (8.0-12)", "n/a", "900 (8.0-12), 100.0x"],
          f"apiserver kill row: {by.get(kill_row)}")
    check(any(k.startswith("failed HTTPS requests") and v[0] == "40 of 5400 (38)"
              for k, v in by.items()), f"failed requests row: {by}")
    check("returnPath.mode off" not in md, f"a line for a speaker that did not run: {md}")
    doc["speakers"]["vipd-norp"] = {"idle": {"rss_mib": {"median": 9.1, "n": 1},
                                             "rss_anon_mib": {"median": 0.97, "n": 1},
                                             "cpu_s_per_hour": {"median": 1.9, "n": 1}}}
    md = report.markdown(doc)
    check("vipd with returnPath.mode off" in md and "CPU 1.9 s per hour" in md
          and "RSS 9.1 MiB" in md, f"returnPath off line: {md}")
    check(report.rows(doc)[0] == ["", "vipd", "GoBGP", "ExaBGP"],
          f"vipd-norp must not become a column: {report.rows(doc)[0]}")
    check("Measured 2026-12-03" in md and "Measured 2026-12-05 06:00 UTC in a separate run" in md
          and "vipd 2" in md and "Goals (each from the run that measured its figures)" in md,
          f"header: {md}")
    # A later run of vipd alone: the row's cells now come from two runs.
    doc["partial_runs"].append(dict(doc["partial_runs"][0], date="2026-12-06 01:00 UTC",
                                    speakers=["vipd"]))
    _, body = report.rows(doc)
    row = next(r for r in body if r[0] == "apiserver killed (SIGKILL), to next hop gone, ms")
    check(row[1].endswith("(measured 2026-12-06 01:00 UTC)") and row[2] == "n/a"
          and row[3].endswith("(measured 2026-12-05 06:00 UTC)"), f"mixed row: {row}")


if __name__ == "__main__":
    test_merged_run()
    test_monitor_parse()
    test_summary_and_cells()
    test_goals()
    print("PASS", flush=True)
