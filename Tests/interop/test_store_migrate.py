"""`herald store migrate` (issue #16): a SQLite deployment moved to PostgreSQL carries on, and back.

The test drives the real `herald` binary, as test_cluster.py does (and with its helpers), against
the throw-away PostgreSQL of scripts/with-postgres.sh:

* `herald sandbox` runs in its own process, so it outlives the relay's restart;
* `herald serve` on SQLite (`--data`) sends to it; one iOS device is activated (messaging and VoIP
  tokens) and the sandbox plays an APNs outage (`POST /sandbox/faults/outage`), so the message
  and the call ingested then stay undelivered; a callback is scheduled for a time after the move;
  `herald keys api` makes an app's key (with a rate) and an admin key it revokes, and the app's key
  sends a message to a user with no device yet, which is held;
* while that node runs, `herald store migrate` refuses (the database is open); the node is
  stopped (SIGTERM, exit 0); a dry run prints the counts and writes nothing; the migration copies
  and checks the counts; a second one is refused (the database holds data); a missing file, a
  wrong URL and an unreachable server each give one line and a non-zero exit;
* `herald serve --database postgres://…` starts on the copy with the same keys; the outage ends:
  both pushes reach the sandbox under their push ids and show `delivered`; the message ingested
  again with its idempotency key answers the same receipt; the device's credential still opens
  its message; the ringing call is known; the app's key is still accepted and the revoked one
  still refused (401); the audit log reads as before the move; the held message is released when
  its user's first phone activates, and reaches the sandbox; the callback, still scheduled when
  the SQLite node stopped, is pushed once by the PostgreSQL node when due (its push reaches the
  sandbox), and scheduling it again with its key answers the same callback;
* the way back: while the PostgreSQL node runs, `herald store migrate --from postgres://… --to
  sqlite:…` refuses (a node is connected); once it stopped, a dry run prints the counts, the copy
  writes a new SQLite file and checks the counts, a second copy is refused (the file exists), and
  `herald serve` on that file answers the repeated message with its receipt, opens the message
  for the device, knows the callback as the PostgreSQL node left it, takes the app's key and
  refuses the revoked one.

Run: scripts/with-postgres.sh python3 -m pytest -q Tests/interop/test_store_migrate.py
(HERALD_BIN overrides the binary, default .build/debug/herald). Without HERALD_TEST_POSTGRES_URL
the test fails: it is never skipped for want of a database.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from test_cluster import (  # noqa: F401  (postgres and workdir are fixtures)
    BUNDLE_ID,
    STARTUP_TIMEOUT,
    TEAM_ID,
    Postgres,
    postgres,
    send_message_and_call,
    start_backends,
    workdir,
)
from test_relay_crash import accepted_apns_ids, activate_iphone, call, free_port, herald, stop  # noqa: F401
from waiting import eventually

DELIVERY_TIMEOUT = 30.0
# When the callback is due, counted from its scheduling: after the SQLite node stopped and the
# move is done (about a second here), so the PostgreSQL node is the one that pushes it.
CALLBACK_DELAY_S = 8


def migrate(herald: Path, root: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(herald), "store", "migrate", *arguments], capture_output=True, text=True, timeout=120, cwd=root
    )


def make_api_key(herald: Path, root: Path, data: Path, *arguments: str) -> dict:
    """`herald keys api create … --json` on the node's SQLite database: the key, with its token."""
    made = subprocess.run(
        [str(herald), "keys", "api", "create", *arguments, "--json", "--data", str(data)],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)


def one_line_error(result: subprocess.CompletedProcess, expected: str) -> None:
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr


def counts(stdout: str) -> dict[str, int]:
    """`  devices           1` lines -> {"devices": 1}."""
    found = {}
    for line in stdout.splitlines():
        if line.startswith("  "):
            name, _, number = line.strip().rpartition(" ")
            found[name.strip()] = int(number)
    return found


def test_a_sqlite_deployment_moves_to_postgres_and_carries_on(postgres: Postgres, herald: Path, workdir):
    root, processes = workdir
    backends = start_backends(herald, root, processes, with_provider=False)
    data = root / "data"
    database = data / "herald.sqlite"
    target = postgres.url_for("store_migrate")
    postgres.query("DROP SCHEMA IF EXISTS store_migrate CASCADE")

    port = free_port()
    relay_url = f"http://127.0.0.1:{port}"
    serve = [
        str(herald), "serve",
        "--port", str(port),
        "--keys-dir", str(backends.keys),
        "--data", str(data),
        "--app", f"{BUNDLE_ID}:{TEAM_ID}",
        "--apns-key", str(backends.key_file),
        "--apns-team-id", TEAM_ID,
        "--apns-url", f"https://127.0.0.1:{backends.apns_port}",
        "--apns-ca", str(backends.keys / "sandbox-ca.pem"),
    ]  # fmt: skip
    first = processes.start("serve-sqlite", serve, cwd=root)
    first.wait_for_line("  relay", STARTUP_TIMEOUT)
    api_key = (backends.keys / "api.key").read_text().strip()

    activation = activate_iphone(backends.control_url, relay_url, api_key, BUNDLE_ID, "migrating-user")
    device_id, credential = activation["device_id"], activation["device_credential"]

    status, outage = call(f"{backends.control_url}/sandbox/faults/outage", "POST", {"ms": 600_000})
    assert status == 201, outage
    message = {
        "to": "migrating-user",
        "from": {"id": "agent-7", "name": "Agent"},
        "conversation": "conv-1",
        "text": "still there after the move",
        "idempotency_key": "migrate-key-1",
    }
    receipt, push_ids = send_message_and_call(relay_url, api_key, message, "migrating-user", "call-1")

    # Before the callback (its delay counts from its scheduling): a backend's key (with a rate),
    # an admin key revoked, and a message held by the app's key for a user with no phone yet.
    crm = make_api_key(herald, root, data, "--name", "crm", "--app", BUNDLE_ID, "--scopes", "send,read", "--rate", "50")
    old = make_api_key(herald, root, data, "--name", "old", "--admin", "--scopes", "read")
    revoked = subprocess.run(
        [str(herald), "keys", "api", "revoke", old["id"], "--data", str(data)],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    # A console operator: accounts travel (only their hashes), sessions never do.
    operator = subprocess.run(
        [str(herald), "operators", "add", "olga", "--role", "viewer", "--data", str(data)],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert operator.returncode == 0, operator.stderr
    # The node reads the keys again every few seconds: the new one taken, the revoked one not.
    eventually(lambda: call(f"{relay_url}/v1/pushes/{push_ids[0]}", token=crm["token"])[0] == 200,
               DELIVERY_TIMEOUT, 0.2, "the new key taken")  # fmt: skip
    assert call(f"{relay_url}/v1/pushes/{push_ids[0]}", token=old["token"])[0] == 401
    waiting = dict(message, to="waiting-user", idempotency_key="migrate-held-1", text="kept for the first phone")
    status, held = call(f"{relay_url}/v1/messages", "POST", waiting, token=crm["token"])
    assert status == 202 and held["status"] == "held", held
    status, audit = call(f"{relay_url}/v1/audit", token=api_key)
    assert status == 200 and len(audit["entries"]) >= 3, audit

    due = datetime.now(timezone.utc) + timedelta(seconds=CALLBACK_DELAY_S)
    callback_request = {
        "user_id": "migrating-user",
        "service_id": "3SQI3S31693JL9L3R00506T40C000U73",
        "at": due.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "idempotency_key": "migrate-callback-1",
    }
    status, callback = call(f"{relay_url}/v1/callbacks", "POST", callback_request, token=api_key)
    assert status == 201 and callback["state"] == "scheduled", callback
    callback_id = callback["callback_id"]
    for push_id in push_ids:
        status, push = call(f"{relay_url}/v1/pushes/{push_id}", token=api_key)
        assert status == 200 and push["state"] in ("queued", "sending"), push

    # The node still has the database open.
    one_line_error(migrate(herald, root, "--from", f"sqlite:{database}", "--to", target), "open in another process")
    assert stop(first) == 0
    assert datetime.now(timezone.utc) < due, "the SQLite node may have pushed the callback: raise CALLBACK_DELAY_S"

    dry = migrate(herald, root, "--from", f"sqlite:{database}", "--to", target, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    expected = {
        "apps": 1, "devices": 1, "presence": 0, "messages": 2, "idempotency keys": 3, "pending pushes": 2,
        "chats": 0, "transcript events": 0, "disconnects": 0, "callbacks": 1, "calls": 1, "webhook events": 0,
        "API keys": 2, "audit entries": len(audit["entries"]), "held messages": 1, "operators": 1,
    }  # fmt: skip
    assert counts(dry.stdout) == expected, dry.stdout
    assert postgres.query("SELECT to_regclass('store_migrate.devices') IS NULL") == [["t"]]

    copied = migrate(herald, root, "--from", f"sqlite:{database}", "--to", target)
    assert copied.returncode == 0, copied.stderr
    assert counts(copied.stdout) == expected, copied.stdout
    assert "checked: PostgreSQL holds as many records of each kind" in copied.stdout, copied.stdout
    print(copied.stdout)

    one_line_error(
        migrate(herald, root, "--from", f"sqlite:{database}", "--to", target), "already holds Herald data"
    )
    one_line_error(
        migrate(herald, root, "--from", f"sqlite:{root}/nothing.sqlite", "--to", target), "no SQLite database at"
    )
    one_line_error(migrate(herald, root, "--from", str(database), "--to", target), "--from must be sqlite:PATH")
    one_line_error(
        migrate(herald, root, "--from", f"sqlite:{database}", "--to", "mysql://h/db"), "not a PostgreSQL URL"
    )
    one_line_error(
        migrate(herald, root, "--from", f"sqlite:{database}", "--to", f"postgres://herald@127.0.0.1:{free_port()}/x"),
        "cannot connect to",
    )

    # The same relay on PostgreSQL, with the same keys.
    assert datetime.now(timezone.utc) < due, "the move took longer than CALLBACK_DELAY_S"
    second = processes.start("serve-postgres", serve + ["--database", target], cwd=root)
    second.wait_for_line("  relay", STARTUP_TIMEOUT)
    status, moved = call(f"{relay_url}/v1/callbacks/{callback_id}", token=api_key)
    assert status == 200 and moved["state"] == "scheduled" and moved["pushes"] == 0, moved
    assert moved["history"] == callback["history"], moved
    status, _ = call(f"{backends.control_url}/sandbox/faults", "DELETE")
    assert status == 204

    eventually(lambda: all(accepted_apns_ids(backends.control_url)[0][push_id.lower()] >= 1 for push_id in push_ids),
               DELIVERY_TIMEOUT, what=lambda: f"{push_ids} at the sandbox\n{second.stderr_tail()}")  # fmt: skip
    for push_id in push_ids:
        eventually(lambda: (answer := call(f"{relay_url}/v1/pushes/{push_id}", token=api_key))[0] == 200
                   and answer[1]["state"] == "delivered", DELIVERY_TIMEOUT, what=f"push {push_id} delivered")  # fmt: skip

    status, again = call(f"{relay_url}/v1/messages", "POST", message, token=api_key)
    assert status == 202, again
    assert again["duplicate"] is True and again["id"] == receipt["id"], again
    assert again["pushes"] == receipt["pushes"], again

    status, fetched = call(f"{relay_url}/v1/messages/{receipt['id']}", token=credential)
    assert status == 200, fetched
    status, device = call(f"{relay_url}/v1/devices/{device_id}", token=credential)
    assert status == 200 and device["device_id"] == device_id, device

    status, ringing = call(f"{relay_url}/v1/calls/call-1", token=api_key)
    assert status == 200 and ringing["call_id"] == "call-1", ringing

    # The keys moved: the app's is taken, the revoked one refused; the audit log as it was.
    status, pushed_before = call(f"{relay_url}/v1/pushes/{push_ids[0]}", token=crm["token"])
    assert status == 200, pushed_before
    status, refused = call(f"{relay_url}/v1/pushes/{push_ids[0]}", token=old["token"])
    assert status == 401, refused
    status, moved_audit = call(f"{relay_url}/v1/audit", token=api_key)
    assert status == 200 and moved_audit["entries"][-len(audit["entries"]) :] == audit["entries"], moved_audit

    # The held message waited for its user's first phone: released on PostgreSQL, delivered once.
    first_phone = activate_iphone(backends.control_url, relay_url, api_key, BUNDLE_ID, "waiting-user")
    def released_messages():
        status, listed = call(f"{relay_url}/v1/pushes?device={first_phone['device_id']}", token=api_key)
        assert status == 200, listed
        released = [push for push in listed["pushes"] if push["kind"] == "message"]
        return released if released and released[0]["state"] == "delivered" else None

    released = eventually(released_messages, DELIVERY_TIMEOUT, what="the held message delivered")
    assert len(released) == 1, released
    status, again = call(f"{relay_url}/v1/messages", "POST", waiting, token=crm["token"])
    assert status == 202 and again["duplicate"] is True and again["id"] == held["id"], again

    # The callback comes due on PostgreSQL: pushed once, and its push reaches the sandbox.
    def pushed_callback():
        status, pushed = call(f"{relay_url}/v1/callbacks/{callback_id}", token=api_key)
        assert status == 200, pushed
        return pushed if pushed["state"] == "pushed" else None

    pushed = eventually(pushed_callback, CALLBACK_DELAY_S + DELIVERY_TIMEOUT, 0.2,
                        lambda: f"callback pushed\n{second.stderr_tail()}")  # fmt: skip
    assert pushed["pushes"] == 1, pushed
    assert [line["event"] for line in pushed["history"]] == ["scheduled", "pushed"], pushed
    status, again = call(f"{relay_url}/v1/callbacks", "POST", callback_request, token=api_key)
    assert status == 200 and again["duplicate"] is True and again["callback_id"] == callback_id, again
    status, listed = call(f"{relay_url}/v1/pushes?device={device_id}", token=api_key)
    assert status == 200, listed
    callback_pushes = [push["push_id"] for push in listed["pushes"] if push["kind"] == "callback"]
    assert len(callback_pushes) == 1, listed
    eventually(lambda: accepted_apns_ids(backends.control_url)[0][callback_pushes[0].lower()] > 0,
               DELIVERY_TIMEOUT, what=f"the callback's push at the sandbox: {listed}")  # fmt: skip

    # The way back: the PostgreSQL node's data into a new SQLite file, and a node on it.
    back = root / "back"
    back_database = back / "herald.sqlite"
    one_line_error(migrate(herald, root, "--from", target, "--to", f"sqlite:{back_database}"), "stop every node first")
    status, audit_back = call(f"{relay_url}/v1/audit", token=api_key)
    assert status == 200, audit_back
    audit_back = audit_back["entries"]
    assert len(audit_back) == len(audit["entries"]) + 1, audit_back
    assert stop(second) == 0
    dry_back = migrate(herald, root, "--from", target, "--to", f"sqlite:{back_database}", "--dry-run")
    assert dry_back.returncode == 0, dry_back.stderr
    # All delivered on PostgreSQL, the held message released to the phone that activated there
    # (its activation one more audit entry).
    expected_back = dict(
        expected, **{"pending pushes": 0, "held messages": 0, "devices": 2, "audit entries": len(audit_back)}
    )
    assert counts(dry_back.stdout) == expected_back, dry_back.stdout
    assert not back_database.exists()
    copied_back = migrate(herald, root, "--from", target, "--to", f"sqlite:{back_database}")
    assert copied_back.returncode == 0, copied_back.stderr
    assert counts(copied_back.stdout) == expected_back, copied_back.stdout
    assert "checked: the SQLite file holds as many records of each kind as PostgreSQL" in copied_back.stdout
    print(copied_back.stdout)
    one_line_error(migrate(herald, root, "--from", target, "--to", f"sqlite:{back_database}"), "exists")
    one_line_error(migrate(herald, root, "--from", target, "--to", target), "--to must be sqlite:PATH")

    third = processes.start("serve-back", [*serve[:6], "--data", str(back), *serve[8:]], cwd=root)
    third.wait_for_line("  relay", STARTUP_TIMEOUT)
    status, again = call(f"{relay_url}/v1/messages", "POST", message, token=api_key)
    assert status == 202 and again["duplicate"] is True and again["id"] == receipt["id"], again
    status, fetched = call(f"{relay_url}/v1/messages/{receipt['id']}", token=credential)
    assert status == 200, fetched
    status, moved_back = call(f"{relay_url}/v1/callbacks/{callback_id}", token=api_key)
    assert status == 200 and moved_back["state"] == "pushed" and moved_back["history"] == pushed["history"], moved_back
    # Finished pushes stayed behind: the keys are tried on the callback.
    status, _ = call(f"{relay_url}/v1/callbacks/{callback_id}", token=crm["token"])
    assert status == 200
    status, _ = call(f"{relay_url}/v1/callbacks/{callback_id}", token=old["token"])
    assert status == 401
    assert stop(third) == 0
