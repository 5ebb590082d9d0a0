"""Fills a stopped node's herald.sqlite with a week of synthetic traffic for the console benchmark.

    python3 scripts/bench-console-fill.py fill herald.sqlite DEVICES PUSHES [USERS]
    python3 scripts/bench-console-fill.py copy-finished herald.sqlite POSTGRES_URL

`fill` writes rows straight into a database `herald serve` made and migrated (and then stopped):
DEVICES devices (iOS, Android, browsers, Huawei phones) over USERS users (default DEVICES/2; ten
"heavy" users get 5% of the traffic), messages fanned out to their users' devices until PUSHES
pushes are written, spread over the last SPAN_HOURS hours (default 167: a week, less an hour so
that retention deletes nothing while the benchmark runs) ending now, in real epoch milliseconds.
States as a relay leaves them: mostly delivered, some failed, token_dead, expired or skipped, a few
queued for a retry due in 12 h (so no dispatcher sends them during the run); retries leave their
`delivery_log` rows; the phones' receipts (delivered, opened, shown, sometimes tapped or failed) for
~70% of the delivered messages; calls (a few still ringing, until 6 h from now) and callbacks
(some scheduled, due later); presence for some devices; an audit log. Sealed columns hold random
bytes (nothing here can open them, and no page opens them). Columns are checked against the
database's own schema: a column this script names that the table lacks, or a NOT NULL column
without a default that it leaves out, stops it (the schema moved: update the script).

Prints one JSON line: the ids the benchmark searches for (a heavy user, a push, a message, ...).

`copy-finished` copies what `herald store migrate` leaves behind (finished pushes, with their
payloads, history and receipts) from the filled SQLite into the PostgreSQL the migration filled,
through psql's COPY, then ANALYZEs: the console benchmark on PostgreSQL reads the same million.

Environment: SPAN_HOURS (167), NOW (epoch ms, default the clock), SEED (1).
"""
import csv, io, json, os, random, sqlite3, subprocess, sys, time, uuid

APP = "com.example.chat"
HOUR = 3_600_000
DAY = 24 * HOUR


class Table:
    """Inserts rows given as dicts, checked once against the table's columns."""

    def __init__(self, db, name):
        self.db, self.name = db, name
        info = db.execute(f"PRAGMA table_info({name})").fetchall()
        if not info:
            sys.exit(f"bench-console-fill: no table {name} in the database (was it made by herald serve?)")
        self.columns = {row[1]: row for row in info}  # cid, name, type, notnull, default, pk
        self.keys = None
        self.rows = []

    def add(self, row):
        if self.keys is None:
            unknown = set(row) - set(self.columns)
            if unknown:
                sys.exit(f"bench-console-fill: {self.name} has no column {sorted(unknown)}: the schema changed")
            missing = [c for c, (_, _, _, notnull, default, pk) in self.columns.items()
                       if notnull and default is None and not pk and c not in row]
            if missing:
                sys.exit(f"bench-console-fill: {self.name} needs {missing}: the schema changed")
            self.keys = list(row)
            cols = ", ".join(self.keys)
            marks = ", ".join("?" * len(self.keys))
            self.sql = f"INSERT INTO {self.name} ({cols}) VALUES ({marks})"
        self.rows.append(tuple(row[k] for k in self.keys))
        if len(self.rows) >= 50_000:
            self.flush()

    def flush(self):
        if self.rows:
            self.db.executemany(self.sql, self.rows)
            self.rows = []


def uuid7(ms, rnd):
    """A time-ordered id like the relay's (UUID version 7 layout, lowercase)."""
    high = ((ms & 0xFFFF_FFFF_FFFF) << 16) | 0x7000 | rnd.getrandbits(12)
    low = rnd.getrandbits(62) | 0x8000_0000_0000_0000
    h = f"{high:016x}{low:016x}"
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def fill(path, devices, pushes, users):
    rnd = random.Random(int(os.environ.get("SEED", "1")))
    now = int(os.environ.get("NOW") or time.time() * 1000)
    span = int(float(os.environ.get("SPAN_HOURS", "167")) * HOUR)
    start = now - span
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-400000")
    db.execute("BEGIN")
    if not db.execute("SELECT 1 FROM apps WHERE id = ?", (APP,)).fetchone():
        sys.exit(f"bench-console-fill: app {APP} is not registered (start herald serve with --app {APP}:TEAM)")
    t = {n: Table(db, n) for n in (
        "devices", "presence", "messages", "ingests", "outbox", "outbox_payloads", "delivery_log",
        "push_receipts", "calls", "call_devices", "callbacks", "callback_history", "audit_log")}
    blob = os.urandom

    # Devices: every user one, the rest to users at random (1 + Poisson(1) per user on average).
    platforms = [("ios", 55), ("android", 35), ("web", 7), ("huawei", 3)]
    weights = [w for _, w in platforms]
    user_devices = [[] for _ in range(users)]  # (device id, platform, alive)
    for i in range(devices):
        u = i if i < users else rnd.randrange(users)
        platform = rnd.choices(platforms, weights)[0][0]
        dead = rnd.random() < 0.02
        created = now - rnd.randrange(60 * DAY)
        device_id = f"dev{i:07d}"
        token = None if dead else (
            f"https://push.example.net/wp/{blob(24).hex()}" if platform == "web" else blob(32).hex())
        t["devices"].add({
            "id": device_id, "user_id": f"user{u:06d}", "app_id": APP, "platform": platform,
            "messaging_token": token, "voip_token": blob(32).hex() if platform == "ios" and not dead else None,
            "key_id": blob(8).hex(), "previous_key_id": None, "device_public_key": blob(32),
            "relay_public_key": blob(32), "sealed_relay_secret_key": blob(72), "sealed_session_keys": blob(104),
            "credential_hash": blob(32), "token_dead_reason": ("Unregistered" if dead else None),
            "created_at": created, "updated_at": rnd.randrange(created, now),
            "apns_environment": "development" if platform == "ios" else None,
            "web_push_keys": b"\x04" + blob(80) if platform == "web" else None,
        })
        if rnd.random() < 0.05:
            at = now - rnd.randrange(2 * HOUR)
            t["presence"].add({"device_id": device_id, "user_id": f"user{u:06d}", "conversation": None,
                               "state": rnd.choice(["active", "background"]), "updated_at": at,
                               "expires_at": at + 90_000})
        user_devices[u].append((device_id, platform, not dead))
    t["devices"].flush()
    t["presence"].flush()

    network_of = {"ios": "apns", "android": "fcm", "web": "webpush", "huawei": "hms"}
    dead_reason = {"apns": "BadDeviceToken", "fcm": "UNREGISTERED", "webpush": "Gone", "hms": "80300007"}
    fail_reasons = {"apns": ["PayloadTooLarge", "TopicDisallowed", "BadCertificateEnvironment"],
                    "fcm": ["INVALID_ARGUMENT", "SENDER_ID_MISMATCH"], "webpush": ["PayloadTooLarge", "BadRequest"],
                    "hms": ["80100003", "80300008"]}
    retry_reasons = ["unreachable", "TooManyRequests", "InternalServerError", "ServiceUnavailable"]
    heavy = [f"user{u:06d}" for u in range(min(10, users))]
    written = 0
    messages = 0
    queued_left = max(20, pushes // 5000)
    calls = callbacks = 0
    sample = {}
    # One message (or call, or callback) at a time, in time order, until the pushes are written.
    # The pace is set again at each one from what is left, so the last push lands just before now.
    clock, events = start, 0
    while written < pushes:
        fan = written / events if events else 1.9
        events += 1
        clock += rnd.expovariate(max(1, pushes - written) / fan / max(1, now - 2_000 - clock))
        at = min(int(clock), now - 2_000)
        u = rnd.randrange(10) if rnd.random() < 0.05 and users >= 10 else rnd.randrange(users)
        user = f"user{u:06d}"
        targets = [d for d in user_devices[u] if d[2]]
        if not targets:
            continue
        roll = rnd.random()
        kind = "message" if roll < 0.95 else "call" if roll < 0.98 else "callback"
        if kind == "message":
            subject = uuid7(at, rnd)
            messages += 1
            t["messages"].add({"id": subject, "user_id": user, "conversation": f"conv-{u}-{rnd.randrange(5)}",
                               "sealed_sender": blob(48), "sealed_text": blob(rnd.randrange(80, 400)),
                               "created_at": at, "expires_at": at + 7 * DAY, "sealed_push_options": None})
            if rnd.random() < 0.5:
                t["ingests"].add({"idempotency_key": f"k-{subject}", "receipt": blob(120), "created_at": at})
            if user == heavy[0] and "message_id" not in sample and at > now - DAY:
                sample["message_id"] = subject
            ttl = DAY
        elif kind == "call":
            subject = uuid7(at, rnd)
            calls += 1
            state = rnd.choices(["answered", "declined", "cancelled", "missed"], [40, 10, 15, 35])[0]
            ended = at + rnd.randrange(3_000, 45_000)
            t["calls"].add({"id": subject, "app_id": APP, "user_id": user, "media": rnd.choice(["audio", "video"]),
                            "sealed_caller": blob(80), "state": state,
                            "device_id": targets[0][0] if state == "answered" else None,
                            "reason": {"answered": None, "declined": "declined", "cancelled": "remote_ended",
                                       "missed": "unanswered"}[state],
                            "created_at": at, "expires_at": at + 60_000, "ringing_at": at + 400, "ended_at": ended,
                            "updated_at": ended, "timer_owner": None, "timer_lease": None})
            for d in targets:
                report = "answered" if state == "answered" and d is targets[0] else "ringing"
                t["call_devices"].add({"call_id": subject, "device_id": d[0], "report": report,
                                       "reported_at": at + 500})
            sample["call_id"] = subject
            ttl = 60_000
        else:
            cb = uuid7(at, rnd)
            callbacks += 1
            pending = at > now - 6 * HOUR and callbacks % 3 == 0
            state = "scheduled" if pending else rnd.choices(["connected", "cancelled", "expired"], [60, 15, 25])[0]
            t["callbacks"].add({"id": cb, "app_id": APP, "user_id": user, "state": state, "sealed_dialog": blob(160),
                                "due_at": now + rnd.randrange(HOUR, 48 * HOUR) if pending else at,
                                "expires_at": now + 72 * HOUR if pending else at + DAY,
                                "pushes": 0 if pending else 1, "version": 1, "last_action": None, "owner": None,
                                "lease_until": None, "idempotency_key": None, "created_at": at - HOUR,
                                "updated_at": at})
            t["callback_history"].add({"callback_id": cb, "position": 1, "at": at - HOUR, "event": "scheduled",
                                       "state": "scheduled", "action": None, "sequence": None, "next_push_at": None})
            if pending:
                continue  # no push yet
            subject = f"{cb}#1"
            ttl = HOUR
        for n, (device_id, platform, _) in enumerate(targets):
            if written >= pushes:
                break
            network = network_of[platform]
            created = at + n
            push_id = uuid7(created, rnd)
            voip = kind == "call" and network == "apns"
            attempts = 1
            reason = None
            r = rnd.random()
            if queued_left and created > now - HOUR and rnd.random() < 0.3:
                state, attempts, reason = "queued", rnd.randrange(1, 4), rnd.choice(retry_reasons)
                queued_left -= 1
                updated = created + 2_000 * attempts
            elif r < 0.90 or created + ttl > now - 60_000 and r < 0.97:
                state = "delivered"
                if rnd.random() < 0.05:
                    attempts = rnd.randrange(2, 4)
                updated = created + int(rnd.lognormvariate(4.8, 0.8)) + sum(1_000 << k for k in range(attempts - 1))
            elif r < 0.93:
                state, reason = "token_dead", dead_reason[network]
                updated = created + int(rnd.lognormvariate(4.8, 0.8))
            elif r < 0.96:
                state, reason = "failed", rnd.choice(fail_reasons[network])
                updated = created + int(rnd.lognormvariate(4.8, 0.8))
            elif r < 0.99 and created + ttl < now:
                state, reason, attempts = "expired", "expired", rnd.randrange(2, 8)
                updated = created + ttl
            else:
                state, reason = "skipped", "no_token"
                updated = created + 1
            updated = min(updated, now - 1_000)
            expires = now + DAY if state == "queued" else created + ttl
            t["outbox"].add({
                "push_id": push_id, "device_id": device_id,
                "kind": kind, "subject_id": subject, "priority": 10 if kind != "message" or rnd.random() < 0.7 else 5,
                "network": network,
                "topic": APP + (".voip" if voip else ""),
                "push_type": ("voip" if voip else "alert") if network == "apns" else None,
                "apns_priority": 10 if network == "apns" else None,
                "apns_id": push_id.upper() if network == "apns" else None,
                "fcm_priority": None if network == "apns" else {"fcm": "HIGH", "hms": "HIGH", "webpush": "high"}[network],
                "collapse_id": None, "attempts": attempts,
                "next_attempt_at": now + 12 * HOUR if state == "queued" else updated,
                "expires_at": expires, "state": state, "last_reason": reason,
                "claim_owner": None, "claim_until": None, "created_at": created, "updated_at": updated,
                "waiting_since": None, "now_or_never": 1 if kind == "call" else 0, "trace_context": None,
            })
            sealed = blob(rnd.randrange(150, 300)).hex()
            payload = (json.dumps({"aps": {"alert": {"title": "New message", "body": "Open the app"},
                                           "mutable-content": 1}, "h": sealed}, separators=(",", ":"))
                       if network == "apns" else json.dumps({"h": sealed, "push_id": push_id}, sort_keys=True,
                                                            separators=(",", ":")))
            t["outbox_payloads"].add({"push_id": push_id, "payload": payload})
            for k in range(attempts - 1):
                t["delivery_log"].add({"push_id": push_id, "at": created + (1_000 << k),
                                       "state": "queued", "reason": rnd.choice(retry_reasons)})
            if state == "delivered" and kind != "call" and rnd.random() < 0.72:
                got = updated + int(rnd.lognormvariate(6.0, 0.7))
                skew = rnd.randrange(-2_000, 2_000)
                if rnd.random() < 0.015:
                    stages = [("delivered", got, None), ("failed", got + 5, rnd.choice(["tampered", "unknown_key"]))]
                else:
                    stages = [("delivered", got, None), ("opened", got + 8, None), ("shown", got + 30, None)]
                    if rnd.random() < 0.12:
                        stages.append(("tapped", got + rnd.randrange(2_000, 600_000), None))
                for stage, received, failure in stages:
                    received = min(received, now)
                    t["push_receipts"].add({"push_id": push_id, "stage": stage, "device_at": received + skew,
                                            "received_at": received, "failure": failure})
            if state == "delivered" and created > now - DAY and user == heavy[0]:
                sample["push_id"] = push_id
            written += 1
    # A few calls still ringing (until 6 h from now: no timer ends them while the benchmark runs),
    # and callbacks scheduled for later, whatever the size.
    for k in range(5):
        u = rnd.randrange(users)
        at = now - 1_000 * (k + 1)
        call = uuid7(at, rnd)
        t["calls"].add({"id": call, "app_id": APP, "user_id": f"user{u:06d}", "media": "audio",
                        "sealed_caller": blob(80), "state": "ringing", "device_id": None, "reason": None,
                        "created_at": at, "expires_at": now + 6 * HOUR, "ringing_at": at + 400, "ended_at": None,
                        "updated_at": at + 400, "timer_owner": None, "timer_lease": None})
        for d in user_devices[u]:
            t["call_devices"].add({"call_id": call, "device_id": d[0], "report": "ringing", "reported_at": at + 500})
    for k in range(20):
        at = now - rnd.randrange(6 * HOUR)
        t["callbacks"].add({"id": uuid7(at, rnd), "app_id": APP, "user_id": f"user{rnd.randrange(users):06d}",
                            "state": "scheduled", "sealed_dialog": blob(160), "due_at": now + rnd.randrange(HOUR, 48 * HOUR),
                            "expires_at": now + 72 * HOUR, "pushes": 0, "version": 1, "last_action": None,
                            "owner": None, "lease_until": None, "idempotency_key": None, "created_at": at,
                            "updated_at": at})
    for i in range(2_000):
        at = start + i * (span // 2_000)
        t["audit_log"].add({"id": uuid7(at, rnd), "at": at, "actor": "key:backend", "action": "device.deactivated",
                            "target": f"dev{rnd.randrange(devices):07d}", "app_id": APP})
    for table in t.values():
        table.flush()
    db.execute("COMMIT")
    counts = {n: db.execute(f"SELECT COUNT(*) FROM {n}").fetchone()[0] for n in ("devices", "outbox", "push_receipts",
                                                                             "messages", "calls", "callbacks")}
    db.close()
    sample.update(heavy_user=heavy[0], user=f"user{users // 2:06d}", now=now, counts=counts)
    print(json.dumps(sample, sort_keys=True))


def copy_finished(path, url):
    """Finished pushes (and their payloads, history, receipts) into PostgreSQL, which
    `herald store migrate` does not move."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    finished = "SELECT push_id FROM outbox WHERE state NOT IN ('queued', 'sending')"
    tables = [
        ("outbox", f"WHERE state NOT IN ('queued', 'sending')"),
        ("outbox_payloads", f"WHERE push_id IN ({finished})"),
        ("delivery_log", f"WHERE push_id IN ({finished})"),
        ("push_receipts", f"WHERE push_id IN ({finished})"),
    ]
    for table, where in tables:
        pg = subprocess.run(["psql", url, "-Atqc", "SELECT column_name FROM information_schema.columns "
                             f"WHERE table_name = '{table}' AND table_schema = current_schema()"],
                            check=True, capture_output=True, text=True).stdout.split()
        ours = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        columns = [c for c in ours if c in pg and not (table == "delivery_log" and c == "id")]
        left = set(pg) - set(columns) - {"id"}
        if left:
            sys.exit(f"bench-console-fill: PostgreSQL's {table} has columns SQLite's lacks: {sorted(left)}")
        copy = subprocess.Popen(["psql", url, "-v", "ON_ERROR_STOP=1", "-qc",
                                 f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv)"],
                                stdin=subprocess.PIPE, text=True)
        writer = csv.writer(copy.stdin)
        n = 0
        for row in db.execute(f"SELECT {', '.join(columns)} FROM {table} {where}"):
            writer.writerow(["" if v is None else v for v in row])
            n += 1
        copy.stdin.close()
        if copy.wait() != 0:
            sys.exit(f"bench-console-fill: COPY {table} failed")
        print(f"copied {n} rows of {table}", file=sys.stderr)
    subprocess.run(["psql", url, "-qc", "ANALYZE"], check=True)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "fill":
        devices, pushes = int(sys.argv[3]), int(sys.argv[4])
        fill(sys.argv[2], devices, pushes, int(sys.argv[5]) if len(sys.argv) > 5 else max(1, devices // 2))
    elif len(sys.argv) == 4 and sys.argv[1] == "copy-finished":
        copy_finished(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
