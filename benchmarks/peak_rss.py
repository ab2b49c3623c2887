"""Run a command and report its wall time and the peak resident memory of its whole process tree
(the sum over the command and all its descendants, sampled from /proc every ``--every`` seconds),
the largest single process, and the peak of each role (the command itself, its child JVMs, its
Python workers; each role's peak summed over its processes at one instant). Linux only; no
psutil needed.

    python benchmarks/peak_rss.py -- nteval index a.xml.gz b.xml.gz --out /tmp/x --quiet
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _role(pid: int, root: int) -> str:
    """What a process of the tree is: the command itself, a child JVM, or a Python worker."""
    if pid == root:
        return "main"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().decode(errors="replace")
    except OSError:
        return "other"
    return "java" if "java" in cmd.split("\0", 1)[0] else ("python-worker" if "python" in cmd else "other")


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants, as /proc shows them now."""
    kids = _children()
    todo, out = [root], []
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def tree_rss(root: int) -> tuple[int, int, dict[str, int]]:
    """(sum, max, sum per role) of RSS bytes over ``root`` and its descendants."""
    total, biggest, roles = 0, 0, {}
    for pid in tree_pids(root):
        r = _rss(pid)
        total += r
        biggest = max(biggest, r)
        role = _role(pid, root)
        roles[role] = roles.get(role, 0) + r
    return total, biggest, roles


def measure(cmd: list[str], every: float = 0.05) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peak_tree = peak_one = 0
    peak_roles: dict[str, int] = {}
    while proc.poll() is None:
        total, biggest, roles = tree_rss(proc.pid)
        peak_tree, peak_one = max(peak_tree, total), max(peak_one, biggest)
        for role, r in roles.items():
            peak_roles[role] = max(peak_roles.get(role, 0), r)
        time.sleep(every)
    return {"returncode": proc.returncode, "seconds": round(time.perf_counter() - t0, 2),
            "peak_tree_rss_mb": round(peak_tree / 2**20, 1), "peak_process_rss_mb": round(peak_one / 2**20, 1),
            "peak_by_role_mb": {k: round(v / 2**20, 1) for k, v in sorted(peak_roles.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=0.05)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    res = measure(cmd, a.every)
    print(json.dumps(res), file=sys.stderr)
    sys.exit(res["returncode"])


if __name__ == "__main__":
    main()
