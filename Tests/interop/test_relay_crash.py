"""Crash consistency of the relay: no acknowledged push is lost to a SIGKILL.

The test drives the real `herald` binary as subprocesses and talks to it only over the wire:

* `herald keys apns` makes a provider key in a temporary directory;
* `herald sandbox` (the APNs look-alike, docs/sandbox.md) runs as its own process, so it
  outlives the relay and its inspection log sees every push sent before and after the crash;
* `herald serve` runs against it with `--apns-key/--apns-url/--apns-ca` (no in-process
  sandbox);
* 20 users get one emulated iOS device each (a sandbox messaging token, a PyNaCl crypto_kx
  public key), activated at the relay;
* the sandbox answers every push SANDBOX_LATENCY_MS late, so the relay always has pushes in
  flight: a push acknowledged less than that before the kill cannot have been delivered;
* several threads send a burst of `POST /v1/messages` over keep-alive connections; every 202
  answer is an acknowledgement, and the push ids it names are recorded;
* once enough acknowledgements have arrived, and while the threads are still sending, the relay
  gets SIGKILL. Requests cut off by the kill are not acknowledged (they may or may not have been
  committed). The kill must have hit work in flight: some acknowledged pushes were not delivered
  when it came, as the relay's second run shows (it sends them: for the first time, or again when
  the first run's answer was still on its way). The latency is then removed;
* the relay is started again with the same arguments. Every acknowledged push must then reach
  the sandbox, accepted (status 200) under the apns-id it was given at ingest (apns-id = push
  id), and `GET /v1/pushes/{id}` must show it `delivered`. A push sent before the crash whose
  completion was not recorded may be sent again after it (at least once): such duplicates are
  counted and reported, not refused;
* the requests whose outcome the kill left unknown are sent again with the same idempotency
  key, as a client would; whatever pushes the answers name (the original ones when the first
  attempt had been committed) must be delivered too;
* the number of pushes sent twice is bounded by what the dispatcher can have claimed and not yet
  recorded: at most (workers + 1) x batch size (the loops' batches, and one batch of finished
  outcomes waiting to be recorded; DispatcherConfiguration, 3 x 256 by default; set
  HERALD_CRASH_WORKERS / HERALD_CRASH_BATCH_SIZE to run the relay with others). The figure is
  printed and recorded in docs/performance.md;
* SIGTERM must then stop the relay (and the sandbox) with exit status 0.

Run: python3 -m pytest -q Tests/interop/test_relay_crash.py   (HERALD_BIN overrides the binary,
default .build/debug/herald relative to the repository root; the test is skipped only when that
binary is missing). Python packages: PyNaCl and pytest.
"""

from __future__ import annotations

import base64
import collections
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from nacl.public import PrivateKey

REPO = Path(__file__).resolve().parents[2]

TEAM_ID = "TEAM123456"
BUNDLE_ID = "com.example.crash"
USERS = 20
# The load and the moment of the kill; the environment can raise them to measure re-sends at full
# load (docs/performance.md): HERALD_CRASH_LATENCY_MS=0 lets the relay run as fast as it can.
SENDER_THREADS = int(os.environ.get("HERALD_CRASH_THREADS", "8"))
ACKS_BEFORE_KILL = int(os.environ.get("HERALD_CRASH_ACKS", "300"))
SANDBOX_LATENCY_MS = int(os.environ.get("HERALD_CRASH_LATENCY_MS", "1000"))  # longer than the kill takes
STARTUP_TIMEOUT = 30.0  # a debug build under load can take a while to bind
ACK_TIMEOUT = 30.0  # for the first ACKS_BEFORE_KILL acknowledgements
DELIVERY_TIMEOUT = 60.0  # after the restart, for every acknowledged push to reach the sandbox
EXIT_TIMEOUT = 15.0
REQUEST_TIMEOUT = 15.0
# The relay's dispatcher: concurrent claim loops and the pushes each claims at a time (the
# defaults of DispatcherConfiguration unless set). Re-sent pushes after the kill are at most
# their product.
WORKERS = int(os.environ.get("HERALD_CRASH_WORKERS", "2"))
BATCH_SIZE = int(os.environ.get("HERALD_CRASH_BATCH_SIZE", "256"))
# The loops' batches being sent, and one batch of finished outcomes waiting to be recorded.
BOUND = (WORKERS + 1) * BATCH_SIZE


# --- processes -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def herald() -> Path:
    configured = os.environ.get("HERALD_BIN", ".build/debug/herald")
    path = Path(configured)
    if not path.is_absolute():
        path = REPO / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"Herald binary not found at {path} (set HERALD_BIN or build with `swift build`)")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Process:
    """A herald subprocess with stdout and stderr in files (nothing can block on a full pipe)."""

    name: str
    popen: subprocess.Popen
    stdout_path: Path
    stderr_path: Path

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr_tail(self, lines: int = 40) -> str:
        text = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_for_line(self, prefix: str, timeout: float) -> str:
        """The first stdout line starting with `prefix`; fails if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.stdout().splitlines():
                if line.startswith(prefix):
                    return line
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(
            f"{self.name}: no stdout line starting with {prefix!r} (exit status {self.popen.poll()})\n"
            f"stdout:\n{self.stdout()}\nstderr (tail):\n{self.stderr_tail()}"
        )


@dataclass
class Processes:
    """Every process this test started; all of them are killed in teardown (by pid, never by name)."""

    directory: Path
    started: list[Process] = field(default_factory=list)

    def start(self, name: str, argv: list[str], cwd: Path) -> Process:
        index = len(self.started)
        stdout_path = self.directory / f"{index:02d}-{name}.stdout"
        stderr_path = self.directory / f"{index:02d}-{name}.stderr"
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            popen = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
        process = Process(name, popen, stdout_path, stderr_path)
        self.started.append(process)
        return process

    def kill_all(self) -> None:
        for process in self.started:
            if process.popen.poll() is None:
                process.popen.kill()
        for process in self.started:
            try:
                process.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="herald-crash-"))
    processes = Processes(path)
    try:
        yield path, processes
    finally:
        processes.kill_all()
        shutil.rmtree(path, ignore_errors=True)


def stop(process: Process) -> int:
    """SIGTERM, then the exit status (fails after EXIT_TIMEOUT)."""
    process.popen.send_signal(signal.SIGTERM)
    try:
        return process.popen.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"{process.name} did not exit within {EXIT_TIMEOUT} s of SIGTERM; stderr (tail):\n{process.stderr_tail()}"
        ) from None


# --- HTTP ----------------------------------------------------------------------------------------


def call(url: str, method: str = "GET", body: dict | None = None, token: str | None = None) -> tuple[int, object]:
    """One request on a fresh connection; (status, decoded JSON or None)."""
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    return status, (json.loads(raw) if raw else None)


class KeepAlive:
    """JSON requests on one keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int, token: str):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        self.headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        self.connection.request(method, path, body=data, headers=self.headers)
        response = self.connection.getresponse()
        raw = response.read()
        return response.status, (json.loads(raw) if raw else None)

    def close(self) -> None:
        self.connection.close()


def activate_iphone(control_url: str, relay_url: str, api_key: str, bundle_id: str, user: str) -> dict:
    """A new sandbox iPhone of `bundle_id` (messaging and VoIP tokens) activated for `user`: the
    activation's answer."""
    status, phone = call(f"{control_url}/sandbox/devices", "POST", {"bundle_id": bundle_id})
    assert status == 201 and phone["messaging_token"] and phone["voip_token"], phone
    status, activation = call(
        f"{relay_url}/v1/activations",
        "POST",
        {
            "user_id": user,
            "app": bundle_id,
            "platform": "ios",
            "public_key": base64.b64encode(bytes(PrivateKey.generate().public_key)).decode(),
            "messaging_token": phone["messaging_token"],
            "voip_token": phone["voip_token"],
        },
        token=api_key,
    )
    assert status == 201, activation
    return activation


def message(user: str, index: int, key: str) -> dict:
    return {
        "to": user,
        "from": {"id": "agent", "name": "Agent"},
        "conversation": "c",
        "text": f"m{index}",
        "idempotency_key": key,
    }


# --- the burst -----------------------------------------------------------------------------------


class Burst:
    """Sender threads: every 202 is an acknowledgement; after `killing` is set, a failed request
    is an unknown outcome (kept for a retry), before it any failure is an error."""

    def __init__(self, port: int, api_key: str, users: list[str]):
        self.port = port
        self.api_key = api_key
        self.users = users
        self.lock = threading.Lock()
        self.acked: dict[str, str] = {}  # push id -> idempotency key
        self.acked_keys: set[str] = set()
        self.acks = 0
        self.unknown: list[dict] = []  # request bodies cut off by the kill
        self.errors: list[str] = []  # anything but a 202 before the kill
        self.enough = threading.Event()
        self.killing = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(SENDER_THREADS)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = sum(thread.is_alive() for thread in self.threads)
        assert alive == 0, f"{alive} sender threads still running {timeout} s after the kill"

    def run(self, number: int) -> None:
        connection = KeepAlive(self.port, self.api_key)
        index = 0
        try:
            while True:
                key = f"crash-{number}-{index}"
                body = message(self.users[(number + index * SENDER_THREADS) % len(self.users)], index, key)
                index += 1
                try:
                    status, answer = connection.request("POST", "/v1/messages", body)
                except (OSError, http.client.HTTPException) as error:
                    # After the kill this ends the thread; answers already in the socket buffer
                    # when the relay died were read above and count as acknowledgements.
                    with self.lock:
                        if self.killing.is_set():
                            self.unknown.append(body)
                        else:
                            self.errors.append(f"{key}: {type(error).__name__}: {error}")
                    return
                with self.lock:
                    if status != 202:
                        self.errors.append(f"{key}: status {status}: {answer!r}")
                        return
                    pushes = answer.get("pushes", [])
                    if len(pushes) != 1 or answer.get("skipped") or answer.get("duplicate"):
                        self.errors.append(f"{key}: expected one new push, got {answer!r}")
                    for push in pushes:
                        self.acked[push["push_id"]] = key
                    self.acked_keys.add(key)
                    self.acks += 1
                    if self.acks >= ACKS_BEFORE_KILL:
                        self.enough.set()
        finally:
            connection.close()


# --- the test ------------------------------------------------------------------------------------


def accepted_apns_ids(control_url: str) -> tuple[collections.Counter, int]:
    """apns-id -> number of accepted (200) records, and the number of records."""
    status, body = call(f"{control_url}/sandbox/inspection?limit=100000")
    assert status == 200, body
    records = body["records"]
    counts = collections.Counter(
        record["apns_id"].lower() for record in records if record["status"] == 200 and record["outcome"] == "accepted"
    )
    return counts, len(records)


def test_acknowledged_pushes_survive_sigkill(herald: Path, workdir):
    started = time.monotonic()
    root, processes = workdir
    keys = root / "keys"
    data = root / "data"

    made = subprocess.run(
        [str(herald), "keys", "apns", "--out", str(keys), "--team-id", TEAM_ID],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
    )
    assert made.returncode == 0, made.stderr
    p8_files = sorted(keys.glob("AuthKey_*.p8"))
    assert len(p8_files) == 1, f"expected one AuthKey_*.p8 in {keys}: {made.stdout}"
    key_file = p8_files[0]
    key_id = key_file.stem.removeprefix("AuthKey_")
    assert key_id in made.stdout, made.stdout
    assert (keys / f"AuthKey_{key_id}.json").is_file()

    # The sandbox, in its own process: it must outlive the relay's crash.
    apns_port, control_port, relay_port = free_port(), free_port(), free_port()
    sandbox = processes.start(
        "sandbox",
        [
            str(herald), "sandbox",
            "--apns-port", str(apns_port),
            "--control-port", str(control_port),
            "--fcm-port", "0",
            "--hms-port", "0",
            "--keys-dir", str(keys),
            "--app", f"{BUNDLE_ID}:{TEAM_ID}",
            "--inspection-capacity", "100000",
            # Apple's rule stays on (a new provider token within 1200 s of the last is refused):
            # the restarted relay must take up the token it kept (sealed) in its database.
            "--log-level", "warning",
        ],  # fmt: skip
        cwd=root,
    )
    sandbox.wait_for_line("  control API", STARTUP_TIMEOUT)
    banner = sandbox.stdout()
    assert f"https://127.0.0.1:{apns_port}" in banner, banner
    assert key_id in sandbox.wait_for_line("  keys", STARTUP_TIMEOUT), banner
    control_url = f"http://127.0.0.1:{control_port}"
    ca_file = keys / "sandbox-ca.pem"
    assert ca_file.is_file()

    serve_argv = [
        str(herald), "serve",
        "--port", str(relay_port),
        "--keys-dir", str(keys),
        "--data", str(data),
        "--app", f"{BUNDLE_ID}:{TEAM_ID}",
        "--apns-key", str(key_file),
        "--apns-team-id", TEAM_ID,
        "--apns-url", f"https://127.0.0.1:{apns_port}",
        "--apns-ca", str(ca_file),
        "--workers", str(WORKERS),
        "--batch-size", str(BATCH_SIZE),
    ]  # fmt: skip
    relay = processes.start("serve-1", serve_argv, cwd=root)
    relay.wait_for_line("  relay", STARTUP_TIMEOUT)
    relay_url = f"http://127.0.0.1:{relay_port}"
    api_key = (keys / "api.key").read_text().strip()
    assert api_key

    # 20 users, one iOS device each.
    users = [f"user-{n}" for n in range(USERS)]
    for user in users:
        activate_iphone(control_url, relay_url, api_key, BUNDLE_ID, user)

    # The burst, and SIGKILL in the middle of it, with every push answered late.
    status, body = call(f"{control_url}/sandbox/faults/latency", "PUT", {"ms": SANDBOX_LATENCY_MS})
    assert status == 204, body
    burst = Burst(relay_port, api_key, users)
    burst.start()
    if not burst.enough.wait(ACK_TIMEOUT):
        burst.killing.set()
        relay.popen.kill()
        pytest.fail(
            f"only {burst.acks} acknowledgements within {ACK_TIMEOUT} s; errors: {burst.errors[:5]!r}\n"
            f"serve stderr (tail):\n{relay.stderr_tail()}"
        )
    burst.killing.set()
    relay.popen.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    relay.popen.wait(timeout=10)
    assert relay.popen.returncode == -signal.SIGKILL, relay.popen.returncode
    burst.join(REQUEST_TIMEOUT + 5)
    assert not burst.errors, f"requests failed before the kill: {burst.errors[:10]!r}"
    acked = dict(burst.acked)
    at_kill, _ = accepted_apns_ids(control_url)
    missing_at_kill = sum(1 for push_id in acked if push_id not in at_kill)
    status, body = call(f"{control_url}/sandbox/faults/latency", "PUT", {"ms": 0})
    assert status == 204, body

    # Restart with the same arguments; the acknowledged pushes must all arrive.
    relay = processes.start("serve-2", serve_argv, cwd=root)
    relay.wait_for_line("  relay", STARTUP_TIMEOUT)
    restarted_at = time.monotonic()

    # The requests the kill cut off, again with the same idempotency keys (as a client would).
    retried_duplicates = 0
    retried: dict[str, str] = {}
    for body in burst.unknown:
        status, answer = call(f"{relay_url}/v1/messages", "POST", body, token=api_key)
        assert status == 202, f"retry of {body['idempotency_key']}: {status} {answer!r}"
        assert len(answer["pushes"]) == 1 and not answer["skipped"], answer
        retried_duplicates += bool(answer["duplicate"])
        for push in answer["pushes"]:
            retried[push["push_id"]] = body["idempotency_key"]
    expected = {**acked, **retried}

    deadline = time.monotonic() + DELIVERY_TIMEOUT
    while True:
        seen, records = accepted_apns_ids(control_url)
        missing = [push_id for push_id in expected if push_id not in seen]
        if not missing or time.monotonic() > deadline:
            break
        if relay.popen.poll() is not None:
            break
        time.sleep(0.25)
    waited = time.monotonic() - restarted_at
    duplicated = sum(1 for push_id in expected if seen[push_id] > 1)
    # Every apns-id the sandbox accepted twice, acknowledged or not (the pushes of requests the
    # kill cut off count too).
    resent = sum(1 for count in seen.values() if count > 1)
    # Acknowledged but not delivered when the kill came: what the second run sent, because the
    # first never did or because its answer had not arrived (the second run sent it again).
    in_flight_at_kill = [push_id for push_id in acked if seen[push_id] > at_kill[push_id]]

    # The relay's own view: every expected push delivered, under its push id as apns-id. The
    # sandbox answers before the relay records the outcome, so a push not yet delivered is asked
    # about again for a few seconds.
    not_delivered: list[str] = []
    pending = list(expected)
    status_client = KeepAlive(relay_port, api_key)
    record_deadline = time.monotonic() + 10
    try:
        while pending:
            not_delivered, still = [], []
            for push_id in pending:
                status, view = status_client.request("GET", f"/v1/pushes/{push_id}")
                if status != 200 or view.get("state") != "delivered" or view.get("apns_id", "").lower() != push_id:
                    not_delivered.append(f"{push_id}: {status} {view!r}")
                    still.append(push_id)
            if not still or time.monotonic() > record_deadline:
                break
            pending = still
            time.sleep(0.1)
    finally:
        status_client.close()
    delivered = len(expected) - len(not_delivered)
    status, health = call(f"{relay_url}/health")
    requeued = re.search(r"count=(\d+) \[HeraldRelay\] re-queued pushes claimed", relay.stderr_path.read_text())

    summary = (
        f"{len(acked)} pushes acknowledged before the kill ({missing_at_kill} not yet at the sandbox "
        f"when it happened, {len(in_flight_at_kill)} not delivered then; the restarted relay re-queued "
        f"{requeued.group(1) if requeued else 0} claimed pushes), "
        f"{len(burst.unknown)} requests cut off by the kill and retried "
        f"({retried_duplicates} answered as duplicates: committed before the kill), "
        f"{len(expected)} pushes expected, {len(expected) - len(missing)} seen accepted by the sandbox "
        f"(polling ended {waited:.1f} s after the restart), {delivered} delivered per GET /v1/pushes, "
        f"{duplicated} apns-ids accepted more than once (at-least-once after the crash; {resent} "
        f"counting unacknowledged pushes; bound ({WORKERS} workers + 1) x {BATCH_SIZE} = {BOUND}), "
        f"{records} inspection records; relay health after: {health!r}"
    )
    print("\n" + summary)
    assert relay.popen.poll() is None, (
        f"the restarted relay exited ({relay.popen.returncode}): {summary}\nstderr (tail):\n{relay.stderr_tail()}"
    )
    assert in_flight_at_kill, f"the kill hit no work in flight (every acknowledged push was delivered): {summary}"
    assert not missing, (
        f"{len(missing)} acknowledged pushes never reached the sandbox, e.g. {missing[:5]!r}: {summary}\n"
        f"serve stderr (tail):\n{relay.stderr_tail()}"
    )
    assert not not_delivered, f"{len(not_delivered)} pushes not delivered per the relay, e.g. {not_delivered[:5]!r}: {summary}"
    # Only what was claimed and not yet recorded can be sent again (docs/performance.md).
    assert resent <= BOUND, f"more pushes sent twice than (workers + 1) x batch size: {summary}"
    assert status == 200 and health.get("outbox_queued", 0) == 0 and health.get("outbox_sending", 0) == 0, (
        f"outbox not drained: {summary}"
    )

    # Graceful shutdown of both.
    relay_status = stop(relay)
    assert relay_status == 0, f"serve exited {relay_status} after SIGTERM; stderr (tail):\n{relay.stderr_tail()}"
    sandbox_status = stop(sandbox)
    assert sandbox_status == 0, f"sandbox exited {sandbox_status} after SIGTERM; stderr (tail):\n{sandbox.stderr_tail()}"
    print(f"total {time.monotonic() - started:.1f} s (kill to all delivered {time.monotonic() - killed_at:.1f} s)")
