"""The first hour of an operator (issue #15, part B), against the real `herald` binary:

* `herald check --config FILE` on a YAML configuration that names a running `herald sandbox`
  (APNs and FCM, with its CA), an APNs key, an FCM service account and the throw-away PostgreSQL
  of scripts/with-postgres.sh: every line `ok`, exit status 0, the database's password never
  printed. Then configurations that fail: a misspelt key (refused with its path and line), and
  hosts and a database that cannot be reached or whose schema is newer than the build (one
  `FAIL` line each, exit status 1).
* `--log-format json`: `herald sandbox` (the flag), `herald serve` (`log_format` in a YAML
  file) and `herald provider` (HERALD_LOG_FORMAT) write nothing but JSON objects, one a line,
  on stdout and stderr. A push's final outcome is one `push finished` record at info (ids, no
  token), and SIGTERM ends with one `stopped` record saying what was drained. Numbers are JSON
  numbers; a message sent with `x-request-id: abc123` gets it back, and its access line (with
  `request_id` abc123) names the message and its push, whose `push finished` record has its id.

Run: scripts/with-postgres.sh .venv/bin/python -m pytest -q Tests/interop/test_operator.py
(HERALD_BIN overrides the binary, default .build/debug/herald).
"""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest
from nacl.public import PrivateKey

from test_cluster import postgres  # noqa: F401  (a fixture)
from test_relay_crash import (  # noqa: F401  (herald and workdir are fixtures)
    Process,
    call,
    free_port,
    herald,
    stop,
    workdir,
)
from waiting import eventually

TEAM_ID = "TEAM123456"
BUNDLE_ID = "com.example.operator"
STARTUP_TIMEOUT = 45.0
CHECK_TIMEOUT = 60.0
PASSWORD = "s3cret-pass-not-to-print"


def make_keys(herald: Path, root: Path) -> tuple[Path, Path, Path]:
    """An APNs key, an FCM service account, a master key and an API key under root/keys; (keys
    directory, the .p8, the service account)."""
    keys = root / "keys"
    for argv in (
        ["keys", "apns", "--out", str(keys), "--team-id", TEAM_ID],
        ["keys", "fcm", "--out", str(keys)],
        ["keys", "master", "--out", str(keys / "master.key")],
    ):
        made = subprocess.run([str(herald), *argv], capture_output=True, text=True, timeout=60, cwd=root)
        assert made.returncode == 0, f"herald {' '.join(argv)}: {made.stderr}"
    (keys / "api.key").write_text("hk_" + "0123456789abcdef0123" + "\n")
    account = keys / "fcm-service-account.json"
    assert account.is_file(), sorted(p.name for p in keys.iterdir())
    return keys, sorted(keys.glob("AuthKey_*.p8"))[0], account


def start_sandbox(herald: Path, root: Path, processes, keys: Path, extra: list[str] | None = None) -> tuple[Process, int, int, int]:
    apns_port, fcm_port, control_port = free_port(), free_port(), free_port()
    sandbox = processes.start(
        "sandbox",
        [
            str(herald), "sandbox",
            "--apns-port", str(apns_port),
            "--fcm-port", str(fcm_port),
            "--hms-port", "0",
            "--control-port", str(control_port),
            "--keys-dir", str(keys),
            "--app", f"{BUNDLE_ID}:{TEAM_ID}",
            *(extra or []),
        ],  # fmt: skip
        cwd=root,
    )
    return sandbox, apns_port, fcm_port, control_port


def wait_for_text(process: Process, text: str, timeout: float = STARTUP_TIMEOUT) -> str:
    """The process's output once it has printed `text` (polled: its output has no signal but its
    exit, which ends the wait at once)."""

    def printed() -> str | None:
        out = process.stdout()
        if text in out:
            return out
        assert process.popen.poll() is None, never_printed(process, text)
        return None

    return eventually(printed, timeout, 0.05, lambda: never_printed(process, text))


def never_printed(process: Process, text: str) -> str:
    return f"{process.name}: {text!r} never printed\nstdout:\n{process.stdout()}\nstderr:\n{process.stderr_tail()}"


def check(herald: Path, root: Path, config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(herald), "check", "--config", str(config), "--timeout", "5"],
        capture_output=True, text=True, timeout=CHECK_TIMEOUT, cwd=root,
    )  # fmt: skip


def with_password(url: str) -> str:
    """The test database's URL with a password in it (the throw-away cluster trusts loopback, so
    any password is accepted): herald check must never print it."""
    return url.replace("postgres://postgres@", f"postgres://postgres:{PASSWORD}@", 1)


def test_check_passes_a_good_configuration_and_fails_a_bad_one(herald: Path, workdir, postgres):  # noqa: F811
    root, processes = workdir
    keys, key_file, account = make_keys(herald, root)
    sandbox, apns_port, fcm_port, _ = start_sandbox(herald, root, processes, keys, ["--log-level", "warning"])
    sandbox.wait_for_line("  control API", STARTUP_TIMEOUT)
    ca = keys / "sandbox-ca.pem"
    schema = "herald_check_" + uuid.uuid4().hex[:8]
    database = with_password(postgres.url_for(schema))

    good = root / "herald.yaml"
    good.write_text(
        f"""# A relay node of a cluster, on the sandbox.
keys_dir: {keys}
log_format: json
apns:
  key: {key_file}
  team_id: {TEAM_ID}
  url: https://127.0.0.1:{apns_port}
  ca: {ca}
fcm:
  service_account: {account}
  url: https://127.0.0.1:{fcm_port}
  ca: {ca}
database:
  url: "{database}"
dispatcher:
  workers: 4
"""
    )
    done = check(herald, root, good)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert all(line.startswith("ok   ") for line in lines), done.stdout
    for subject in ("configuration", "master key", "api key", "apns key", "fcm account", "apns ca", "fcm ca"):
        assert any(line.startswith(f"ok   {subject} ") for line in lines), f"no line for {subject}:\n{done.stdout}"
    assert f"ok   configuration {good} (YAML" in done.stdout, done.stdout
    database_line = next(line for line in lines if line.startswith("ok   database "))
    assert "schema v0" in database_line and "postgres://postgres@127.0.0.1" in database_line, database_line
    apns_line = next(line for line in lines if line.startswith("ok   apns 127.0.0.1"))
    assert f"127.0.0.1:{apns_port} (TLS, HTTP/2" in apns_line, apns_line
    assert next(line for line in lines if line.startswith(f"ok   fcm 127.0.0.1:{fcm_port} (TLS")), done.stdout
    assert PASSWORD not in done.stdout + done.stderr

    # A misspelt key: refused with its path and line, nothing else checked.
    misspelt = root / "misspelt.yaml"
    misspelt.write_text(good.read_text().replace("  workers: 4", "  wrokers: 4"))
    done = check(herald, root, misspelt)
    assert done.returncode == 64, done.stdout + done.stderr  # a refused configuration: EX_USAGE
    assert done.stdout.strip() == f"FAIL configuration {misspelt}: unknown key 'dispatcher.wrokers' (line 16)", done.stdout

    # Hosts that refuse, a missing CA file, and a database whose schema a newer build migrated.
    closed = free_port()
    postgres.query(
        f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.herald_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now()); "
        f"INSERT INTO {schema}.herald_migrations (version, name) VALUES (999, 'from the future')"
    )
    bad = root / "bad.yaml"
    bad.write_text(
        good.read_text()
        .replace(f"url: https://127.0.0.1:{apns_port}", f"url: https://127.0.0.1:{closed}")
        .replace(f"  ca: {ca}\nfcm:", f"  ca: {root / 'no-such-ca.pem'}\nfcm:")
    )
    done = check(herald, root, bad)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert f"FAIL apns ca {root / 'no-such-ca.pem'}: not a PEM certificate" in failed, done.stdout
    assert any(line.startswith("FAIL database postgres://postgres@127.0.0.1") and "schema v999 is newer" in line for line in failed), (
        done.stdout
    )
    assert any(line.startswith(f"FAIL apns 127.0.0.1:{closed}: ") for line in failed), done.stdout
    assert "ok   fcm 127.0.0.1" in done.stdout, done.stdout
    assert PASSWORD not in done.stdout + done.stderr

    # A database nobody listens on, a key file that is not one.
    (root / "not-a-key.p8").write_text("hello\n")
    unreachable = root / "unreachable.yaml"
    unreachable.write_text(
        good.read_text()
        .replace(database, f"postgres://postgres:{PASSWORD}@127.0.0.1:{closed}/herald")
        .replace(f"key: {key_file}", f"key: {root / 'not-a-key.p8'}\n  key_id: ABC123DEFG")
        .replace(f"url: https://127.0.0.1:{apns_port}", f"url: https://127.0.0.1:{closed}")
    )
    done = check(herald, root, unreachable)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL database postgres://postgres@127.0.0.1:{closed}/herald: " in done.stdout, done.stdout
    assert f"FAIL apns key {root / 'not-a-key.p8'}: not a P-256 private key in PEM form" in done.stdout, done.stdout
    assert f"FAIL apns 127.0.0.1:{closed}: connection refused" in done.stdout, done.stdout
    assert PASSWORD not in done.stdout + done.stderr
    assert stop(sandbox) == 0


def json_records(process: Process) -> list[dict]:
    """Every line the process wrote, stdout and stderr, each parsed as one JSON object."""
    records = []
    for path in (process.stdout_path, process.stderr_path):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise AssertionError(f"{path.name}:{number} is not JSON ({error}): {line!r}") from None
            assert isinstance(record, dict), line
            assert {"timestamp", "level", "label", "message", "metadata"} <= record.keys(), line
            records.append(record)
    return records


def test_json_logs_push_outcomes_and_the_shutdown_line(herald: Path, workdir):  # noqa: F811
    root, processes = workdir
    keys, key_file, _ = make_keys(herald, root)
    sandbox, apns_port, _, control_port = start_sandbox(herald, root, processes, keys, ["--log-format", "json"])
    banner = wait_for_text(sandbox, '"message":"ready"')
    assert f"https://127.0.0.1:{apns_port}" in banner
    control_url = f"http://127.0.0.1:{control_port}"

    relay_port = free_port()
    config = root / "serve.yaml"
    config.write_text(
        f"""port: {relay_port}
keys_dir: {keys}
data: {root / 'data'}
log_format: json
apps:
  - id: {BUNDLE_ID}
    team_id: {TEAM_ID}
apns:
  key: {key_file}
  team_id: {TEAM_ID}
  url: https://127.0.0.1:{apns_port}
  ca: {keys / 'sandbox-ca.pem'}
"""
    )
    serve = processes.start("serve", [str(herald), "serve", "--config", str(config)], cwd=root)
    wait_for_text(serve, '"message":"ready"')
    relay_url = f"http://127.0.0.1:{relay_port}"
    api_key = (keys / "api.key").read_text().strip()

    status, device = call(f"{control_url}/sandbox/devices", "POST", {"bundle_id": BUNDLE_ID})
    assert status == 201, device
    token = device["messaging_token"]
    status, activation = call(
        f"{relay_url}/v1/activations",
        "POST",
        {
            "user_id": "u-1",
            "app": BUNDLE_ID,
            "platform": "ios",
            "public_key": base64.b64encode(bytes(PrivateKey.generate().public_key)).decode(),
            "messaging_token": token,
        },
        token=api_key,
    )
    assert status == 201, activation
    text = "the refund for order 4711 is approved"
    # With the backend's own request id: answered back, and the key to the request's log records.
    request = urllib.request.Request(
        f"{relay_url}/v1/messages",
        data=json.dumps(
            {"to": "u-1", "from": {"id": "agent", "name": "Agent Smith"}, "conversation": "c", "text": text}
        ).encode(),
        method="POST",
        headers={"content-type": "application/json", "authorization": f"Bearer {api_key}", "x-request-id": "abc123"},
    )
    with urllib.request.urlopen(request, timeout=15) as answer:
        assert answer.status == 202 and answer.headers["x-request-id"] == "abc123", dict(answer.headers)
        receipt = json.loads(answer.read())
    push_id = receipt["pushes"][0]["push_id"]
    eventually(lambda: (answer := call(f"{relay_url}/v1/pushes/{push_id}", token=api_key))[0] == 200
               and answer[1].get("state") == "delivered", 30, what=f"push {push_id} delivered")  # fmt: skip

    # A provider, through HERALD_LOG_FORMAT, started and stopped.
    provider_port = free_port()
    env_argv = [
        "env", "HERALD_LOG_FORMAT=json",
        str(herald), "provider",
        "--port", str(provider_port),
        "--apns-key", str(key_file),
        "--apns-team-id", TEAM_ID,
        "--apns-url", f"https://127.0.0.1:{apns_port}",
        "--apns-ca", str(keys / "sandbox-ca.pem"),
        "--secret-file", str(keys / "provider.secret"),
        "--token-cache", str(root / "provider-token"),
    ]  # fmt: skip
    provider = processes.start("provider", env_argv, cwd=root)
    wait_for_text(provider, '"message":"ready"')

    for process in (serve, provider, sandbox):
        assert stop(process) == 0, process.stderr_tail()

    records = json_records(serve)
    finished = [r for r in records if r["message"] == "push finished"]
    assert len(finished) == 1, finished
    assert finished[0]["level"] == "info"
    metadata = finished[0]["metadata"]
    assert metadata["push"] == push_id and metadata["outcome"] == "delivered", metadata
    assert metadata["app"] == BUNDLE_ID and metadata["network"] == "apns", metadata
    assert metadata["device"] == activation["device_id"], metadata
    stopped = [r for r in records if r["message"].startswith("stopped")]
    assert len(stopped) == 1, [r["message"] for r in records]
    assert stopped[0]["level"] == "info"
    assert set(stopped[0]["metadata"]) == {"batches_finished", "pushes_finished", "live_channels_closed", "pushes_queued"}
    assert stopped[0]["metadata"]["pushes_queued"] == 0, stopped[0]
    # The request's id leads to its access line (typed numbers, the message and push ids), and
    # the push id to the push's own record; the activation's records share their request's id.
    of_request = [r for r in records if r["metadata"].get("request_id") == "abc123"]
    access = next(r for r in of_request if r["label"] == "herald.access" and r["message"] == "request")
    fields = access["metadata"]
    assert (fields["route"], fields["status"], fields["message"]) == ("/v1/messages", 202, receipt["id"]), fields
    assert fields["pushes"] == [push_id] and fields["push_count"] == 1, fields
    assert isinstance(fields["duration_ms"], (int, float)) and isinstance(fields["bytes"], int), fields
    assert isinstance(metadata["attempts"], int) and isinstance(metadata["latency_ms"], int), metadata
    assert "request_id" not in metadata, metadata  # sent by the dispatcher, outside the request
    activated = next(r for r in records if r["message"] == "device activated")
    activation_id = activated["metadata"]["request_id"]
    assert any(
        r["label"] == "herald.access" and r["metadata"].get("route") == "/v1/activations"
        for r in records if r["metadata"].get("request_id") == activation_id
    ), activated
    banner = next(r for r in records if r["message"] == "ready")
    assert any(f"http://127.0.0.1:{relay_port}/v1" in line for line in banner["metadata"]["banner"]), banner
    everything = serve.stdout() + serve.stderr_path.read_text()
    for secret in (token, text, "Agent Smith", api_key):
        assert secret not in everything, f"{secret!r} is in the log"

    assert any(r["label"] == "herald.sandbox" for r in json_records(sandbox))
    assert any(r["message"] == "ready" for r in json_records(provider))
