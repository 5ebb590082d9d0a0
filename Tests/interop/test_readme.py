"""The README's walkthroughs, run as written.

Every fenced ```sh block that follows a `<!-- walkthrough: NAME -->` comment in README.md or
docs/*.md is a walkthrough block. The blocks of one name, in the order the documents give them,
run as one bash script (`set -e`; later blocks use the variables of earlier ones, as a reader's
shell would), in a scratch copy of the repository root whose `.build/debug/herald` is the built
binary and whose `.venv/bin/python` is this Python (it has PyNaCl); a block marked
`<!-- walkthrough: NAME, in an empty directory -->` runs in an empty directory instead, with
`herald` on the PATH. A block marked `…, a transcript -->` is a shell session: its `$ ` lines run
(without `set -e`, as a reader's shell would carry on), and the lines it shows as their output
must appear, but for those that differ from run to run (ids, times, paths). A `# → TEXT` line says what
the command before it prints: the script's output must contain TEXT, where `…` stands for
anything (spaces are compared loosely).

What each walkthrough needs first is started as the documents say: for `serve`, `make run`'s
`herald serve` (the Makefile's run target, without the build) on the documented ports (8080 and
the sandbox's 2196-2198), so no other Herald may hold those ports while this runs; `make build`
in a block is a no-op (the binary is built). Walkthroughs run in the order of their first block.

Run: python3 -m pytest -q Tests/interop/test_readme.py   (HERALD_BIN overrides the binary)
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERALD = os.path.abspath(os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald")))
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"<!-- walkthrough: ([\w-]+)(, in an empty directory)?(, a transcript)? -->\s*\n```sh\n(.*?)\n```", re.S
)
EXPECTED = re.compile(r"^\s*# → (.*)$", re.M)
# Each walkthrough's time limit; the whole file stays well under two minutes.
LIMIT_SECONDS = 45


@dataclass
class Walkthrough:
    name: str
    # Run in an empty directory (with `herald` on the PATH) rather than at the repository root.
    empty_directory: bool = False
    # A shell session: `$ ` commands, each followed by what it printed (see `transcript`).
    transcript: bool = False
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (where, text)

    @property
    def script(self) -> str:
        if self.transcript:
            return "\n".join(f"# --- {where}\n" + "\n".join(transcript(text)[0]) for where, text in self.blocks)
        return "set -e\n" + "\n".join(f"# --- {where}\n{text}" for where, text in self.blocks)

    @property
    def expected(self) -> list[str]:
        if self.transcript:
            return [line for _, text in self.blocks for line in transcript(text)[1]]
        return [line for _, text in self.blocks for line in EXPECTED.findall(text)]


# In a transcript's output, what differs from run to run: numbers of 4 digits or more (ids, times,
# tokens, lengths), paths, dates.
VARYING = re.compile(r"\d{4,}|/tmp/|[Dd]ate: |[0-9a-f]{8}-[0-9a-f]{4}")


def transcript(text: str) -> tuple[list[str], list[str]]:
    """A shell session's commands (a `$ ` line, with the lines a trailing backslash or an open
    function body carries on), and the lines of its output that are the same on every run."""
    commands: list[str] = []
    output: list[str] = []
    carry = False
    depth = 0
    for line in text.split("\n"):
        if carry or depth > 0:
            commands.append(line)
            carry = line.endswith("\\")
            depth += (line.strip() == "}") * -1
            continue
        if line.startswith("$ "):
            command = line[2:]
            commands.append(command)
            carry = command.endswith("\\")
            depth = 1 if re.search(r"\(\)\s*\{\s*(#.*)?$", command) else 0
        elif line.strip() and not VARYING.search(line):
            output.append(line)
    return commands, output


def walkthroughs() -> list[Walkthrough]:
    found: dict[str, Walkthrough] = {}
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            where = f"{document.relative_to(ROOT)}:{line}"
            walkthrough = found.setdefault(
                match.group(1), Walkthrough(match.group(1), bool(match.group(2)), bool(match.group(3)))
            )
            walkthrough.blocks.append((where, match.group(4)))
    return list(found.values())


def pattern(expected: str) -> re.Pattern[str]:
    """`…` is anything; a run of spaces is any run of spaces."""
    parts = [r"\s+".join(re.escape(word) for word in piece.split()) for piece in expected.split("…")]
    return re.compile(".*?".join(parts), re.S)


def loose(text: str) -> str:
    return " ".join(text.split())


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A fresh clone's root: the documents and scripts, the built binary, no keys, no data."""
    root = tmp_path / "herald"
    root.mkdir()
    for name in ["README.md", "Makefile"]:
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "scripts", root / "scripts")
    (root / "keys").mkdir()
    shutil.copy(ROOT / "keys" / "README.md", root / "keys" / "README.md")
    (root / ".build" / "debug").mkdir(parents=True)
    (root / ".build" / "debug" / "herald").symlink_to(HERALD)
    (root / ".venv" / "bin").mkdir(parents=True)
    # A script, not a symlink: a virtual environment's python found through a link elsewhere does
    # not see its pyvenv.cfg (so not its packages, PyNaCl among them); run by its own path, it does.
    python = root / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    # `make build` in a block: the binary is built already; anything else is not for a test.
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "make").write_text('#!/bin/sh\n[ "$*" = build ] && exit 0\necho "make $* is not run here" >&2; exit 1\n')
    (shims / "make").chmod(0o755)
    return root


def environment(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    # `make` is the shim; `herald` is the built binary, for the documents that say "on the PATH".
    env["PATH"] = f"{scratch.parent / 'bin'}:{scratch / '.build' / 'debug'}:{env['PATH']}"
    for name in ["HERALD_MASTER_KEY", "HERALD_API_KEY", "HERALD_PROVIDER_SECRET", "HERALD_DATABASE_URL"]:
        env.pop(name, None)
    return env


def start_serve(scratch: Path, log: Path) -> subprocess.Popen[bytes]:
    """What `make run` does once built: `make keys`, then `herald serve`; returns once it listens."""
    env = environment(scratch)
    herald = str(scratch / ".build" / "debug" / "herald")
    subprocess.run([herald, "keys", "master", "--out", "keys/master.key"], cwd=scratch, env=env, check=True,
                   capture_output=True)
    subprocess.run([herald, "keys", "apns", "--out", "keys"], cwd=scratch, env=env, check=True, capture_output=True)
    output = log.open("wb")
    serve = subprocess.Popen([herald, "serve"], cwd=scratch, env=env, stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            pytest.fail(f"herald serve exited at start:\n{log.read_text(errors='replace')}")
        if "  relay " in log.read_text(errors="replace"):
            return serve
        time.sleep(0.1)
    serve.kill()
    pytest.fail(f"herald serve printed no banner within 30 s:\n{log.read_text(errors='replace')}")


def run_walkthrough(walkthrough: Walkthrough, scratch: Path) -> str:
    # What a block leaves in the background (a sandbox, a provider) ends with the script.
    script = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + walkthrough.script + "\n"
    directory = scratch
    if walkthrough.empty_directory:
        directory = scratch.parent / f"empty-{walkthrough.name}"
        directory.mkdir()
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=directory,
        env=environment(scratch),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=LIMIT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"walkthrough {walkthrough.name} did not end within {LIMIT_SECONDS} s:\n{output.decode(errors='replace')}")
    finally:
        # Whatever the blocks left running in the background (a sandbox, a provider, a device).
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    text = output.decode(errors="replace")
    assert process.returncode == 0, f"walkthrough {walkthrough.name} failed (exit {process.returncode}):\n{text}"
    return text


def check_outputs(walkthrough: Walkthrough, output: str) -> None:
    flat = loose(output)
    missing = [line for line in walkthrough.expected if not pattern(loose(line)).search(flat)]
    assert not missing, f"walkthrough {walkthrough.name}: not printed as documented: {missing}\n--- output:\n{output}"


def test_the_documents_mark_their_walkthroughs() -> None:
    names = [walkthrough.name for walkthrough in walkthroughs()]
    assert {"serve", "simulate", "sandbox"} <= set(names), names
    for walkthrough in walkthroughs():
        assert walkthrough.expected, f"{walkthrough.name} documents no output (no `# →` line)"


def test_the_walkthroughs_run_as_written(scratch: Path, tmp_path: Path) -> None:
    busy = [port for port in (8080, 2193, 2194, 2195, 2196, 2197, 2198, 2199) if not port_is_free(port)]
    if busy:
        pytest.fail(f"the README's ports {busy} are taken: stop the Herald that holds them and run again")
    for walkthrough in walkthroughs():
        serve = start_serve(scratch, tmp_path / "serve.log") if walkthrough.name == "serve" else None
        try:
            output = run_walkthrough(walkthrough, scratch)
        finally:
            if serve is not None:
                serve.send_signal(signal.SIGTERM)
                assert serve.wait(timeout=20) == 0, (tmp_path / "serve.log").read_text(errors="replace")
        check_outputs(walkthrough, output)
