#!/usr/bin/env python3
"""Nothing in the repository cites a file it does not contain (issue 31).

Every tracked text file is read for paths into the tree (`daemon/health/checker.h`,
`tests/e2e/test_drain.py`, `docs/testing.md#running-one-test`) and every relative Markdown link;
each must name a tracked file or folder, from the top or from the citing file's folder (what a
meson.build's `files()` names). A path also counts when it names a file meson generates from one
that is tracked (`contrib/vipd.service` from `vipd.service.in`, a header a meson.build declares
as an output), a stem whose `.h` or `.cc` exists (`bgp/session_fsm`), or a prefix
(`tests/e2e/test_`). CHANGELOG.md is history and may name files that are gone. Exit 1 with one
line per dead citation, naming the citing file and line.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.environ.get("VIPD_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOP = ("bgp", "bfd", "netlink", "config", "policy", "doctor", "bootstrap", "daemon", "tests",
       "docs", "scripts", "manifests", "bench", "contrib", "cli", ".ci")
# A path into the tree: starts at a top folder, not inside another path or a system include
# (<netlink/route/addr.h> is libnl's).
PATH = re.compile(r"(?<![\w./<-])((?:" + "|".join(map(re.escape, TOP)) +
                  r")/[\w.{},/-]*[\w}/])")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
TEXT = re.compile(r"(\.(h|cc|py|md|sh|build|in|yaml|txt|json)|Containerfile|/run)$")


def tracked() -> tuple[set[str], set[str]]:
    out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    files = {f for f in out if f}
    dirs = set()
    for f in files:
        while "/" in f:
            f = f.rsplit("/", 1)[0]
            dirs.add(f)
    return files, dirs


def generated(files: set[str]) -> set[str]:
    """Files meson makes: X from a tracked X.in, and every output: a meson.build declares."""
    out = {f[:-3] for f in files if f.endswith(".in")}
    for f in files:
        if os.path.basename(f) != "meson.build":
            continue
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        for name in re.findall(r"output\s*:\s*\[?\s*'([^']+)'", text):
            out.add(os.path.join(os.path.dirname(f), name))
    return out


def expand(path: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",")
            for p in expand(path[:m.start()] + alt + path[m.end():])]


def exists(path: str, files: set[str], dirs: set[str], made: set[str]) -> bool:
    path = path.rstrip(".")
    if "{" in path and "}" not in path:
        path = path[:path.index("{")]  # a brace list the line breaks or spaces: its folder
    if path.endswith(("_", "/")) or any(re.fullmatch(r"[A-Z][A-Z_]+", c) for c in path.split("/")):
        return True  # a prefix or a placeholder (tests/e2e/test_, tests/fuzz/corpus/TARGET)
    return all(p in files or p in dirs or p in made or p + ".h" in files or p + ".cc" in files
               for p in expand(path))


def main() -> int:
    files, dirs = tracked()
    made = generated(files)
    dead = []
    for f in sorted(files):
        if f == "CHANGELOG.md" or not TEXT.search(f) or "/corpus/" in f:
            continue
        try:
            lines = open(os.path.join(ROOT, f), encoding="utf-8").read().split("\n")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for n, line in enumerate(lines, 1):
            for m in PATH.finditer(line):
                here = os.path.join(os.path.dirname(f), m.group(1))  # a meson.build's files()
                if not (exists(m.group(1), files, dirs, made) or
                        exists(here, files, dirs, made)):
                    dead.append(f"{f}:{n}: cites {m.group(1)}, which is not in the repository")
            if f.endswith(".md"):
                for m in LINK.finditer(line):
                    link = m.group(1)
                    if re.match(r"[a-z]+:", link):
                        continue  # https:, mailto:
                    target = os.path.normpath(os.path.join(os.path.dirname(f), link))
                    if not exists(target, files, dirs, made):
                        dead.append(f"{f}:{n}: links to {link}, which is not in the repository")
    for d in dead:
        print(d)
    print(f"{len(dead)} dead citations in {len(files)} tracked files")
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
