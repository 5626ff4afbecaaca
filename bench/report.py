"""Turns bench.py's results.json into a Markdown table (table.md, and docs/benchmarks.md's
benchmark section with --update-docs) and a gnuplot SVG of the failover timelines (failover.svg).

Usage: report.py RESULTS.json [OUTDIR] [--update-docs]
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS_DOC = os.path.join(HERE, "..", "docs", "benchmarks.md")
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
LABELS = {"vipd": "vipd", "gobgp": "GoBGP", "exabgp": "ExaBGP", "frr": "FRR", "bird": "BIRD"}
MODES = [("hold", "hold timer (3 s)"), ("bfd300", "BFD 300ms x 3"), ("bfd50", "BFD 50ms x 3")]


def _get(d: dict, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def _fmt(v: float, unit: str) -> str:
    if unit == "ms":
        return f"{v * 1000:.0f}" if v >= 0.01 else f"{v * 1000:.1f}"
    if unit == "s":
        return f"{v:.2f}"
    if unit == "MiB":
        return f"{v:.1f}"
    return f"{v:g}"


def cell(s: Optional[dict], unit: str, base: Optional[dict] = None) -> str:
    """median (min-max) and, against vipd's median, how many times larger."""
    if not s:
        return "n/a"
    text = _fmt(s["median"], unit)
    if s.get("n", 1) > 1 and s["min"] != s["max"]:
        text += f" ({_fmt(s['min'], unit)}-{_fmt(s['max'], unit)})"
    if base and base.get("median"):
        text += f", {s['median'] / base['median']:.1f}x"
    return text


RESET = "Connection reset by peer"


def resets(drain: dict) -> int:
    """Failed requests that were reset: a connection in flight when the fabric's ECMP route
    changed, whose later packets the fabric's hash (hash-threshold, not resilient) sent to
    another node, which answered with a RST. The drain sequence cannot prevent these; requests
    that reached a node after it had unbound the VIP fail as unreachable or time out instead."""
    return sum(r["errors"].get(RESET, 0) for r in drain["runs"])


# The scenario (bench.py --scenarios) that measures the figures under each results key.
SCENARIO_OF = {"idle": "idle", "start": "start", "withdraw": "withdraw", "drain": "drain",
               "table": "table", "apiserver_kill": "apiserver-kill",
               "apiserver_unready": "apiserver-unready"}


SCENARIO_NAMES = ["idle", "start", "withdraw", "drain", "hold", "bfd", "table",
                  "apiserver-kill", "apiserver-unready"]  # bench.SCENARIOS


def scenario_of(path: tuple) -> str:
    if path[0] == "failover":
        return "hold" if path[1] == "hold" else "bfd"
    return SCENARIO_OF.get(path[0], path[0])


def measured_in(doc: dict, scenario: str, kind: str) -> Optional[dict]:
    """The latest separate run (bench.py --scenarios) that measured scenario for kind; None:
    the main run did."""
    for r in reversed(doc.get("partial_runs", [])):
        if scenario in r.get("scenarios", []) and kind in r.get("speakers", []):
            return r
    return None


def rows(doc: dict) -> tuple[list[str], list[list[str]]]:
    sp = doc["speakers"]
    kinds = [k for k in LABELS if k in sp]
    v = sp.get("vipd", {})
    head = ["", *(LABELS[k] for k in kinds)]
    out = []

    def dated(title: str, path: tuple, cells: list[str]) -> list[str]:
        """Marks figures from a separate run with its date: in the title when the whole row
        comes from one, else cell by cell."""
        runs = [None if c == "n/a" else measured_in(doc, scenario_of(path), k)
                for k, c in zip(kinds, cells)]
        dates = {r["date"] for r in runs if r}
        if not dates:
            return [title] + cells
        if len(dates) == 1 and all(r for r, c in zip(runs, cells) if c != "n/a"):
            return [f"{title} (measured {dates.pop()})"] + cells
        return [title] + [c if not r else f"{c} (measured {r['date']})"
                          for c, r in zip(cells, runs)]

    def add(title: str, path: tuple, unit: str, ratio: bool = True) -> None:
        base = _get(v, *path) if ratio else None
        out.append(dated(title, path, [cell(_get(sp[k], *path), unit,
                                            base if k != "vipd" else None) for k in kinds]))

    add("start to announced, s", ("start",), "s")
    add("planned withdraw, command to next hop gone, ms", ("withdraw",), "ms")
    out.append(["failed requests during drains: all (of them reset by the fabric's ECMP rehash)"] + [
        "n/a" if not _get(sp[k], "drain") else
        f"{sp[k]['drain']['failed_total']} of {sp[k]['drain']['requests']} "
        f"({resets(sp[k]['drain'])})" for k in kinds])
    for what, name in (("freeze", "node freeze (SIGSTOP)"), ("cut", "link cut")):
        for mode, mname in MODES:
            unit = "s" if mode == "hold" else "ms"
            add(f"{name}, {mname}, to next hop gone, {unit}", ("failover", mode, what), unit)
    add("idle RSS, MiB", ("idle", "rss_mib"), "MiB")
    add("idle RSS without program and library pages (RssAnon), MiB", ("idle", "rss_anon_mib"),
        "MiB")
    add("idle CPU, s per hour", ("idle", "cpu_s_per_hour"), "")
    out.append(["RSS with a full table (peak / after), MiB"] + [
        "n/a" if not _get(sp[k], "table") else
        f"{sp[k]['table']['rss_peak_mib']:.1f} / {sp[k]['table']['rss_after_mib']:.1f}"
        + ("" if sp[k]["table"]["session_up"] and sp[k]["table"]["speaker_alive"]
           else " (session lost)") for k in kinds])
    add("apiserver killed (SIGKILL), to next hop gone, ms", ("apiserver_kill",), "ms")
    out.append(dated(
        "failed HTTPS requests through the VIP while an apiserver is killed: all (of them "
        "refused by the killed node)", ("apiserver_kill",), [
            "n/a" if not _get(sp[k], "apiserver_kill") else
            f"{sp[k]['apiserver_kill']['failed_total']} of {sp[k]['apiserver_kill']['requests']} "
            f"({sp[k]['apiserver_kill']['refused_total']})"
            + ("" if all(r.get("load_covered_gone", True) for r in
                         sp[k]["apiserver_kill"].get("runs", []))
               else " (at least: the load ended before the path was gone)") for k in kinds]))
    add("apiserver unready (/readyz 500), to next hop gone, ms", ("apiserver_unready",), "ms")
    return head, out


def goals(doc: dict) -> list[tuple[str, Optional[bool], str]]:
    sp = doc["speakers"]
    v, g, b = sp.get("vipd", {}), sp.get("gobgp", {}), sp.get("bird", {})
    out = []
    vw, gw = _get(v, "withdraw", "median"), _get(g, "withdraw", "median")
    out.append(("planned withdraw at least 3x faster than GoBGP's CLI path",
                None if not (vw and gw) else gw / vw >= 3,
                "n/a" if not (vw and gw) else f"{vw * 1000:.1f} ms vs {gw * 1000:.1f} ms, {gw / vw:.1f}x"))
    d = _get(v, "drain")
    out.append(("zero failed requests during a planned drain", None if not d else
                d["failed_total"] == 0,
                "n/a" if not d else f"{d['failed_total']} failed of {d['requests']}, "
                f"{resets(d)} of them reset by the fabric's ECMP rehash"))
    f50 = [_get(v, "failover", "bfd50", w, "max") for w in ("freeze", "cut")]
    out.append(("failover under 200 ms with BFD 50ms x 3", None if None in f50 else max(f50) < 0.2,
                "n/a" if None in f50 else
                f"freeze / cut at most {f50[0] * 1000:.0f} / {f50[1] * 1000:.0f} ms"))
    vr, gr, br = (_get(x, "idle", "rss_mib", "median") for x in (v, g, b))
    out.append(("idle RSS at most a fifth of gobgpd's", None if not (vr and gr) else vr * 5 <= gr,
                "n/a" if not (vr and gr) else f"{vr:.1f} MiB vs {gr:.1f} MiB ({gr / vr:.1f}x)"))
    out.append(("idle RSS no more than BIRD's", None if not (vr and br) else vr <= br,
                "n/a" if not (vr and br) else f"{vr:.1f} MiB vs {br:.1f} MiB"))
    va, ba = (_get(x, "idle", "rss_anon_mib", "median") for x in (v, b))
    out.append(("idle RssAnon no more than BIRD's", None if not (va and ba) else va <= ba,
                "n/a" if not (va and ba) else f"{va:.2f} MiB vs {ba:.2f} MiB"))
    vc, bc = (_get(x, "idle", "cpu_s_per_hour", "median") for x in (v, b))
    out.append(("idle CPU no more than BIRD's", None if not (vc and bc) else vc <= bc,
                "n/a" if not (vc and bc) else f"{vc:.2f} s/h vs {bc:.2f} s/h"))
    vt, gt, bt = (_get(x, "table", "rss_peak_mib") for x in (v, g, b))
    out.append(("RSS with a full table at most a fifth of gobgpd's",
                None if not (vt and gt) else vt * 5 <= gt,
                "n/a" if not (vt and gt) else f"{vt:.1f} MiB vs {gt:.1f} MiB ({gt / vt:.0f}x)"))
    out.append(("RSS with a full table no more than BIRD's", None if not (vt and bt) else vt <= bt,
                "n/a" if not (vt and bt) else f"{vt:.1f} MiB vs {bt:.1f} MiB"))
    ak = _get(v, "apiserver_kill", "median")
    out.append(("apiserver killed to path gone, median <= 300 ms (goal 50 ms)",
                None if ak is None else ak <= 0.3,
                "n/a" if ak is None else f"median {ak * 1000:.0f} ms, "
                + ("within" if ak <= 0.05 else "over") + " the 50 ms goal"))
    return out


def markdown(doc: dict) -> str:
    m, ver, st = doc["machine"], doc["versions"], doc["settings"]
    head, body = rows(doc)
    lines = [f"Measured {m['date']} on {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, "
             f"Linux {m['kernel']}, {m['os']}; " + ", ".join(ver.values()) + ". "
             f"{'Quick run (one repetition). ' if st['quick'] else ''}"
             + (f"Only {', '.join(st['scenarios'])} run. " if st.get("scenarios") and
                len(st["scenarios"]) < len(SCENARIO_NAMES) else "") +
             f"Median (min-max) over {st['reps']} starts and withdraws, {st['drain_reps']} drains, "
             f"{st['failover_reps']} freezes and cuts per mode"
             + (", apiserver kills and unready apiservers" if set(st.get("scenarios") or [])
                & {"apiserver-kill", "apiserver-unready"} else "")
             + "; Nx = that speaker's median over "
             f"vipd's. Hold time {st['hold_s']} s everywhere; full table "
             f"{st['table_prefixes']:,} IPv4 /24s."
             + (" **Sanitizer build: times and RSS are not representative.**"
                if st.get("sanitized") else ""), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    for r in doc.get("partial_runs", []):
        rs = r["settings"]
        lines += ["", f"Measured {r['date']} in a separate run of only "
                  f"{', '.join(r['scenarios'])} for {', '.join(LABELS.get(k, k) for k in r['speakers'])}"
                  f" (the rows and cells marked with that date): "
                  + ", ".join(r["versions"].values()) + "; "
                  + ("quick run, one repetition" if rs.get("quick") else
                     f"median (min-max) over {rs.get('failover_reps')} repetitions") + "."
                  + (" Broken: " + "; ".join(r["failures"]) if r.get("failures") else "")]
    gates = None
    for r in [doc] + doc.get("partial_runs", []):
        gates = _get(r, "settings", "apiserver_gates") if set(_get(r, "settings", "scenarios") or []) \
            & {"apiserver-kill", "apiserver-unready"} else gates
    if gates:
        lines += ["", "apiserver rows: on each node a stand-in kube-apiserver (TLS, /readyz) is "
                  "both the health check's target and the service behind VIP:6443; 200 new "
                  "HTTPS connections a second through the VIP during each kill. Gates: "
                  + "; ".join(f"{LABELS.get(k, k)}: {g}" for k, g in gates.items())
                  + "; GoBGP and FRR not run."]
    norp = _get(doc["speakers"], "vipd-norp", "idle")
    if norp:
        run = measured_in(doc, "idle", "vipd-norp")
        lines += ["", "vipd with returnPath.mode off (the return-path check is a feature no other "
                  "speaker here has)" + (f", measured {run['date']}" if run else "") + ": idle RSS "
                  + cell(norp.get("rss_mib"), "MiB") + " MiB, RssAnon "
                  + cell(norp.get("rss_anon_mib"), "MiB") + " MiB, CPU "
                  + cell(norp.get("cpu_s_per_hour"), "") + " s per hour."]
    lines += ["", "Goals (same run):" if not doc.get("partial_runs") else
              "Goals (each from the run that measured its figures):", ""]
    for text, ok, fig in goals(doc):
        mark = "not measured" if ok is None else ("met" if ok else "**not met**")
        lines.append(f"- {text}: {mark} ({fig})")
    if doc.get("failures"):
        lines += ["", "Broken scenarios: " + "; ".join(doc["failures"])]
    return "\n".join(lines) + "\n"


def plot(doc: dict, outdir: str) -> Optional[str]:
    """failover.svg: one bar per speaker, mode and cause, from the event to the median time the
    fabric dropped the node (traffic to it is lost meanwhile), whiskers from min to max."""
    if not shutil.which("gnuplot"):
        print("report: gnuplot not installed; no plot", flush=True)
        return None
    data, labels = [], []
    y = 0
    for kind, label in LABELS.items():
        for mode, mname in MODES:
            for what in ("freeze", "cut"):
                s = _get(doc["speakers"].get(kind, {}), "failover", mode, what)
                if not s:
                    continue
                y += 1
                labels.append(f'"{label}, {mname}, {what}" {y}')
                data.append(f"{y} {s['median']} {s['min']} {s['max']} {MODES.index((mode, mname))}")
    if not data:
        return None
    dat = os.path.join(outdir, "failover.dat")
    with open(dat, "w") as f:
        f.write("# row median_s min_s max_s mode(0 hold,1 bfd300,2 bfd50)\n" + "\n".join(data) + "\n")
    svg = os.path.join(outdir, "failover.svg")
    script = f"""
set terminal svg size 900,{120 + 22 * y} dynamic font "sans,11"
set output "{svg}"
set title "Node freeze (SIGSTOP) or link cut until the fabric drops the node's next hop"
set logscale x
set xrange [0.01:10]
set xlabel "seconds after the event (log scale); bar: median, whiskers: min-max"
set yrange [0.3:{y + 0.7}]
set ytics ({", ".join(labels)})
set grid xtics
set key off
set arrow from 0.2, graph 0 to 0.2, graph 1 nohead dashtype 2 lc rgb "#cc3311"
set label "200 ms" at 0.2, graph 1 offset 0.5,-0.8 textcolor rgb "#cc3311"
set style fill solid 0.6
set palette defined (0 "#999999", 1 "#4477aa", 2 "#228833")
unset colorbox
plot "{dat}" using (($2 * 0.01) ** 0.5):1:(0.01):2:($1 - 0.35):($1 + 0.35):5 with boxxyerror lc palette, \\
     "{dat}" using 2:1:3:4 with xerrorbars lc rgb "black" pt 7 ps 0.4
"""
    p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"gnuplot failed: {p.stderr}")
    return svg


def write_benchmarks_doc(md: str) -> None:
    with open(BENCHMARKS_DOC) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise RuntimeError(f"docs/benchmarks.md has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(BENCHMARKS_DOC, "w") as f:
        f.write(head + BEGIN + "\n" + md + END + tail)


def render(doc: dict, outdir: str, update_docs: bool = False) -> None:
    md = markdown(doc)
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write(md)
    svg = plot(doc, outdir)
    print(md, flush=True)
    if svg:
        print(f"plot: {svg}", flush=True)
    if update_docs:
        write_benchmarks_doc(md)


if __name__ == "__main__":
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") \
        else os.path.dirname(os.path.abspath(path))
    with open(path) as fh:
        render(json.load(fh), out, update_docs="--update-docs" in sys.argv)
