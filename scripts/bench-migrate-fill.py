"""Fills a stopped node's herald.sqlite with synthetic records (devices, messages with keys, pending pushes)."""
import os, sqlite3, sys
path, devices, pushes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = sqlite3.connect(path)
t = 1_700_000_000_000
rnd = lambda n: os.urandom(n)
db.executemany(
    "INSERT INTO devices (id, user_id, app_id, platform, messaging_token, voip_token, key_id, previous_key_id, device_public_key, relay_public_key, sealed_relay_secret_key, sealed_session_keys, credential_hash, token_dead_reason, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [(f"d{i}", f"u{i}", "com.example.chat", "ios", rnd(32).hex(), rnd(32).hex(), "0011223344556677", None, rnd(32), rnd(32), rnd(72), rnd(104), rnd(32), None, t, t) for i in range(devices)],
)
db.executemany(
    "INSERT INTO messages (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at) VALUES (?,?,?,?,?,?,?)",
    [(f"m{i}", f"u{i % devices}", "c", rnd(64), rnd(200), t + i, t + 86_400_000) for i in range(pushes)],
)
db.executemany("INSERT INTO ingests (idempotency_key, receipt, created_at) VALUES (?,?,?)", [(f"k{i}", rnd(120), t + i) for i in range(pushes)])
db.executemany(
    "INSERT INTO outbox (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority, apns_id, fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, claim_owner, claim_until, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [(f"p{i:08d}", f"d{i % devices}", "message", f"m{i}", 5, "apns", "com.example.chat", "alert", 5, f"p{i:08d}", None, None, 1, t + i, t + 86_400_000, "queued", "unreachable", None, None, t + i, t + i) for i in range(pushes)],
)
db.executemany("INSERT INTO outbox_payloads (push_id, payload) VALUES (?,?)", [(f"p{i:08d}", '{"aps":{"alert":"x","mutable-content":1},"h":"' + rnd(150).hex() + '"}') for i in range(pushes)])
db.commit()
