#!/usr/bin/env python3
"""Shares of a `perf record -g` profile: by process, or, for one process, by what its stacks pass through.

    scripts/perf-share.py perf.data                      # % of samples per process (pid, command)
    scripts/perf-share.py perf.data PID NAME=REGEX ...   # % of PID's samples whose stack has a frame matching REGEX

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


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    data = sys.argv[1]
    if len(sys.argv) == 2:
        lines = subprocess.run(
            ["perf", "script", "-i", data, "-F", "comm,pid"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        counts, names = collections.Counter(), {}
        for line in lines:
            if line.strip():
                name, _, pid = line.strip().rpartition(" ")
                counts[pid] += 1
                names.setdefault(pid, name.strip())  # a process's first thread seen names it
        total = sum(counts.values())
        for pid, count in counts.most_common(12):
            print(f"{100 * count / total:5.1f}%  {pid:>7}  {names[pid]}")
        return
    pid, patterns = sys.argv[2], [argument.split("=", 1) for argument in sys.argv[3:]]
    samples = stacks(data, pid)
    print(f"{len(samples)} samples of {pid}")
    for name, pattern in patterns:
        expression = re.compile(pattern)
        hits = sum(1 for sample in samples if any(expression.search(frame) for frame in sample[1:]))
        print(f"{100 * hits / max(1, len(samples)):5.1f}%  {name}")


if __name__ == "__main__":
    main()
