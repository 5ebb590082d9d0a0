"""Deadlines that escalate act at most once, across a SIGKILL and across nodes (docs/receipts.md,
"Deadlines that escalate").

The real `herald` binary as subprocesses, with the helpers of Tests/interop/test_cluster.py and
test_relay_crash.py, on the throw-away PostgreSQL of scripts/with-postgres.sh (`make interop`):

* `herald sandbox` and one `herald provider`; two `herald relay` nodes on one database (their own
  schema in it), started without `--app`, so that a node's start does not register the app again
  over what the backend saved;
* the backend saves the app with the rule `{"kind":"message","after":2,"action":"notify"}` and a
  webhook to this test's receiver (`PUT /v1/apps/{id}`), which checks each signature as a receiver
  would and keeps the events' `Herald-Event-Id`s per push;
* USERS sandbox iPhones that never connect (APNs accepts and keeps their pushes; they send no
  receipt), and N messages to them over both nodes: N pushes, each with a deadline 2 s on;
* once the first `push.unseen` reached the receiver (the deadlines are coming due), the test locks
  `webhook_events` (EXCLUSIVE): a node settling a deadline then stops at writing its event, with
  the deadline's row deleted in its open transaction and its other claims held. Once a node holds
  a claim, its escalation counter is read (nothing settles meanwhile), it gets SIGKILL, the lock
  is let go and the node is started again with the same node id (it takes its own claims back at
  once; another node would after the 30 s lease).

Then every push has exactly one `push.unseen`: one distinct event id per push id at the receiver
(a repeat delivery of the same event is allowed: at least once), naming action `notify`; no
deadline is left in the store; and `herald_relay_push_escalations_total` summed over the
survivor, the killed node's first run (as read before the kill) and its second run is N.

A webhook event the killed node had claimed for delivery is sent again only when its 60 s lease
lapses (the queue does not give a node its own claims back at start, as the deadlines do): the run
then takes about a minute instead of five seconds.

Run: scripts/with-postgres.sh python3 -m pytest -q Tests/interop/test_deadlines_cluster.py
(HERALD_BIN overrides the binary, default .build/debug/herald).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import subprocess
import threading
import time
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The cluster test's PostgreSQL, processes and nodes (Tests/interop is on sys.path under pytest).
from test_cluster import (  # noqa: F401  (herald, postgres and workdir are fixtures)
    BUNDLE_ID,
    TEAM_ID,
    Node,
    Postgres,
    activate_users,
    call,
    herald,
    message,
    postgres,
    relay_node,
    start_backends,
    start_nodes,
    workdir,
)
from waiting import eventually

N = 30
USERS = 10
AFTER_SECONDS = 2
RULE = {"kind": "message", "after": AFTER_SECONDS, "action": "notify"}
# Every event at the receiver: the deadlines' 2 s, a lapsed claim's or webhook lease's 30 s, and
# a debug build's pace on a loaded machine.
EVENTS_TIMEOUT = 90.0
ESCALATIONS = re.compile(r'^herald_relay_push_escalations_total\{([^}]*)\} (\d+(?:\.\d+)?)$', re.M)


class Receiver:
    """The backend's webhook receiver: checks each signature (docs/webhooks.md, "Verifying, in
    Python") and keeps, per push id, the ids of the `push.unseen` events it took; a condition is
    notified on each, so the test waits on it instead of polling."""

    def __init__(self) -> None:
        self.secret = secrets.token_hex(32)
        self.changed = threading.Condition()
        self.unseen: dict[str, set[str]] = {}  # push id -> event ids
        self.actions: set[str] = set()
        self.deliveries = 0
        self.refused = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                timestamp = self.headers.get("Herald-Timestamp", "")
                expected = hmac.new(receiver.secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
                event_id = self.headers.get("Herald-Event-Id", "")
                signed = hmac.compare_digest("v1=" + expected.hexdigest(), self.headers.get("Herald-Signature", ""))
                event = json.loads(body) if signed else None
                if event is None or event.get("id") != event_id:
                    with receiver.changed:
                        receiver.refused += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                with receiver.changed:
                    receiver.deliveries += 1
                    if event["type"] == "push.unseen":
                        receiver.unseen.setdefault(event["data"]["push_id"], set()).add(event_id)
                        receiver.actions.add(event["data"]["action"])
                    receiver.changed.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/herald-events"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, predicate, timeout: float, what: str) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: predicate(self), timeout):
                raise AssertionError(f"{what}: not within {timeout} s ({len(self.unseen)} pushes with push.unseen)")


def without_app(node: Node) -> Node:
    """The node's arguments less `--app`: its start must not save the app over the backend's."""
    at = node.argv.index("--app")
    node.argv = node.argv[:at] + node.argv[at + 2 :]
    return node


def escalations(node: Node) -> int:
    """`herald_relay_push_escalations_total` summed over its series, from the node's /metrics."""
    with urllib.request.urlopen(node.url + "/metrics", timeout=15) as response:
        text = response.read().decode()
    return sum(int(float(count)) for _, count in ESCALATIONS.findall(text))


@contextmanager
def locked(postgres: Postgres, table: str, mode: str):
    """`table` locked in `mode` by a psql session of the test's until the block ends; entered once
    the lock is granted (psql says so: the signal to go on)."""
    session = subprocess.Popen(
        [str(postgres.bin / "psql"), postgres.url, "-X", "-q", "-v", "ON_ERROR_STOP=1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        session.stdin.write(f"BEGIN;\nLOCK TABLE {table} IN {mode} MODE;\n\\echo locked\n")
        session.stdin.flush()
        line = session.stdout.readline()
        assert line.strip() == "locked", (line, session.stderr.read() if session.poll() is not None else "")
        yield
    finally:
        _, err = session.communicate("COMMIT;\n", timeout=30)
        assert session.returncode == 0, err


def test_each_unseen_push_escalates_once_across_a_sigkill_and_two_nodes(postgres: Postgres, herald: Path, workdir):
    root, processes = workdir
    schema = "deadlines_once"
    postgres.query(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    database = postgres.url_for(schema)
    backends = start_backends(herald, root, processes)
    nodes = [without_app(relay_node(herald, backends, database, f"node-{n + 1}", backends.provider_url)) for n in range(2)]
    # The first node makes the API key and migrates; the second starts after it.
    start_nodes(nodes[:1], processes, root)
    start_nodes(nodes[1:], processes, root)
    api_key = (backends.keys / "api.key").read_text().strip()

    with Receiver() as receiver:
        status, app = call(
            f"{nodes[0].url}/v1/apps/{BUNDLE_ID}",
            "PUT",
            {"team_id": TEAM_ID, "deadlines": [RULE], "webhook": {"url": receiver.url, "secret": receiver.secret}},
            token=api_key,
        )
        assert status == 200 and app["deadlines"] == [RULE], app
        users = activate_users(backends, nodes, api_key, USERS)
        push_ids: list[str] = []
        for index in range(N):
            node = nodes[index % len(nodes)]
            body = message(users[index % USERS], index, f"unseen-{index}")
            status, receipt = call(f"{node.url}/v1/messages", "POST", body, token=api_key)
            assert status == 202, receipt
            push_ids += [push["push_id"] for push in receipt["pushes"]]
        assert len(set(push_ids)) == N, push_ids

        # The deadlines are coming due. With the events' table locked, a node that settles one
        # stops at writing its event, holding its claims: the node that holds some is killed
        # between claim and settle.
        receiver.wait_for(lambda r: r.unseen, AFTER_SECONDS + 30, "the first push.unseen")
        table = f"{schema}.push_deadlines"

        def claims() -> dict[str, int]:
            rows = postgres.query(f"SELECT coalesce(owner, ''), count(*) FROM {table} GROUP BY 1")
            return {owner: int(count) for owner, count in rows}

        with locked(postgres, f"{schema}.webhook_events", "EXCLUSIVE"):
            # The store gives no signal of a claim: polled, with a deadline.
            held = eventually(
                lambda: (lambda c: c if any(c.get(node.name) for node in nodes) else None)(claims()),
                timeout=15,
                what=lambda: f"a node to claim a deadline (rows by owner): {claims()}",
            )
            victim = max(nodes, key=lambda node: held.get(node.name, 0))
            # Nothing settles while the lock holds: the victim's counter stands (two equal
            # readings, as the counter follows a commit that may have just returned).
            readings = [escalations(victim), escalations(victim)]
            while readings[-1] != readings[-2]:
                readings.append(escalations(victim))
            first_run = readings[-1]
            victim.process.popen.kill()
            victim.process.popen.wait(timeout=30)
        survivor = next(node for node in nodes if node is not victim)
        start_nodes([victim], processes, root, run=2)
        restarted = time.monotonic()

        receiver.wait_for(lambda r: set(push_ids) <= set(r.unseen), EVENTS_TIMEOUT, "a push.unseen for every push")
        all_in = time.monotonic() - restarted
        # Nothing is left to escalate: no later event can come.
        eventually(
            lambda: postgres.query(f"SELECT count(*) FROM {schema}.push_deadlines")[0][0] == "0",
            timeout=EVENTS_TIMEOUT,
            what="the deadlines settled",
        )
        with receiver.changed:
            unseen = {push: set(ids) for push, ids in receiver.unseen.items()}
            actions = set(receiver.actions)
            refused = receiver.refused

    assert set(unseen) == set(push_ids), set(unseen) ^ set(push_ids)
    twice = {push: ids for push, ids in unseen.items() if len(ids) != 1}
    assert not twice, f"pushes with more than one push.unseen event: {twice}"
    assert actions == {"notify"}, actions
    assert refused == 0, f"{refused} deliveries failed the signature check"
    # The counters: the survivor, the victim before the kill, the victim since. Read until both
    # have counted what they settled (the counter follows the commit).
    total = eventually(
        lambda: (lambda n: n if n == N else None)(escalations(survivor) + first_run + escalations(victim)),
        timeout=10,
        what=lambda: (
            f"escalations counted: {survivor.name} {escalations(survivor)}, {victim.name} {first_run} before "
            f"the kill and {escalations(victim)} since; {N} expected"
        ),
    )
    assert total == N
    print(
        f"\n{N} pushes; when {victim.name} was killed the deadlines were held {held} ('' unclaimed), "
        f"and it had settled {first_run}; every event in {all_in:.1f} s after its restart"
    )
