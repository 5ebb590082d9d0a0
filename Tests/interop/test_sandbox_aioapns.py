"""Independent client check of Herald's APNs sandbox (docs/sandbox.md) with aioapns.

aioapns is a third-party APNs provider library (asyncio, the `h2` HTTP/2 library, PyJWT for
ES256 provider tokens). Nothing here is imported from Herald: the test drives the real
`herald` binary as a subprocess, exactly as a developer would, and talks to it only over the
wire:

* `herald keys apns` makes an ES256 key (AuthKey_<KEYID>.p8) in a temporary directory;
* `herald sandbox` runs on free ports (0) and prints its APNs and control URLs;
* a device is registered through the control API (HTTP/1.1 JSON);
* aioapns, with token-based authentication, sends an alert push (priority 5) to the device's
  messaging token and a VoIP push (priority 10, topic <bundle>.voip) to its VoIP token, over
  TLS with ALPN h2, trusting only the sandbox's development CA;
* the inspection API must show both requests with the headers aioapns sent;
* after the app is uninstalled, a push must get 410 Unregistered with a timestamp;
* SIGTERM must stop the sandbox with exit status 0 within a few seconds.

Python packages: aioapns (which brings h2, PyJWT and pyOpenSSL) and pytest.

Run: python3 -m pytest -q Tests/interop/test_sandbox_aioapns.py   (HERALD_BIN overrides the
binary, default .build/debug/herald relative to the repository root; the test is skipped only
when that binary is missing).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsDevelopmentClientProtocol

REPO = Path(__file__).resolve().parents[2]

KEY_ID = "KEY1234567"
TEAM_ID = "TEAM123456"
BUNDLE_ID = "com.example.chat"
VOIP_TOPIC = BUNDLE_ID + ".voip"
TOKEN_PATTERN = re.compile(r"^[0-9a-f]{64}$")
STARTUP_TIMEOUT = 60.0  # a debug build under load can take a while to bind
EXIT_TIMEOUT = 5.0


# --- the sandbox as a subprocess -----------------------------------------------------------------


@pytest.fixture(scope="module")
def herald() -> Path:
    configured = os.environ.get("HERALD_BIN", ".build/debug/herald")
    path = Path(configured)
    if not path.is_absolute():
        path = REPO / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"Herald binary not found at {path} (set HERALD_BIN or build with `swift build`)")
    return path


@dataclass
class Sandbox:
    process: subprocess.Popen
    keys_dir: Path
    apns_host: str
    apns_port: int
    control_url: str  # http://host:port, without /sandbox
    ca_file: Path
    key_pem: str
    banner: list[str]

    def control(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        """One control API call; returns (status, decoded JSON or None for an empty body)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.control_url + path, data=data, method=method, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        return status, (json.loads(raw) if raw else None)


def _read_banner(process: subprocess.Popen, deadline: float) -> list[str]:
    """Reads stdout lines until both URLs are printed (or the process dies, or time runs out)."""
    lines: list[str] = []
    buffer = b""
    fd = process.stdout.fileno()
    while time.monotonic() < deadline:
        joined = "\n".join(lines)
        if "APNs" in joined and "control API" in joined:
            return lines
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            if process.poll() is not None:
                break
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        lines += [line.decode("utf-8", "replace") for line in complete]
    raise AssertionError(f"the sandbox did not print its URLs (exit status {process.poll()}); stdout so far: {lines!r}")


@pytest.fixture(scope="module")
def sandbox(herald: Path, tmp_path_factory: pytest.TempPathFactory):
    keys_dir = tmp_path_factory.mktemp("sandbox-keys")
    made = subprocess.run(
        [str(herald), "keys", "apns", "--out", str(keys_dir), "--key-id", KEY_ID, "--team-id", TEAM_ID],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    key_file = keys_dir / f"AuthKey_{KEY_ID}.p8"
    assert key_file.is_file(), f"`herald keys apns` did not write {key_file}: {made.stdout}"

    stderr_file = open(keys_dir / "sandbox.stderr", "w+b")
    process = subprocess.Popen(
        [
            str(herald),
            "sandbox",
            "--keys-dir", str(keys_dir),
            "--app", f"{BUNDLE_ID}:{TEAM_ID}",
            "--apns-port", "0",
            "--control-port", "0",
            "--fcm-port", "0",
            "--hms-port", "0",
            "--log-level", "warning",
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        cwd=keys_dir,
    )
    try:
        banner = _read_banner(process, time.monotonic() + STARTUP_TIMEOUT)
        text = "\n".join(banner)
        apns = re.search(r"APNs\s+https://(\S+):(\d+)\s+\(HTTP/2 \+ TLS, trust (\S+)\)", text)
        control = re.search(r"control API\s+(http://\S+:\d+)/sandbox\b", text)
        assert apns and control, f"unexpected banner: {banner!r}"
        host = apns.group(1).strip("[]")
        ca_file = Path(apns.group(3))
        assert ca_file == keys_dir / "sandbox-ca.pem", f"the banner names CA {ca_file}, expected it in {keys_dir}"
        assert ca_file.is_file()
        yield Sandbox(
            process=process,
            keys_dir=keys_dir,
            apns_host=host,
            apns_port=int(apns.group(2)),
            control_url=control.group(1),
            ca_file=ca_file,
            key_pem=key_file.read_text(),
            banner=banner,
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()
        stderr_file.close()


def register_device(sandbox: Sandbox) -> dict:
    status, device = sandbox.control(
        "POST",
        "/sandbox/devices",
        {"bundle_id": BUNDLE_ID, "messaging_token_delay_ms": 0, "voip_token_delay_ms": 0},
    )
    assert status == 201, device
    assert device["bundle_id"] == BUNDLE_ID
    assert TOKEN_PATTERN.match(device["messaging_token"]), device
    assert TOKEN_PATTERN.match(device["voip_token"]), device
    assert device["messaging_token"] != device["voip_token"]
    return device


def inspection_record(sandbox: Sandbox, token: str, apns_id: str) -> dict:
    status, body = sandbox.control("GET", f"/sandbox/inspection?token={token}")
    assert status == 200, body
    matching = [record for record in body["records"] if record["apns_id"] == apns_id]
    assert len(matching) == 1, f"expected one inspection record with apns_id {apns_id}, got {body['records']!r}"
    return matching[0]


# --- pointing aioapns at the sandbox -------------------------------------------------------------
#
# aioapns 4.0 takes an `ssl_context` (so the sandbox CA and ALPN h2 are plain configuration),
# but it connects to the host and port named by class attributes of its protocol class
# (APNS_SERVER / APNS_PORT: Apple's development or production host, port 443), and the pool
# picks that class in its constructor. The only override: a subclass of aioapns' own
# development protocol that names the sandbox instead, assigned to the pool's `protocol_class`.
# The subclass also records the ALPN protocol each TLS connection negotiated, so the test can
# check that it really spoke h2 by negotiation. Everything else (HTTP/2 framing, headers, JWT
# provider tokens, response parsing) is aioapns' unmodified code.


def sandbox_protocol_class(host: str, port: int, negotiated: list):
    class SandboxProtocol(APNsDevelopmentClientProtocol):
        APNS_SERVER = host  # also aioapns' `host` header and the TLS server name it verifies
        APNS_PORT = port

        def connection_made(self, transport):
            negotiated.append(transport.get_extra_info("ssl_object").selected_alpn_protocol())
            super().connection_made(transport)

    return SandboxProtocol


def sandbox_ssl_context(ca_file: Path) -> ssl.SSLContext:
    # Trust the sandbox's development CA only (not the system roots), verify the host name,
    # and offer h2 by ALPN as Apple requires.
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca_file))
    context.set_alpn_protocols(["h2"])
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    return context


def make_client(sandbox: Sandbox, negotiated: list) -> APNs:
    """Must be called inside a running event loop (aioapns' pool takes the current loop)."""
    client = APNs(
        key=sandbox.key_pem,
        key_id=KEY_ID,
        team_id=TEAM_ID,
        topic=BUNDLE_ID,
        use_sandbox=True,
        ssl_context=sandbox_ssl_context(sandbox.ca_file),
        # One connection, so every push uses the same provider token: aioapns signs one JWT
        # per connection, and the sandbox (like APNs) answers 429 TooManyProviderTokenUpdates
        # to a team that switches tokens within --token-update-interval (20 minutes).
        max_connections=1,
        max_connection_attempts=1,
    )
    client.pool.protocol_class = sandbox_protocol_class(sandbox.apns_host, sandbox.apns_port, negotiated)
    return client


async def send(client: APNs, request: NotificationRequest):
    return await asyncio.wait_for(client.send_notification(request), timeout=15)


# --- the tests -----------------------------------------------------------------------------------


def test_aioapns_alert_voip_and_unregistered(sandbox: Sandbox):
    device = register_device(sandbox)
    messaging_token, voip_token = device["messaging_token"], device["voip_token"]

    alert_message = {"aps": {"alert": {"title": "Ada", "body": "Hello from aioapns"}}, "m": "msg-1"}
    voip_message = {"type": "call", "call_id": "call-42", "caller_name": "Ada"}
    alert = NotificationRequest(
        device_token=messaging_token,
        message=alert_message,
        notification_id=str(uuid.uuid4()),
        priority=5,
        push_type=PushType.ALERT,
        apns_topic=BUNDLE_ID,
    )
    voip = NotificationRequest(
        device_token=voip_token,
        message=voip_message,
        notification_id=str(uuid.uuid4()),
        priority=10,
        push_type=PushType.VOIP,
        apns_topic=VOIP_TOPIC,
    )
    after_uninstall = NotificationRequest(
        device_token=messaging_token,
        message={"aps": {"alert": "after uninstall"}},
        notification_id=str(uuid.uuid4()),
        priority=10,
        push_type=PushType.ALERT,
        apns_topic=BUNDLE_ID,
    )
    negotiated: list = []

    async def scenario():
        client = make_client(sandbox, negotiated)
        try:
            alert_result = await send(client, alert)
            voip_result = await send(client, voip)

            uninstalled_from = int(time.time() * 1000)
            status, body = sandbox.control("POST", f"/sandbox/devices/{device['device_id']}/uninstall")
            uninstalled_to = int(time.time() * 1000)
            assert status == 204, body

            gone_result = await send(client, after_uninstall)
            return alert_result, voip_result, gone_result, (uninstalled_from, uninstalled_to)
        finally:
            client.pool.close()

    alert_result, voip_result, gone_result, (uninstalled_from, uninstalled_to) = asyncio.run(scenario())

    # Every push went over TLS with h2 chosen by ALPN, on one connection (one provider token).
    assert negotiated == ["h2"], negotiated

    # Both pushes were accepted: 200, and the apns-id answered is the one aioapns sent.
    assert (alert_result.status, alert_result.description) == ("200", None)
    assert alert_result.notification_id == alert.notification_id
    assert (voip_result.status, voip_result.description) == ("200", None)
    assert voip_result.notification_id == voip.notification_id

    # The sandbox recorded both, with the headers and body aioapns sent and the key it signed with.
    record = inspection_record(sandbox, messaging_token, alert.notification_id)
    assert record["method"] == "POST"
    assert record["path"] == f"/3/device/{messaging_token}"
    assert record["token"] == messaging_token
    assert record["topic"] == BUNDLE_ID
    assert record["push_type"] == "alert"
    assert record["priority"] == "5"
    assert (record["status"], record["outcome"], record.get("reason")) == (200, "accepted", None)
    assert (record["key_id"], record["team_id"]) == (KEY_ID, TEAM_ID)
    assert json.loads(record["payload"]) == alert_message
    assert record["delivery"] == "stored"  # no device connection is open: kept for later

    record = inspection_record(sandbox, voip_token, voip.notification_id)
    assert record["path"] == f"/3/device/{voip_token}"
    assert record["token"] == voip_token
    assert record["topic"] == VOIP_TOPIC
    assert record["push_type"] == "voip"
    assert record["priority"] == "10"
    assert (record["status"], record["outcome"], record.get("reason")) == (200, "accepted", None)
    assert (record["key_id"], record["team_id"]) == (KEY_ID, TEAM_ID)
    assert json.loads(record["payload"]) == voip_message

    # After the uninstall: 410 Unregistered, with the moment of the uninstall in milliseconds.
    assert gone_result.status == "410"
    assert gone_result.description == "Unregistered"
    assert gone_result.notification_id == after_uninstall.notification_id
    assert isinstance(gone_result.timestamp, int), gone_result.timestamp
    assert uninstalled_from <= gone_result.timestamp <= uninstalled_to, (
        gone_result.timestamp,
        uninstalled_from,
        uninstalled_to,
    )
    record = inspection_record(sandbox, messaging_token, after_uninstall.notification_id)
    assert (record["status"], record["outcome"], record["reason"]) == (410, "rejected", "Unregistered")


def test_sandbox_exits_zero_on_sigterm(sandbox: Sandbox):
    assert sandbox.process.poll() is None, "the sandbox stopped before it was asked to"
    sandbox.process.send_signal(signal.SIGTERM)
    try:
        status = sandbox.process.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the sandbox did not exit within {EXIT_TIMEOUT} s of SIGTERM")
    assert status == 0, f"exit status {status}; stderr: {(sandbox.keys_dir / 'sandbox.stderr').read_text()!r}"
