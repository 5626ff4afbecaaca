#!/usr/bin/env python3
"""contrib/vipd-replace-node's decisions, each outcome its exit code (no root, seconds).

The real walk (etcd 3 -> 4 -> 3 and 3 -> 2 -> 3 against real etcd members, kubelets and
apiservers) is e2e_cluster_replace. What a real cluster cannot show cheaply is every way a
replacement must stop: the guard refusing, vipd unreachable, an even member count, a member
still joining, and --withdraw-via api (a fake kubectl: the annotation, then the VipdNode's
Announcing condition). Here the script's --on is this file run as a fleet of its own (`fleet STATE NODE
COMMAND`), which answers the two things the script asks a node for, etcd's member API (the curl
it runs) and vipctl, from a JSON state file, and records every call; --join and --stop are
commands that record themselves too. Each case asserts the exit code, the message, and what was
and was not done (no member removed, no machine stopped).
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "contrib", "vipd-replace-node")


def member(name: str, started: bool = True) -> dict:
    return {"ID": str(abs(hash(name)) % 10**12), "name": name if started else "",
            "peerURLs": [f"https://{name}:2380"],
            "clientURLs": [f"https://{name}:2379"] if started else []}


def fleet(state_path: str, node: str, command: str) -> int:
    """One call of --on: answers from the state file and records the call."""
    with open(state_path) as f:
        state = json.load(f)
    argv = shlex.split(command)
    state["calls"].append([node] + argv[:2])
    rc, out = 0, ""
    if argv[0] == "curl":
        call = argv[argv.index("-X") + 2].rsplit("/", 1)[1]
        body = json.loads(argv[argv.index("-d") + 1])
        members = state["members"]
        if call == "add":
            new = {"ID": "99", "name": "", "peerURLs": body["peerURLs"], "clientURLs": []}
            members.append(new)
            out = json.dumps({"member": new, "members": members})
        elif call == "remove":
            state["members"] = [m for m in members if m["ID"] != body["ID"]]
            out = "{}"
        else:
            out = json.dumps({"members": members})
    elif argv[1] == "withdraw":
        rc = state["withdraw_rc"]
    elif argv[1] == "status":
        out = json.dumps({"vips": [{"address": "203.0.113.10/32",
                                    "announced": state["announces"]}]})
    with open(state_path, "w") as f:
        json.dump(state, f)
    print(out)
    return rc


def kubectl(state_path: str, argv: list[str]) -> int:
    """--kubectl for --withdraw-via api: the Node's annotation and the VipdNode's Announcing
    condition, which says state["api_reason"] once the node is annotated."""
    with open(state_path) as f:
        state = json.load(f)
    state["calls"].append(["kubectl"] + argv[:1] + argv[-1:])
    out = ""
    if argv[0] == "annotate":
        state["annotated"] = not argv[-1].endswith("-")
    elif argv[:2] == ["get", "vipdnode"]:
        reason = state["api_reason"] if state.get("annotated") else "Announced"
        out = json.dumps({"status": {"conditions": [
            {"type": "Announcing", "status": "False" if reason == "WithdrawnByNode" else "True",
             "reason": reason, "message": f"{reason} (the fake)"}]}})
    with open(state_path, "w") as f:
        json.dump(state, f)
    print(out)
    return 0


def hook(what: str, state_path: str) -> int:
    """--join (NEW's member starts: it takes the name the script gave it, as etcd does at
    start) or --stop, recorded."""
    with open(state_path) as f:
        state = json.load(f)
    if what == "join":
        joining = [m for m in state["members"] if not m["name"]][0]
        joining["name"], joining["clientURLs"] = os.environ["VIPD_NODE"], ["https://new:2379"]
        state["calls"].append(["join", os.environ["VIPD_ETCD_INITIAL_CLUSTER"]])
    else:
        state["calls"].append(["stop", os.environ["VIPD_NODE"]])
    with open(state_path, "w") as f:
        json.dump(state, f)
    return 0


def run(tmp: str, order: str, members: list[dict], withdraw_rc: int = 0,
        announces: bool = True, old: str = "node1", new: str = "node4",
        api_reason: str = "") -> tuple[int, str, dict]:
    """api_reason: --withdraw-via api, and the reason OLD's VipdNode gives once annotated."""
    state_path = os.path.join(tmp, "state.json")
    with open(state_path, "w") as f:
        json.dump({"members": members, "withdraw_rc": withdraw_rc, "announces": announces,
                   "api_reason": api_reason, "calls": []}, f)
    me = shlex.join([sys.executable, os.path.abspath(__file__)])
    join, stop = (f"{me} {hook} {shlex.quote(state_path)}" for hook in ("join", "stop"))
    p = subprocess.run([sys.executable, SCRIPT, order, old, f"{new}=192.0.2.14", "--via", "node2",
                        "--on", f"{me} fleet {shlex.quote(state_path)}", "--join", join,
                        "--stop", stop, "--timeout", "10"] +
                       (["--withdraw-via", "api", "--kubectl",
                         f"{me} kubectl {shlex.quote(state_path)}", "--withdraw-timeout", "3"]
                        if api_reason else []),
                       capture_output=True, text=True, timeout=60)
    with open(state_path) as f:
        return p.returncode, p.stderr, json.load(f)


def did(state: dict, what: str) -> bool:
    return any(what in " ".join(c) for c in state["calls"])


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}")


def test() -> None:
    three = [member("node1"), member("node2"), member("node3")]
    with tempfile.TemporaryDirectory() as tmp:
        rc, err, st = run(tmp, "surge", three)
        check(rc == 0 and [m["name"] for m in st["members"]] == ["node2", "node3", "node4"],
              f"surge: node4 in, node1 out: {rc} {err}")
        order = [c[0] if c[0] in ("join", "stop") else " ".join(c) for c in st["calls"]
                 if c[0] in ("join", "stop") or "withdraw" in c or "curl" in c[1:2]]
        joined, withdrew, stopped = (next(i for i, c in enumerate(st["calls"]) if w in " ".join(c))
                                     for w in ("join", "withdraw", "stop"))
        check(joined < withdrew < stopped, f"surge order: join, withdraw, stop: {order}")
        initial = next(c[1] for c in st["calls"] if c[0] == "join")
        check(initial == "node1=https://node1:2380,node2=https://node2:2380,"
              "node3=https://node3:2380,node4=https://192.0.2.14:2380",
              f"--join gets the initial cluster with NEW's peer URL: {initial}")

        rc, err, st = run(tmp, "replace", three)
        withdrew, stopped, joined = (next(i for i, c in enumerate(st["calls"]) if w in " ".join(c))
                                     for w in ("withdraw", "stop", "join"))
        check(rc == 0 and withdrew < stopped < joined, f"replace: withdraw, stop, then join: {rc}")

        rc, err, st = run(tmp, "replace", three, withdraw_rc=4)
        check(rc == 4 and "among the last nodes" in err and len(st["members"]) == 3
              and not did(st, "stop"), f"guard refused: exit 4, member kept, nothing stopped: "
              f"{rc} {err}")
        rc, err, st = run(tmp, "surge", three, withdraw_rc=4)
        check(rc == 4 and "even count" in err and len(st["members"]) == 4 and not did(st, "stop"),
              f"guard refused in a surge: exit 4, the message says the count is even: {rc} {err}")
        rc, err, st = run(tmp, "replace", three, withdraw_rc=3)
        check(rc == 3 and "may still be in the fabric's route" in err and len(st["members"]) == 3
              and not did(st, "stop"), f"vipd unreachable: exit 3, nothing changed: {rc} {err}")
        rc, err, st = run(tmp, "replace", three, withdraw_rc=1)
        check(rc == 0 and did(st, "stop"), f"withdrawn, acknowledgement slow (1): goes on: {rc}")

        # --withdraw-via api (issue 41): the annotation, then the VipdNode's word.
        rc, err, st = run(tmp, "replace", three, api_reason="WithdrawnByNode")
        check(rc == 0 and did(st, "kubectl annotate vipd.io/withdraw=replaced by node4") and
              not did(st, "node1 vipctl withdraw") and did(st, "stop") and st["annotated"],
              f"through the API: annotated, retired, nothing run on OLD for it: {rc} {err}")
        rc, err, st = run(tmp, "replace", three, api_reason="WithdrawRefused")
        check(rc == 4 and "WithdrawRefused" in err and not st["annotated"] and
              len(st["members"]) == 3 and not did(st, "stop"),
              f"through the API, refused: exit 4, the annotation taken back: {rc} {err}")
        rc, err, st = run(tmp, "replace", three, api_reason="Announced")
        check(rc == 3 and "did not say WithdrawnByNode" in err and not st["annotated"] and
              not did(st, "stop"), f"through the API, no answer: exit 3, taken back: {rc} {err}")

        rc, err, st = run(tmp, "surge", three + [member("node5")])
        check(rc == 3 and "even count" in err and not did(st, "withdraw") and not did(st, "join"),
              f"an even member count: exit 3 before anything: {rc} {err}")
        rc, err, st = run(tmp, "surge", three[:2] + [member("node3", started=False)])
        check(rc == 3 and "still joining" in err and not did(st, "join"),
              f"a member still joining: exit 3: {rc} {err}")
        rc, err, st = run(tmp, "surge", three, new="node3")
        check(rc == 3 and "already an etcd member" in err and not did(st, "withdraw"),
              f"NEW already a member: exit 3: {rc} {err}")
        rc, err, st = run(tmp, "surge", three, old="node9")
        check(rc == 3 and "not an etcd member" in err and not did(st, "join"),
              f"OLD not a member: exit 3: {rc} {err}")
        rc, err, st = run(tmp, "surge", three, announces=False)
        check(rc == 5 and "announce" in err and not did(st, "withdraw"),
              f"NEW never announces: exit 5 (half way), OLD not withdrawn: {rc} {err}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "fleet":
        sys.exit(fleet(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) > 1 and sys.argv[1] == "kubectl":
        sys.exit(kubectl(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) > 1 and sys.argv[1] in ("join", "stop"):
        sys.exit(hook(sys.argv[1], sys.argv[2]))
    test()
