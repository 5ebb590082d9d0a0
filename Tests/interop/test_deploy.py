"""deploy/herald.service as systemd would run it, and docs/operations.md's steps as written.

The container the tests run in has no systemd as process 1, so this test does what systemd does
for the unit, from the unit's own lines: it installs as docs/operations.md's install block says
(that block, run with its paths moved under a scratch root), copies each `LoadCredential=` file
into a credentials directory (mode 0400), expands `%d` and `%S`, sets `Environment=`, makes the
`WorkingDirectory=`, runs `ExecStartPre=` (it must pass) and then `ExecStart=` with the APNs and
FCM hosts pointed at a real `herald sandbox` through the environment (the configuration itself is
deploy/herald.yaml, unchanged). The service must log JSON only, answer /health/ready, deliver a
push, take an online backup (operations.md, "Backups") and drain on SIGTERM. The unit's hardening
options themselves are checked by `systemd-analyze verify` (scripts/check-deploy.sh).

Run: .venv/bin/python -m pytest -q Tests/interop/test_deploy.py (HERALD_BIN overrides the binary).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from pathlib import Path

from nacl.public import PrivateKey

from test_operator import json_records, wait_for_text
from test_relay_crash import (  # noqa: F401  (herald and workdir are fixtures)
    call,
    free_port,
    herald,
    stop,
    workdir,
)
from waiting import eventually

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "deploy" / "herald.service"
OPERATIONS = REPO / "docs" / "operations.md"
STARTUP_TIMEOUT = 45.0
# What deploy/herald.yaml names: the app, its team and the key id of its .p8.
BUNDLE_ID = "com.example.chat"
TEAM_ID = "ABCDE12345"
KEY_ID = "ABC123DEFG"


def unit_lines(path: Path) -> list[tuple[str, str]]:
    """The unit's `Key=value` lines, in order (comments and section headers left out)."""
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        lines.append((key, value))
    return lines


def install_block() -> str:
    """The install block of docs/operations.md, as written there."""
    text = OPERATIONS.read_text()
    match = re.search(r"<!-- install -->\n```sh\n(.*?)```", text, re.S)
    assert match, "docs/operations.md has no install block"
    return match.group(1)


def test_the_unit_runs_herald_as_documented(herald: Path, workdir):  # noqa: F811
    root, processes = workdir
    # What the operator brings: an APNs key and an FCM service account (development ones, from
    # the sandbox's side), named as Apple and Google name them.
    downloads = root / "downloads"
    for argv in (
        ["keys", "apns", "--out", str(downloads), "--key-id", KEY_ID, "--team-id", TEAM_ID],
        ["keys", "fcm", "--out", str(downloads)],
    ):
        made = subprocess.run([str(herald), *argv], capture_output=True, text=True, timeout=60, cwd=root)
        assert made.returncode == 0, made.stderr
    shutil.copy(downloads / "fcm-service-account.json", downloads / "firebase-service-account.json")

    # The install block, with / moved to the scratch root and the release build replaced by the
    # binary under test (a release build is not what this test is about).
    scratch = root / "root"
    (scratch / "usr/local/bin").mkdir(parents=True)
    (scratch / "etc/systemd/system").mkdir(parents=True)
    script = install_block()
    assert "swift build -c release\n" in script
    script = script.replace("swift build -c release\n", "")
    script = script.replace(".build/release/herald", str(herald))
    script = script.replace("/path/to/AuthKey_ABC123DEFG.p8", str(downloads / f"AuthKey_{KEY_ID}.p8"))
    script = script.replace("/path/to/firebase-service-account.json", str(downloads / "firebase-service-account.json"))
    script = script.replace("systemd-analyze verify", "test -f")
    for directory in ("/etc/", "/usr/local/bin/"):
        script = script.replace(" " + directory, f" {scratch}{directory}")
    script = re.sub(r"(^|[;(])\s*herald ", rf"\1{scratch}/usr/local/bin/herald ", script, flags=re.M)
    installed = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert installed.returncode == 0, f"{script}\n{installed.stdout}\n{installed.stderr}"
    etc = scratch / "etc/herald"
    assert oct(etc.stat().st_mode & 0o777) == "0o700"
    for name in ("herald.yaml", "apns.p8", "fcm-service-account.json", "master.key", "api.key"):
        assert oct((etc / name).stat().st_mode & 0o777) == "0o600", name
    assert (etc / "herald.yaml").read_text() == (REPO / "deploy/herald.yaml").read_text()

    # What systemd does for the unit.
    directives = unit_lines(scratch / "etc/systemd/system/herald.service")
    credentials = scratch / "run/credentials/herald.service"
    credentials.mkdir(parents=True)
    state = scratch / "var/lib"

    def expand(value: str) -> str:
        return value.replace("%d", str(credentials)).replace("%S", str(state)).replace(
            "/usr/local/bin/herald", str(scratch / "usr/local/bin/herald")
        )

    for key, value in directives:
        if key == "LoadCredential":
            name, _, source = value.partition(":")
            shutil.copy(scratch / source.lstrip("/"), credentials / name)
            (credentials / name).chmod(0o400)
    environment = dict(value.split("=", 1) for key, value in directives if key == "Environment")
    environment = {name: expand(value) for name, value in environment.items()}
    directories = [value for key, value in directives if key == "StateDirectory"]
    assert directories == ["herald"]
    working = Path(expand(next(value for key, value in directives if key == "WorkingDirectory")))
    assert working == state / "herald"
    working.mkdir(parents=True, mode=0o700)

    # Apple and Google are the sandbox here; the configuration file stays as shipped.
    sandbox_keys = root / "sandbox-keys"
    shutil.copytree(downloads, sandbox_keys)
    apns_port, fcm_port, control_port, relay_port = free_port(), free_port(), free_port(), free_port()
    sandbox = processes.start(
        "sandbox",
        [
            str(herald), "sandbox", "--log-level", "warning",
            "--apns-port", str(apns_port), "--fcm-port", str(fcm_port), "--control-port", str(control_port),
            "--hms-port", "0",
            "--keys-dir", str(sandbox_keys), "--app", f"{BUNDLE_ID}:{TEAM_ID}",
        ],  # fmt: skip
        cwd=root,
    )
    sandbox.wait_for_line("  control API", STARTUP_TIMEOUT)
    ca = sandbox_keys / "sandbox-ca.pem"
    environment.update(
        {
            "HERALD_HOST": "127.0.0.1",
            "HERALD_PORT": str(relay_port),
            "HERALD_APNS_URL": f"https://127.0.0.1:{apns_port}",
            "HERALD_APNS_CA": str(ca),
            "HERALD_FCM_URL": f"https://127.0.0.1:{fcm_port}",
            "HERALD_FCM_CA": str(ca),
        }
    )
    env_argv = ["env", "-i", f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}"] + [
        f"{name}={value}" for name, value in environment.items()
    ]

    pre = [expand(value) for key, value in directives if key == "ExecStartPre"]
    assert len(pre) == 1
    checked = subprocess.run(env_argv + pre[0].split(), cwd=working, capture_output=True, text=True, timeout=90)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines and all(line.startswith(("ok   ", "skip ")) for line in lines), checked.stdout
    # Offline before a start: a node without egress at boot still starts; its keys and database are checked.
    assert f"skip apns https://127.0.0.1:{apns_port}: not probed (--offline)" in lines, checked.stdout
    assert any(line.startswith("ok   database ") for line in lines), checked.stdout
    probed = subprocess.run(
        env_argv + [arg for arg in pre[0].split() if arg != "--offline"],
        cwd=working,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert probed.returncode == 0, probed.stdout + probed.stderr
    assert f"ok   apns 127.0.0.1:{apns_port}" in probed.stdout, probed.stdout

    start = [expand(value) for key, value in directives if key == "ExecStart"]
    assert len(start) == 1 and " serve " in start[0] and "--log-format json" in start[0]
    serve = processes.start("serve", env_argv + start[0].split(), cwd=working)
    wait_for_text(serve, '"message":"ready"', STARTUP_TIMEOUT)
    relay = f"http://127.0.0.1:{relay_port}"
    status, ready = call(f"{relay}/health/ready")
    assert status == 200, ready
    # The state is under the state directory, the keys are the credentials (nothing made there).
    assert (working / "data/herald.sqlite").is_file()
    assert sorted(p.name for p in credentials.iterdir()) == sorted(
        ["herald.yaml", "master.key", "api.key", "apns.p8", "fcm-service-account.json"]
    )

    api_key = (etc / "api.key").read_text().strip()
    assert re.fullmatch(r"hk_[0-9a-f]{48}", api_key), api_key
    status, device = call(f"http://127.0.0.1:{control_port}/sandbox/devices", "POST", {"bundle_id": BUNDLE_ID})
    assert status == 201, device
    status, activation = call(
        f"{relay}/v1/activations",
        "POST",
        {
            "user_id": "customer-1",
            "app": BUNDLE_ID,
            "platform": "ios",
            "public_key": base64.b64encode(bytes(PrivateKey.generate().public_key)).decode(),
            "messaging_token": device["messaging_token"],
        },
        token=api_key,
    )
    assert status == 201, activation
    status, receipt = call(
        f"{relay}/v1/messages",
        "POST",
        {"to": "customer-1", "from": {"id": "agent", "name": "Dana"}, "conversation": "c", "text": "shipped"},
        token=api_key,
    )
    assert status == 202, receipt
    push_id = receipt["pushes"][0]["push_id"]
    last: list = [None]

    def delivered() -> bool:
        last[0] = call(f"{relay}/v1/pushes/{push_id}", token=api_key)
        return last[0][0] == 200 and last[0][1]["state"] == "delivered"

    eventually(delivered, 30, what=lambda: f"push {push_id} delivered (last: {last[0]})")

    # operations.md, "Backups": the command as written, in the working directory, while serving.
    backup = re.search(r"<!-- backup -->\n```sh\n(herald store backup [^\n]*)\n", OPERATIONS.read_text())
    assert backup, "docs/operations.md has no backup command"
    command = backup.group(1).replace("herald ", f"{scratch}/usr/local/bin/herald ", 1)
    done = subprocess.run(["bash", "-c", command], cwd=working, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 devices, 0 unfinished pushes; quick_check ok" in done.stdout, done.stdout
    copies = list((working / "backups").glob("herald-*.sqlite"))
    assert len(copies) == 1 and oct(copies[0].stat().st_mode & 0o777) == "0o600"

    assert stop(serve) == 0, serve.stderr_tail()
    records = json_records(serve)
    assert any(r["message"] == "push finished" and r["metadata"].get("outcome") == "delivered" for r in records)
    assert records[-1]["message"].startswith("stopped"), records[-1]
    assert stop(sandbox) == 0

    # The backup is a node's database: a node started on it has the device.
    restored = scratch / "restored"
    (restored / "data").mkdir(parents=True)
    shutil.copy(copies[0], restored / "data/herald.sqlite")
    port = free_port()
    node = processes.start(
        "restored",
        env_argv + [str(herald), "serve", "--config", str(credentials / "herald.yaml"), "--port", str(port), "--log-format", "json"],
        cwd=restored,
    )
    wait_for_text(node, '"message":"ready"', STARTUP_TIMEOUT)
    status, devices = call(f"http://127.0.0.1:{port}/v1/users/customer-1/devices", token=api_key)
    assert status == 200 and len(devices["devices"]) == 1, devices
    assert stop(node) == 0


def test_the_alert_rules_name_only_metrics_herald_writes() -> None:
    import yaml

    rules = yaml.safe_load((REPO / "deploy/herald-alerts.yml").read_text())
    # The metric tables of docs/relay.md: every name in a row's first cell.
    names = set()
    for line in (REPO / "docs/relay.md").read_text().splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`((?:herald|process)_[a-z_]+)`", line.split(" | ")[0]))
    assert {"herald_relay_queue_depth", "herald_apns_failed_total", "process_open_fds"} <= names, names
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert len(alerts) >= 8
    for rule in alerts:
        assert rule["alert"].startswith("Herald") and rule["annotations"]["summary"], rule
        used = set(re.findall(r"\b((?:herald|process)_[a-z_]+)", rule["expr"]))
        if rule["alert"] == "HeraldNodeDown":
            # Prometheus' own series for a failed scrape, under the job docs/operations.md names.
            assert re.search(r'\bup\{job="herald"\} == 0', rule["expr"]), rule
            continue
        assert used, rule
        for metric in used:
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            assert metric in names or base in names, f"{rule['alert']}: {metric} is not a metric Herald writes"


RUNBOOKS = "https://github.com/herald/herald/blob/main/docs/operations.md#"


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_alert_has_a_severity_and_a_runbook_that_exists() -> None:
    import yaml

    rules = yaml.safe_load((REPO / "deploy/herald-alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    text = OPERATIONS.read_text()
    anchors = {github_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
    assert "alert-runbooks" in anchors
    assert "HeraldNodeDown" in {rule["alert"] for rule in alerts}
    for rule in alerts:
        name = rule["alert"]
        assert rule.get("labels", {}).get("severity") in ("page", "ticket"), f"{name}: no severity"
        url = rule["annotations"].get("runbook_url", "")
        assert url.startswith(RUNBOOKS), f"{name}: runbook_url {url!r}"
        anchor = url.removeprefix(RUNBOOKS)
        assert anchor == name.lower() and anchor in anchors, f"{name}: no section #{anchor} in docs/operations.md"
        # The section says what to run: at least one command block.
        section = text.split(f"### {name}\n", 1)[1].split("\n#", 1)[0]
        assert "```sh\n" in section, f"{name}: its runbook has no commands"
    # The table of alerts lists each rule once, with its severity.
    for rule in alerts:
        row = [line for line in text.splitlines() if line.startswith(f"| [`{rule['alert']}`]")]
        assert len(row) == 1 and f" | {rule['labels']['severity']} | " in row[0], rule["alert"]


def test_promtool_accepts_the_rules_and_their_unit_tests() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make system-deps` installs Debian's prometheus package"
    checked = subprocess.run(
        [promtool, "check", "rules", "deploy/herald-alerts.yml"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool, "test", "rules", "deploy/herald-alerts.test.yml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
