"""Several relay nodes on one PostgreSQL database (issue #16): no acknowledged push is lost when a
node dies or the database restarts, and only the dead node's claims are sent twice.

The test drives the real `herald` binary as subprocesses, the way Tests/interop/test_relay_crash.py
does (and with its helpers), against the throw-away PostgreSQL cluster of
scripts/with-postgres.sh (`make interop` runs the interop tests through it):

* `herald sandbox` (the APNs look-alike, with Apple's 20-minute token-update rule) and two
  `herald provider` nodes sending to it with one key and `--database` (so they share one provider
  token), each in its own process; three `herald relay` nodes (each spreading its batches over
  both providers) on the same database (their own schema in it), with the same
  keys directory (master key, API key, provider secret), distinct `--node-id`s and ports,
  `--workers WORKERS --batch-size BATCH_SIZE`;
* 24 users get one emulated iOS device each (a sandbox messaging token, a PyNaCl public key);
* sender threads send `POST /v1/messages` bursts, round-robin over the three nodes, every request
  with its own idempotency key. A request refused with 503 (it must carry Retry-After) or cut off
  with its connection is sent again, with the same key, to the next node, as a client behind a
  load balancer would; every 202 is an acknowledgement. An answer for a key that was answered
  before must name the same pushes (one push per key, whichever node answers);
* the sandbox answers every push SANDBOX_LATENCY_MS late, so pushes are always in flight.

Phase 1, no node dies: a burst of PHASE1_ACKS messages; every acknowledged push reaches the
sandbox exactly once (accepted, apns-id = push id) and `GET /v1/pushes/{id}` shows it
`delivered` on any node. Zero duplicates.

Phase 2: another burst; after KILL_AFTER_ACKS acknowledgements node-2 gets SIGKILL, and the pushes
it held claimed at that moment are read from the database (`outbox.claim_owner`). PostgreSQL is
then restarted (`pg_ctl restart -m fast`, as the cluster's owner) while the senders keep going:
requests refused meanwhile are retried. Once ACKS_AFTER_RESTART more acknowledgements arrived
after the restart, the burst stops and node-2 is started again with the same node id (there is
no lease flag; a node releases its own claims at start). Then:
  - every acknowledged push reaches the sandbox and is `delivered` per GET /v1/pushes on any node;
  - an apns-id accepted twice must be one of the pushes node-2 held claimed when it died, and
    there are at most WORKERS x BATCH_SIZE of them (what one node can have claimed and not yet
    recorded);
  - the kill hit claims in flight, and the restart was felt (some request refused with 503);
  - the outbox drains (`/health`), and SIGTERM stops every process with exit status 0;
  - the sandbox saw one provider token for the key, and refused no update as too early
    (`GET /sandbox/apns/provider-tokens`): the two providers shared it, across the restart too.

A second test checks the wake-ups across nodes (LISTEN/NOTIFY): node A's only dispatcher loop is
kept busy by a provider that never answers, so only node B, whose loop sleeps up to one second
(DispatcherConfiguration.idlePoll) when nothing wakes it, can send what is ingested on A. The
time from ingest to `delivered` (the push's own history) must be well under that second.

A third checks outcomes across a database outage (issue 30): a message and a call in flight (the
sandbox answers 2 s late) while PostgreSQL is stopped for 8 s; each ends `delivered`, accepted by
the sandbox once, recorded when the database is back, long before the claims' 60 s lease ends.

Run: scripts/with-postgres.sh python3 -m pytest -q Tests/interop/test_cluster.py
(HERALD_BIN overrides the binary, default .build/debug/herald). Without HERALD_TEST_POSTGRES_URL
(and HERALD_TEST_POSTGRES_BIN, HERALD_TEST_POSTGRES_DATA) the tests fail: they are never skipped
for want of a database. Python packages: PyNaCl and pytest.
"""

from __future__ import annotations

import collections
import http.client
import http.server
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# The crash test's process and HTTP helpers (Tests/interop is on sys.path under pytest).
from test_relay_crash import (  # noqa: F401  (herald is a fixture)
    KeepAlive,
    Process,
    Processes,
    accepted_apns_ids,
    activate_iphone,
    call,
    free_port,
    herald,
    message,
    stop,
)

TEAM_ID = "TEAM123456"
BUNDLE_ID = "com.example.cluster"
USERS = 24
NODES = 3
SENDER_THREADS = int(os.environ.get("HERALD_CLUSTER_THREADS", "6"))
# The killed node's dispatcher: at most (WORKERS + 1) x BATCH_SIZE of its pushes are claimed and
# not yet recorded when it dies (the loops' batches, and one batch of finished outcomes waiting to
# be recorded), so at most that many can be sent twice.
WORKERS = int(os.environ.get("HERALD_CLUSTER_WORKERS", "2"))
BATCH_SIZE = int(os.environ.get("HERALD_CLUSTER_BATCH_SIZE", "32"))
SANDBOX_LATENCY_MS = int(os.environ.get("HERALD_CLUSTER_LATENCY_MS", "300"))
PHASE1_ACKS = 240
KILL_AFTER_ACKS = 150
ACKS_AFTER_RESTART = 120
STARTUP_TIMEOUT = 45.0  # a debug build on a loaded machine can take a while to bind
PHASE_TIMEOUT = 40.0  # for a phase's acknowledgements
DELIVERY_TIMEOUT = 40.0  # for every acknowledged push to reach the sandbox
REQUEST_TIMEOUT = 15.0
RETRY_PAUSE_LIMIT = 2.0  # the longest a sender waits on Retry-After before it tries the next node
# DispatcherConfiguration.idlePoll: how long an idle dispatcher loop sleeps when nothing wakes it.
IDLE_POLL_MS = 1000
WAKE_ROUNDS = 5
WAKE_LIMIT_MS = 400


# --- PostgreSQL ----------------------------------------------------------------------------------


@dataclass
class Postgres:
    """The throw-away cluster of scripts/with-postgres.sh."""

    url: str
    bin: Path
    data: Path

    def url_for(self, schema: str) -> str:
        return self.url + ("&" if "?" in self.url else "?") + f"schema={schema}"

    def query(self, sql: str) -> list[list[str]]:
        """Rows of `sql`, through psql (no Python driver needed)."""
        done = subprocess.run(
            [str(self.bin / "psql"), self.url, "-X", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, f"psql {sql!r}: {done.stderr}"
        return [line.split("\t") for line in done.stdout.splitlines() if line]

    def restart(self) -> float:
        """`pg_ctl restart -m fast` with the options the server was started with (same port);
        the seconds it took."""
        owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        log = self.data.parent / "server.log"
        started = time.monotonic()
        done = subprocess.run(
            [*owner, str(self.bin / "pg_ctl"), "restart", "-m", "fast", "-w", "-t", "60", "-D", str(self.data), "-l", str(log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, f"pg_ctl restart failed ({done.returncode}): {done.stderr}"
        return time.monotonic() - started


@pytest.fixture(scope="module")
def postgres() -> Postgres:
    names = ["HERALD_TEST_POSTGRES_URL", "HERALD_TEST_POSTGRES_BIN", "HERALD_TEST_POSTGRES_DATA"]
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not set: the cluster test needs a PostgreSQL it may restart. Run it through "
            "scripts/with-postgres.sh (`make interop` does), e.g. "
            "scripts/with-postgres.sh python3 -m pytest -q Tests/interop/test_cluster.py"
        )
    postgres = Postgres(
        os.environ["HERALD_TEST_POSTGRES_URL"],
        Path(os.environ["HERALD_TEST_POSTGRES_BIN"]),
        Path(os.environ["HERALD_TEST_POSTGRES_DATA"]),
    )
    assert (postgres.bin / "pg_ctl").is_file() and (postgres.bin / "psql").is_file(), postgres.bin
    postgres.query("SELECT 1")
    return postgres


# --- processes -----------------------------------------------------------------------------------


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="herald-cluster-"))
    processes = Processes(path)
    try:
        yield path, processes
    finally:
        processes.kill_all()
        if os.environ.get("HERALD_CLUSTER_KEEP"):
            print(f"\nlogs kept in {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


@dataclass
class Backends:
    """Keys, the sandbox and (optionally) one provider, shared by every relay node."""

    root: Path
    keys: Path
    key_file: Path
    control_url: str
    apns_port: int
    sandbox: Process
    provider: Process | None = None
    provider_url: str = ""
    # Providers past the first (with a database: they share the first's provider token).
    more_providers: list[Process] = field(default_factory=list)
    more_provider_urls: list[str] = field(default_factory=list)


def start_backends(
    herald: Path, root: Path, processes: Processes, with_provider: bool = True, providers_database: str | None = None
) -> Backends:
    keys = root / "keys"
    made = subprocess.run(
        [str(herald), "keys", "apns", "--out", str(keys), "--team-id", TEAM_ID],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    key_file = sorted(keys.glob("AuthKey_*.p8"))[0]
    # Made once here: nodes starting at the same moment must not each make their own.
    made = subprocess.run(
        [str(herald), "keys", "master", "--out", str(keys / "master.key")],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr

    apns_port, control_port = free_port(), free_port()
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
            "--log-level", "warning",
        ],  # fmt: skip
        cwd=root,
    )
    sandbox.wait_for_line("  control API", STARTUP_TIMEOUT)
    backends = Backends(root, keys, key_file, f"http://127.0.0.1:{control_port}", apns_port, sandbox)
    if with_provider:
        # With a database, two providers share one provider token through it.
        started: list[tuple[Process, str]] = []
        for n in range(2 if providers_database else 1):
            provider_port = free_port()
            argv = [
                str(herald), "provider",
                "--port", str(provider_port),
                "--apns-key", str(key_file),
                "--apns-team-id", TEAM_ID,
                "--apns-url", f"https://127.0.0.1:{apns_port}",
                "--apns-ca", str(keys / "sandbox-ca.pem"),
                "--secret-file", str(keys / "provider.secret"),
                "--token-cache", str(root / f"provider-token-{n + 1}"),
            ]  # fmt: skip
            if providers_database:
                argv += ["--database", providers_database]
            started.append((processes.start(f"provider-{n + 1}", argv, cwd=root), f"http://127.0.0.1:{provider_port}"))
        for process, _ in started:
            line = process.wait_for_line("  listening", STARTUP_TIMEOUT)
            assert line, process.stderr_tail()
        (backends.provider, backends.provider_url), *more = started
        backends.more_providers = [process for process, _ in more]
        backends.more_provider_urls = [url for _, url in more]
    return backends


@dataclass
class Node:
    """One `herald relay` node: its arguments, so it can be started again the same way."""

    name: str
    port: int
    argv: list[str]
    process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def relay_node(
    herald: Path,
    backends: Backends,
    database: str,
    name: str,
    provider_url: str | list[str],
    workers: int = WORKERS,
    batch_size: int = BATCH_SIZE,
) -> Node:
    provider_urls = [provider_url] if isinstance(provider_url, str) else provider_url
    port = free_port()
    argv = [
        str(herald), "relay",
        "--port", str(port),
        "--keys-dir", str(backends.keys),
        "--database", database,
        "--node-id", name,
        "--app", f"{BUNDLE_ID}:{TEAM_ID}",
        *[arg for url in provider_urls for arg in ("--provider-url", url)],
        "--provider-secret-file", str(backends.keys / "provider.secret"),
        "--workers", str(workers),
        "--batch-size", str(batch_size),
        "--log-level", os.environ.get("HERALD_CLUSTER_LOG_LEVEL", "info"),
    ]  # fmt: skip
    return Node(name, port, argv)


def start_nodes(nodes: list[Node], processes: Processes, root: Path, run: int = 1) -> None:
    for node in nodes:
        node.process = processes.start(f"{node.name}-{run}", node.argv, cwd=root)
    for node in nodes:
        line = node.process.wait_for_line("  relay", STARTUP_TIMEOUT)
        assert f":{node.port}/" in line, line


def activate_users(backends: Backends, nodes: list[Node], api_key: str, count: int) -> list[str]:
    users = [f"user-{n}" for n in range(count)]
    for index, user in enumerate(users):
        activate_iphone(backends.control_url, nodes[index % len(nodes)].url, api_key, BUNDLE_ID, user)
    return users


def send_message_and_call(relay_url: str, api_key: str, body: dict, user: str, call_id: str) -> tuple[dict, list[str]]:
    """Sends the message `body` and a call `call_id` to `user`: the message's receipt and the two
    pushes' ids (the message's, then the call's)."""
    status, receipt = call(f"{relay_url}/v1/messages", "POST", body, token=api_key)
    assert status == 202, receipt
    status, call_receipt = call(
        f"{relay_url}/v1/calls",
        "POST",
        {"to": user, "from": {"id": "agent-7", "name": "Agent"}, "call_id": call_id},
        token=api_key,
    )
    assert status == 202, call_receipt
    push_ids = [push["push_id"] for push in receipt["pushes"] + call_receipt["pushes"]]
    assert len(push_ids) == 2, (receipt, call_receipt)
    return receipt, push_ids


# --- the burst -----------------------------------------------------------------------------------


class Burst:
    """Sender threads, round-robin over the nodes. A request refused with 503 or cut off with its
    connection goes to the next node with the same idempotency key; a 202 is an acknowledgement."""

    def __init__(self, nodes: list[Node], api_key: str, users: list[str], phase: str):
        self.nodes = nodes
        self.api_key = api_key
        self.users = users
        self.phase = phase
        self.lock = threading.Lock()
        self.acked: dict[str, str] = {}  # push id -> idempotency key
        self.answers: dict[str, list[str]] = {}  # idempotency key -> push ids of its first 202
        self.acks = 0
        self.refused = 0  # 503 answers (each with Retry-After and a JSON reason)
        self.cut_off = 0  # requests whose connection failed (the killed node)
        self.reconnects = 0  # requests sent again on a new connection to a live node
        self.hung: list[str] = []  # requests a live node never answered (sent again elsewhere)
        self.duplicate_answers = 0  # 202s for a key answered before or committed before a cut-off
        self.errors: list[str] = []
        self.dead: set[str] = set()  # nodes that are being killed: their connection errors are expected
        self.stopping = threading.Event()
        self.ack_event = threading.Condition(self.lock)
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(SENDER_THREADS)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def wait_for_acks(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.ack_event:
            while self.acks < count and not self.errors:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.ack_event.wait(left)
            return self.acks >= count

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = sum(thread.is_alive() for thread in self.threads)
        assert alive == 0, f"{alive} sender threads still running {timeout} s after the burst stopped"

    def run(self, number: int) -> None:
        connections: dict[int, KeepAlive] = {}
        index = 0
        try:
            while not self.stopping.is_set():
                key = f"{self.phase}-{number}-{index}"
                body = message(self.users[(number + index * SENDER_THREADS) % len(self.users)], index, key)
                if not self.send(body, number + index, connections):
                    return
                index += 1
        finally:
            for connection in connections.values():
                connection.close()

    def send(self, body: dict, first: int, connections: dict[int, KeepAlive]) -> bool:
        """Until a 202 (True) or an error (False); the same body to node after node."""
        key = body["idempotency_key"]
        deadline = time.monotonic() + PHASE_TIMEOUT
        attempt = 0
        stale_retried = False
        while time.monotonic() < deadline:
            slot = (first + attempt) % len(self.nodes)
            node = self.nodes[slot]
            attempt += 1
            with self.lock:
                if node.name in self.dead:
                    continue
            if slot not in connections:
                connections[slot] = KeepAlive(node.port, self.api_key)
            try:
                status, answer, retry_after = request(connections[slot], body)
            except (OSError, http.client.HTTPException) as error:
                connections.pop(slot).close()
                with self.lock:
                    if node.name in self.dead:
                        self.cut_off += 1
                        continue
                    stale = isinstance(error, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))
                    if stale and not stale_retried:
                        # A keep-alive connection the server closed while idle: once, on a new one.
                        # (A timeout is not that: a request that hangs is an error.)
                        stale_retried = True
                        self.reconnects += 1
                        attempt -= 1
                        continue
                    if isinstance(error, TimeoutError):
                        # No answer within REQUEST_TIMEOUT: a client gives up and sends the same
                        # key to another node. Counted, and a failure at the end.
                        self.hung.append(f"{key} on {node.name}: no answer within {REQUEST_TIMEOUT} s")
                        continue
                    self.errors.append(f"{key} on {node.name}: {type(error).__name__}: {error}")
                    self.ack_event.notify_all()
                    return False
            stale_retried = False
            if status == 503:
                with self.lock:
                    self.refused += 1
                    if retry_after is None or not isinstance(answer, dict) or "error" not in answer:
                        self.errors.append(f"{key} on {node.name}: 503 without Retry-After or JSON reason: {answer!r}")
                        self.ack_event.notify_all()
                        return False
                time.sleep(min(retry_after, RETRY_PAUSE_LIMIT))
                continue
            with self.lock:
                if status != 202:
                    self.errors.append(f"{key} on {node.name}: status {status}: {answer!r}")
                    self.ack_event.notify_all()
                    return False
                pushes = [push["push_id"] for push in answer.get("pushes", [])]
                if len(pushes) != 1 or answer.get("skipped"):
                    self.errors.append(f"{key} on {node.name}: expected one push, got {answer!r}")
                if answer.get("duplicate"):
                    self.duplicate_answers += 1
                earlier = self.answers.setdefault(key, pushes)
                if earlier != pushes:
                    self.errors.append(f"{key}: answered {earlier} first and {pushes} on {node.name}")
                for push_id in pushes:
                    self.acked[push_id] = key
                self.acks += 1
                self.ack_event.notify_all()
            return True
        with self.lock:
            self.errors.append(f"{key}: no 202 within {PHASE_TIMEOUT} s")
            self.ack_event.notify_all()
        return False


def request(connection: KeepAlive, body: dict) -> tuple[int, object, float | None]:
    """POST /v1/messages; (status, JSON, Retry-After seconds or None)."""
    connection.connection.request(
        "POST", "/v1/messages", body=json.dumps(body).encode(), headers=connection.headers
    )
    response = connection.connection.getresponse()
    raw = response.read()
    retry_after = response.getheader("retry-after")
    try:
        decoded = json.loads(raw) if raw else None
    except ValueError:
        decoded = raw.decode(errors="replace")
    return response.status, decoded, (float(retry_after) if retry_after else None)


# --- checks --------------------------------------------------------------------------------------


def wait_until_accepted(control_url: str, push_ids, timeout: float) -> tuple[collections.Counter, list[str]]:
    """Polls the sandbox until every push id was accepted (or `timeout`); (counts, missing)."""
    deadline = time.monotonic() + timeout
    while True:
        seen, _ = accepted_apns_ids(control_url)
        missing = [push_id for push_id in push_ids if push_id.lower() not in seen]
        if not missing or time.monotonic() > deadline:
            return seen, missing
        time.sleep(0.25)


def not_delivered(nodes: list[Node], api_key: str, push_ids, timeout: float = 10.0) -> list[str]:
    """The pushes `GET /v1/pushes/{id}` does not show delivered, asking the nodes in turn; those
    not yet delivered are asked again until `timeout` (the sandbox answers before the relay
    records the outcome)."""
    clients = [KeepAlive(node.port, api_key) for node in nodes]
    pending = list(push_ids)
    deadline = time.monotonic() + timeout
    try:
        while True:
            wrong: list[str] = []
            still: list[str] = []
            for index, push_id in enumerate(pending):
                node = index % len(nodes)
                status, view = clients[node].request("GET", f"/v1/pushes/{push_id}")
                if status != 200 or view.get("state") != "delivered" or view.get("apns_id", "").lower() != push_id.lower():
                    wrong.append(f"{push_id} on {nodes[node].name}: {status} {view!r}")
                    still.append(push_id)
            if not wrong or time.monotonic() > deadline:
                return wrong
            pending = still
            time.sleep(0.25)
    finally:
        for client in clients:
            client.close()


def outbox_drained(nodes: list[Node]) -> list[str]:
    problems = []
    for node in nodes:
        status, health = call(f"{node.url}/health")
        if status != 200 or health.get("outbox_queued", 0) != 0 or health.get("outbox_sending", 0) != 0:
            problems.append(f"{node.name}: {status} {health!r}")
    return problems


def tails(processes: Processes) -> str:
    return "\n".join(f"--- {p.name} stderr (tail):\n{p.stderr_tail(15)}" for p in processes.started)


# --- the cluster test ----------------------------------------------------------------------------


def test_cluster_survives_a_dead_node_and_a_database_restart(postgres: Postgres, herald: Path, workdir):
    started = time.monotonic()
    root, processes = workdir
    schema = "cluster_burst"
    postgres.query(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    database = postgres.url_for(schema)
    backends = start_backends(herald, root, processes, providers_database=database)
    provider_urls = [backends.provider_url, *backends.more_provider_urls]
    nodes = [relay_node(herald, backends, database, f"node-{n + 1}", provider_urls) for n in range(NODES)]
    # The first node makes the API key (and migrates); the others start together after it.
    start_nodes(nodes[:1], processes, root)
    start_nodes(nodes[1:], processes, root)
    api_key = (backends.keys / "api.key").read_text().strip()
    assert api_key
    users = activate_users(backends, nodes, api_key, USERS)
    status, body = call(f"{backends.control_url}/sandbox/faults/latency", "PUT", {"ms": SANDBOX_LATENCY_MS})
    assert status == 204, body

    # Phase 1: no node dies. Every push exactly once.
    burst = Burst(nodes, api_key, users, "one")
    burst.start()
    reached = burst.wait_for_acks(PHASE1_ACKS, PHASE_TIMEOUT)
    burst.stop(REQUEST_TIMEOUT + 5)
    assert reached and not burst.errors and not burst.hung, (
        f"phase 1: {burst.acks} acknowledgements; errors: {(burst.errors + burst.hung)[:5]!r}\n{tails(processes)}"
    )
    phase1 = dict(burst.acked)
    seen, missing = wait_until_accepted(backends.control_url, phase1, DELIVERY_TIMEOUT)
    phase1_duplicates = sorted(push_id for push_id in phase1 if seen[push_id.lower()] > 1)
    phase1_summary = (
        f"phase 1: {len(phase1)} pushes acknowledged over {NODES} nodes, {len(phase1) - len(missing)} accepted by "
        f"the sandbox, {len(phase1_duplicates)} accepted more than once, {burst.refused} refused (503)"
    )
    print("\n" + phase1_summary)
    assert not missing, f"{len(missing)} acknowledged pushes never reached the sandbox, e.g. {missing[:5]}: {phase1_summary}"
    assert not phase1_duplicates, f"pushes sent twice while no node died, e.g. {phase1_duplicates[:5]}: {phase1_summary}"
    wrong = not_delivered(nodes, api_key, phase1)
    assert not wrong, f"{len(wrong)} pushes not delivered per the relay, e.g. {wrong[:5]}: {phase1_summary}"

    # Phase 2: SIGKILL node-2 mid-burst, then restart PostgreSQL while the burst goes on.
    victim = nodes[1]
    burst = Burst(nodes, api_key, users, "two")
    burst.start()
    if not burst.wait_for_acks(KILL_AFTER_ACKS, PHASE_TIMEOUT):
        burst.stop(REQUEST_TIMEOUT + 5)
        pytest.fail(f"phase 2: {burst.acks} acknowledgements before the kill; errors: {burst.errors[:5]!r}\n{tails(processes)}")
    with burst.lock:
        burst.dead.add(victim.name)
    victim.process.popen.send_signal(signal.SIGKILL)
    victim.process.popen.wait(timeout=10)
    assert victim.process.popen.returncode == -signal.SIGKILL, victim.process.popen.returncode
    acks_at_kill = burst.acks
    # What the dead node held claimed: the only pushes that may now be sent twice.
    held = {
        row[0].lower()
        for row in postgres.query(
            f"SELECT push_id FROM {schema}.outbox WHERE state = 'sending' AND claim_owner = '{victim.name}'"
        )
    }
    refused_before_restart = burst.refused
    downtime = postgres.restart()
    acks_at_restart = burst.acks
    resumed = burst.wait_for_acks(acks_at_restart + ACKS_AFTER_RESTART, PHASE_TIMEOUT)
    # A request in flight when the server went down may be refused just after pg_ctl returns: the
    # refusals the restart caused are all those since it began, counted once the load resumed. A
    # restart of a fraction of a second may cause none (the pool reconnects and the request waits):
    # what shows the nodes went through it is that every connection they now hold was made after it
    # (a restart ends every server process), while the load kept being acknowledged.
    refused_by_restart = burst.refused - refused_before_restart
    reconnected = int(
        postgres.query(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )[0][0]
    )
    burst.stop(REQUEST_TIMEOUT + 5)
    assert resumed and not burst.errors, (
        f"phase 2: {burst.acks - acks_at_restart} acknowledgements after the database restart (of "
        f"{ACKS_AFTER_RESTART}); errors: {burst.errors[:5]!r}\n{tails(processes)}"
    )
    status, body = call(f"{backends.control_url}/sandbox/faults/latency", "PUT", {"ms": 0})
    assert status == 204, body

    # The dead node comes back under its own id and releases what it held.
    victim_restarted_at = time.monotonic()
    start_nodes([victim], processes, root, run=2)
    phase2 = dict(burst.acked)
    expected = {**phase1, **phase2}
    seen, missing = wait_until_accepted(backends.control_url, expected, DELIVERY_TIMEOUT)
    waited = time.monotonic() - victim_restarted_at
    sent_twice = sorted(apns_id for apns_id, count in seen.items() if count > 1)
    not_held = [apns_id for apns_id in sent_twice if apns_id not in held]
    wrong = not_delivered(nodes, api_key, expected)
    requeued = re.search(r"count=(\d+) \[HeraldRelay\] re-queued pushes claimed", victim.process.stderr_path.read_text())
    drained = outbox_drained(nodes)
    drain_deadline = time.monotonic() + 10
    while drained and time.monotonic() < drain_deadline:
        time.sleep(0.25)
        drained = outbox_drained(nodes)
    summary = (
        f"phase 2: {len(phase2)} pushes acknowledged ({acks_at_kill} before the SIGKILL of {victim.name}, which held "
        f"{len(held)} claimed; {burst.cut_off} requests cut off by it and sent to another node, "
        f"{burst.duplicate_answers} answered as already accepted, {burst.reconnects} sent again on a new "
        f"connection to a live node, {len(burst.hung)} left unanswered by a live node and sent to another), PostgreSQL restarted in {downtime:.1f} s "
        f"({refused_by_restart} requests refused with 503 since the restart began, {burst.refused} in all, each retried; "
        f"{reconnected} connections made again); "
        f"{victim.name} restarted and re-queued {requeued.group(1) if requeued else 0}; "
        f"{len(expected) - len(missing)} of {len(expected)} pushes accepted by the sandbox "
        f"(polling ended {waited:.1f} s after the restart), {len(expected) - len(wrong)} delivered per GET /v1/pushes, "
        f"{len(sent_twice)} apns-ids accepted more than once ({len(not_held)} not held by {victim.name}; "
        f"bound {WORKERS} workers x {BATCH_SIZE} = {WORKERS * BATCH_SIZE})"
    )
    print(summary)
    assert not missing, f"{len(missing)} acknowledged pushes never reached the sandbox, e.g. {missing[:5]}: {summary}\n{tails(processes)}"
    assert not wrong, f"{len(wrong)} pushes not delivered per the relay, e.g. {wrong[:5]}: {summary}"
    assert not not_held, (
        f"pushes sent twice that the killed node did not hold, e.g. {not_held[:5]} (a live node or the database "
        f"restart sent them twice): {summary}"
    )
    assert len(sent_twice) <= (WORKERS + 1) * BATCH_SIZE, (
        f"more pushes sent twice than (workers + 1) x batch size: {summary}"
    )
    assert held, f"the kill hit no claims in flight: {summary}"
    assert reconnected > 0, f"no node connected to PostgreSQL again after its restart: {summary}"
    assert not drained, f"outbox not drained: {drained}: {summary}"
    assert not burst.hung, f"live nodes left requests unanswered, e.g. {burst.hung[:5]}: {summary}"
    status, counts = call(f"{backends.control_url}/sandbox/apns/provider-tokens")
    assert status == 200, counts
    print(f"provider tokens seen by the sandbox: {counts}")
    assert [(key["tokens_accepted"], key["updates_refused"]) for key in counts["keys"]] == [(1, 0)], (
        f"the two providers did not share one provider token: {counts}"
    )

    for process in [node.process for node in nodes] + [backends.provider, *backends.more_providers, backends.sandbox]:
        code = stop(process)
        assert code == 0, f"{process.name} exited {code} after SIGTERM; stderr (tail):\n{process.stderr_tail()}"
    print(f"total {time.monotonic() - started:.1f} s")


# --- wake-ups across nodes -----------------------------------------------------------------------


class SilentProvider:
    """A provider that answers /health and takes batches without ever answering them: the relay
    node that sends to it keeps its dispatcher loop busy (until the relay's 30 s timeout)."""

    def __init__(self):
        self.batches = 0
        self.first_batch = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({"apns": "on", "fcm": "off", "status": "ok"}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", "0")))
                outer.batches += 1
                outer.first_batch.set()
                outer.release.wait(60)
                self.send_response(503)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_ingest_on_one_node_wakes_an_idle_node(postgres: Postgres, herald: Path, workdir):
    root, processes = workdir
    schema = "cluster_wake"
    postgres.query(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    backends = start_backends(herald, root, processes)
    database = postgres.url_for(schema)
    silent = SilentProvider()
    try:
        # Node A: one loop, one push at a time, to a provider that never answers.
        node_a = relay_node(herald, backends, database, "wake-a", silent.url, workers=1, batch_size=1)
        start_nodes([node_a], processes, root)
        api_key = (backends.keys / "api.key").read_text().strip()
        (user,) = activate_users(backends, [node_a], api_key, 1)
        status, answer = call(f"{node_a.url}/v1/messages", "POST", message(user, 0, "wake-hold"), token=api_key)
        assert status == 202, answer
        held = answer["pushes"][0]["push_id"]
        assert silent.first_batch.wait(STARTUP_TIMEOUT), f"node A never sent a batch\n{tails(processes)}"
        rows = postgres.query(f"SELECT state, claim_owner FROM {schema}.outbox WHERE push_id = '{held}'")
        assert rows == [["sending", "wake-a"]], rows

        # Node B: the real provider; its loop sleeps up to IDLE_POLL_MS unless something wakes it.
        node_b = relay_node(herald, backends, database, "wake-b", backends.provider_url, workers=1, batch_size=16)
        start_nodes([node_b], processes, root)
        client = KeepAlive(node_a.port, api_key)
        latencies: list[int] = []
        try:
            for round_ in range(WAKE_ROUNDS):
                status, answer = client.request("POST", "/v1/messages", message(user, round_ + 1, f"wake-{round_}"))
                assert status == 202, answer
                push_id = answer["pushes"][0]["push_id"]
                deadline = time.monotonic() + 10
                while True:
                    status, view = client.request("GET", f"/v1/pushes/{push_id}")
                    assert status == 200, view
                    if view["state"] != "queued" and view["state"] != "sending":
                        break
                    assert time.monotonic() < deadline, f"round {round_}: not delivered within 10 s: {view!r}"
                    time.sleep(0.02)
                assert view["state"] == "delivered", view
                delivered_at = next(event["at"] for event in view["history"] if event["state"] == "delivered")
                latencies.append(delivered_at - view["created_at"])
                # The next ingest comes soon after this delivery, long before B's idle poll ends.
                time.sleep(0.05)
        finally:
            client.close()
        assert silent.batches == 1, f"node A sent {silent.batches} batches: its loop was not held"
        median = statistics.median(latencies)
        summary = (
            f"ingest on wake-a to delivered by wake-b: {latencies} ms (median {median} ms; "
            f"without a wake-up, up to the idle poll of {IDLE_POLL_MS} ms)"
        )
        print("\n" + summary)
        assert median < WAKE_LIMIT_MS, f"pushes ingested on one node waited for the idle poll on another: {summary}"
    finally:
        silent.close()


# --- outcomes across a database outage -----------------------------------------------------------

# The push network's delay while PostgreSQL goes away (the issue saw it with 1.5 s): the answers
# come back while the database is down.
OUTAGE_LATENCY_MS = 2000
# How long PostgreSQL stays down: longer than the five tries (3.1 s) after which outcomes used to
# be given up, far shorter than the claims' 60 s lease.
OUTAGE_S = 8.0
# After the database's return, by when both outcomes must be recorded (the writer tries again at
# least every second; the store probes every 500 ms).
RECORDED_WITHIN_S = 10.0


def pg_stop(postgres: Postgres) -> list[str]:
    """`pg_ctl stop -m fast`; the server's options (port, socket directory, settings), as
    `postgresql.opts` kept them, to start it again the same way."""
    owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    words = shlex.split((postgres.data / "postmaster.opts").read_text())
    # The binary, then its arguments; the data directory is given to pg_ctl apart.
    options, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word == "-D":
            skip = True
        else:
            options.append(word)
    done = subprocess.run(
        [*owner, str(postgres.bin / "pg_ctl"), "stop", "-m", "fast", "-w", "-t", "60", "-D", str(postgres.data)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=90,
    )  # fmt: skip
    assert done.returncode == 0, f"pg_ctl stop failed ({done.returncode}): {done.stderr}"
    return options


def pg_start(postgres: Postgres, options: list[str]) -> None:
    owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    log = postgres.data.parent / "server.log"
    done = subprocess.run(
        [
            *owner, str(postgres.bin / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(postgres.data), "-l", str(log),
            "-o", " ".join(shlex.quote(option) for option in options),
        ],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=90,
    )  # fmt: skip
    assert done.returncode == 0, f"pg_ctl start failed ({done.returncode}): {done.stderr}"


def wait_for_log(process: Process, text: str, timeout: float) -> bool:
    """Whether `text` appears in the process's stderr (its log) within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in process.stderr_path.read_text(errors="replace"):
            return True
        time.sleep(0.05)
    return False


def test_outcomes_learned_while_the_database_is_down_are_recorded(postgres: Postgres, herald: Path, workdir):
    """Issue 30: a message and a call in flight (the sandbox answers OUTAGE_LATENCY_MS late) when
    PostgreSQL stops for OUTAGE_S. The node keeps their outcomes and records them when the
    database answers again, long before their 60 s leases end: each push ends `delivered`
    (history: queued, delivered), accepted by the sandbox exactly once."""
    root, processes = workdir
    schema = "cluster_outage"
    postgres.query(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    backends = start_backends(herald, root, processes)
    node = relay_node(herald, backends, postgres.url_for(schema), "outage-1", backends.provider_url)
    start_nodes([node], processes, root)
    api_key = (backends.keys / "api.key").read_text().strip()
    activate_iphone(backends.control_url, node.url, api_key, BUNDLE_ID, "outage-user")
    status, body = call(f"{backends.control_url}/sandbox/faults/latency", "PUT", {"ms": OUTAGE_LATENCY_MS})
    assert status == 204, body

    _, push_ids = send_message_and_call(
        node.url, api_key, message("outage-user", 0, "outage-message"), "outage-user", "outage-call"
    )
    # In flight: the sandbox took both (it records a push when it takes it) and answers later.
    seen, missing = wait_until_accepted(backends.control_url, push_ids, OUTAGE_LATENCY_MS / 1000)
    assert not missing, f"not at the sandbox within the latency: {missing}\n{tails(processes)}"

    stopped_at = time.monotonic()
    options = pg_stop(postgres)
    stop_took = time.monotonic() - stopped_at
    relay = node.process
    failing = wait_for_log(relay, "cannot record push outcomes", OUTAGE_S)
    # Down for OUTAGE_S in all: longer than the retries that used to give up.
    time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped_at)))
    pg_start(postgres, options)
    back_at = time.monotonic()
    assert failing, (
        f"the node never failed to record an outcome (the answers came before the stop, {stop_took:.1f} s?)\n"
        f"{relay.stderr_tail()}"
    )

    client = KeepAlive(node.port, api_key)
    states: dict[str, dict] = {}
    try:
        while time.monotonic() < back_at + RECORDED_WITHIN_S:
            for push_id in push_ids:
                try:
                    status, view = client.request("GET", f"/v1/pushes/{push_id}")
                except (OSError, http.client.HTTPException):
                    client.close()
                    client = KeepAlive(node.port, api_key)
                    continue
                if status == 200:
                    states[push_id] = view
            if all(view.get("state") == "delivered" for view in states.values()) and len(states) == 2:
                break
            time.sleep(0.1)
    finally:
        client.close()
    recorded_after = time.monotonic() - back_at
    seen, _ = accepted_apns_ids(backends.control_url)
    log = relay.stderr_path.read_text(errors="replace")
    summary = (
        f"PostgreSQL stopped in {stop_took:.1f} s, down {back_at - stopped_at:.1f} s; outcomes recorded "
        f"{recorded_after:.1f} s after its return; states "
        f"{ {push_id: view.get('state') for push_id, view in states.items()} }; sandbox acceptances "
        f"{ {push_id: seen[push_id.lower()] for push_id in push_ids} }; "
        f"{log.count('cannot record push outcomes')} 'cannot record' lines, "
        f"{log.count('push outcomes are recorded again')} 'recorded again' lines"
    )
    print("\n" + summary)
    for push_id in push_ids:
        view = states.get(push_id, {})
        assert view.get("state") == "delivered", f"{push_id}: {view!r}: {summary}\n{relay.stderr_tail()}"
        assert [event["state"] for event in view["history"]] == ["queued", "delivered"], f"{push_id}: {view!r}"
        assert seen[push_id.lower()] == 1, f"{push_id} accepted {seen[push_id.lower()]} times: {summary}"
    assert log.count("cannot record push outcomes") == 1, summary
    assert log.count("push outcomes are recorded again") == 1, summary
    status, health = call(f"{node.url}/health")
    assert status == 200 and health.get("outbox_sending", 0) == 0, health
    for process in [node.process, backends.provider, backends.sandbox]:
        code = stop(process)
        assert code == 0, f"{process.name} exited {code} after SIGTERM; stderr (tail):\n{process.stderr_tail()}"
