"""The Debian package: built from the binary under test, installed in a fresh Debian 12 root.

scripts/build-deb.sh packages the binary (a debug build here: the Swift runtime's libraries travel
under /usr/lib/herald; `make deb` packages a release build with the runtime linked in statically)
with fast compression, and scripts/check-deb.sh installs it with apt-get in a new copy of a
debootstrap'd minbase root, runs docs/operations.md's install and keys blocks as written (the last
line being `herald check --offline`), carries out the installed unit as systemd would (as the herald
user, with its credentials), delivers a push to a `herald sandbox` and purges the package. About a
minute, plus one for the first debootstrap on a machine (kept under /var/tmp).

Skipped only when not root (chroot and mounts need it) or when the Debian mirror cannot be reached
(debootstrap and apt-get fetch from it).

Run: .venv/bin/python -m pytest -q Tests/interop/test_deb.py (HERALD_BIN overrides the binary).
"""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from test_relay_crash import herald  # noqa: F401  (a fixture)

REPO = Path(__file__).resolve().parents[2]
MIRROR = os.environ.get("HERALD_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def mirror_unreachable() -> str | None:
    url = f"{MIRROR}/dists/bookworm/Release"
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler())
        with opener.open(urllib.request.Request(url, method="HEAD"), timeout=10) as answer:
            return None if answer.status == 200 else f"{url} answered {answer.status}"
    except OSError as error:
        return f"{url}: {error}"


def test_the_package_installs_checks_serves_and_delivers(herald: Path, tmp_path: Path):  # noqa: F811
    if os.geteuid() != 0:
        pytest.skip("scripts/check-deb.sh needs root (debootstrap, chroot, bind mounts)")
    unreachable = mirror_unreachable()
    if unreachable:
        pytest.skip(f"the Debian mirror debootstrap and apt-get need is unreachable: {unreachable}")

    built = subprocess.run(
        [str(REPO / "scripts/build-deb.sh"), str(herald), str(tmp_path)],
        env={**os.environ, "HERALD_DEB_COMPRESS": "-Zgzip -z1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    deb = Path(built.stdout.strip().splitlines()[-1])
    version = subprocess.run([str(herald), "--version"], capture_output=True, text=True).stdout.strip()
    assert deb.name == f"herald_{version}_amd64.deb", deb
    fields = subprocess.run(["dpkg-deb", "--field", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "libsodium23" in fields and "libsqlite3-0" in fields and "ca-certificates" in fields, fields

    checked = subprocess.run(
        [str(REPO / "scripts/check-deb.sh"), str(deb)], capture_output=True, text=True, timeout=900
    )
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr[-6000:]
    assert "check-deb [" in checked.stdout and "passed: " in checked.stdout, checked.stdout
