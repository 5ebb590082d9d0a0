#!/usr/bin/env python3
"""Shares of a `perf record -g` profile: by process, or, for one process, by what its stacks pass through.

    scripts/perf-share.py perf.data                        # % of samples per process (pid, a thread's name)
    scripts/perf-share.py perf.data WHO NAME=REGEX ...     # % of WHO's samples whose stack has a frame matching REGEX

WHO: pids (comma-separated), `top` (the process with the most samples), or `comm:NAME` (every
process with a thread named NAME, e.g. comm:postgres for all of PostgreSQL's backends).

A sample counts for every pattern one of its frames matches (inclusive, as `perf report --children`),
so the shares of nested parts overlap and do not add up to 100%.
"""

import collections
import re
import subprocess
import sys


def stacks(data: str, pid: str | None) -> list[list[str]]:
    command = ["perf", "script", "-i", data, "-F", "pid,ip,sym"]
    if pid:
        command += ["--pid", pid]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    samples, current = [], None
    for line in out.splitlines():
        if not line.strip():
            if current is not None:
                samples.append(current)
            current = None
        elif not line.startswith("\t"):
            current = [line.strip()]  # the pid
        elif current is not None:
            parts = line.strip().split(" ", 1)
            current.append(parts[1] if len(parts) > 1 else "")
    if current is not None:
        samples.append(current)
    return samples


def processes(data: str) -> tuple[collections.Counter, dict[str, set[str]]]:
    """Samples per pid, and the thread names seen in each."""
    lines = subprocess.run(
        ["perf", "script", "-i", data, "-F", "comm,pid"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    counts, names = collections.Counter(), collections.defaultdict(set)
    for line in lines:
        if line.strip():
            name, _, pid = line.strip().rpartition(" ")
            counts[pid] += 1
            names[pid].add(name.strip())
    return counts, names


def resolve(data: str, who: str) -> str:
    if who == "top" or who.startswith("comm:"):
        counts, names = processes(data)
        if who == "top":
            return counts.most_common(1)[0][0]
        chosen = [pid for pid in counts if who[len("comm:"):] in names[pid]]
        if not chosen:
            sys.exit(f"no process with a thread named {who[len('comm:'):]}")
        return ",".join(sorted(chosen))
    return who


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    data = sys.argv[1]
    if len(sys.argv) == 2:
        counts, names = processes(data)
        total = sum(counts.values())
        for pid, count in counts.most_common(12):
            print(f"{100 * count / total:5.1f}%  {pid:>7}  {', '.join(sorted(names[pid]))[:60]}")
        return
    who, patterns = sys.argv[2], [argument.split("=", 1) for argument in sys.argv[3:]]
    pid = resolve(data, who)
    samples = stacks(data, pid)
    print(f"{len(samples)} samples of {who} (pid {pid})")
    for name, pattern in patterns:
        expression = re.compile(pattern)
        hits = sum(1 for sample in samples if any(expression.search(frame) for frame in sample[1:]))
        print(f"{100 * hits / max(1, len(samples)):5.1f}%  {name}")


if __name__ == "__main__":
    main()
