"""Receipts from the phone (docs/receipts.md) with PyNaCl, an independent libsodium binding.

* every vector of docs/test-vectors/receipt-v1.json is recomputed here (key pairs from the seeds,
  session keys, key id, receipt key, signed bytes, tag), and the file is what
  scripts/receipt_vectors.py writes; every `negative` entry's tag does not verify with the
  relay's keys;
* a running `herald serve` (the spec-checking relay of test_relay_openapi.py, so every answer is
  also held to docs/openapi.yaml) takes receipts made here with a PyNaCl key pair: a device
  activates, a message is delivered to it, its `shown` receipt is recorded (201), the same again
  is a retry (200), a flipped tag byte is 403, and `GET /v1/pushes/{id}` shows `device_stage`
  `shown`; the webhook events carry the receipt.

Herald's own code is checked against the same file by Tests/HeraldCryptoTests/ReceiptVectorTests.

Run: HERALD_BIN=.build/debug/herald scripts/with-postgres.sh python3 -m pytest -q
Tests/interop/test_receipts_pynacl.py
"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import pytest
from nacl import bindings as sodium

from test_relay_openapi import DELIVERY_TIMEOUT, MAX_BODY, Relay, herald, relay, spec, unique  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import receipt_vectors as rv  # noqa: E402  (scripts/ is not a package)

VECTORS = json.loads(rv.VECTORS_PATH.read_text(encoding="utf-8"))


# --- the vectors ---------------------------------------------------------------------------------


def test_the_file_is_what_the_generator_writes():
    assert rv.VECTORS_PATH.read_text(encoding="utf-8") == rv.rendered(), "run scripts/receipt_vectors.py"
    assert len(VECTORS["receipts"]) >= 10 and len(VECTORS["negative"]) >= 8


@pytest.mark.parametrize("name", ["keys", "other_device"])
def test_keys_follow_from_the_seeds(name: str):
    keys = VECTORS[name]
    device_pk, device_sk = sodium.crypto_kx_seed_keypair(bytes.fromhex(keys["device_seed"]))
    relay_pk, relay_sk = sodium.crypto_kx_seed_keypair(bytes.fromhex(keys["relay_seed"]))
    assert (device_pk.hex(), device_sk.hex()) == (keys["device_public_key"], keys["device_secret_key"])
    assert (relay_pk.hex(), relay_sk.hex()) == (keys["relay_public_key"], keys["relay_secret_key"])
    device_rx, device_tx = sodium.crypto_kx_client_session_keys(device_pk, device_sk, relay_pk)
    relay_rx, relay_tx = sodium.crypto_kx_server_session_keys(relay_pk, relay_sk, device_pk)
    assert (device_rx.hex(), device_tx.hex()) == (keys["device_rx"], keys["device_tx"])
    assert (relay_rx.hex(), relay_tx.hex()) == (keys["relay_rx"], keys["relay_tx"])
    assert relay_rx == device_tx, "receipts travel device → relay"
    assert rv.key_id(device_pk, relay_pk).hex() == keys["key_id"]
    assert rv.receipt_key(device_tx).hex() == keys["receipt_key"] == rv.receipt_key(relay_rx).hex()


def _verifies(entry: dict) -> bool:
    """The relay's check (docs/receipts.md): the device's current key id, and the tag recomputed
    with the receipt key derived from relay_rx."""
    keys = VECTORS["keys"]
    if entry["key_id"] != keys["key_id"]:
        return False
    signed = rv.signed_bytes(
        bytes.fromhex(entry["key_id"]), entry["push_id"], entry["stage"], entry["device_time"], entry["failure"]
    )
    presented = rv.b64url_decode(entry["tag"])
    expected = rv.tag(rv.receipt_key(bytes.fromhex(keys["relay_rx"])), signed)
    return len(presented) == rv.TAG_LENGTH and sodium.sodium_memcmp(presented, expected)


@pytest.mark.parametrize("vector", VECTORS["receipts"], ids=lambda v: v["name"])
def test_receipt_vector(vector: dict):
    keys = VECTORS["keys"]
    signed = rv.signed_bytes(
        bytes.fromhex(keys["key_id"]), vector["push_id"], vector["stage"], vector["device_time"], vector["failure"]
    )
    assert signed.hex() == vector["signed"]
    assert signed.startswith(b"herald-receipt-v1\x01" + bytes.fromhex(keys["key_id"]))
    made = rv.tag(rv.receipt_key(bytes.fromhex(keys["device_tx"])), signed)
    assert rv.b64url(made) == vector["tag"] and "=" not in vector["tag"]
    assert _verifies(vector)


def test_vectors_cover_every_stage_and_failure():
    receipts = VECTORS["receipts"]
    assert {v["stage"] for v in receipts} == set(rv.STAGES)
    assert {v["failure"] for v in receipts if v["stage"] == "failed"} == set(rv.FAILURES)
    assert any(not v["push_id"].isascii() for v in receipts)


@pytest.mark.parametrize("entry", VECTORS["negative"], ids=lambda v: v["name"])
def test_negative_does_not_verify(entry: dict):
    assert not _verifies(entry), entry["why"]


# --- a running relay -----------------------------------------------------------------------------


def _receipt(keys: dict, push_id: str, stage: str, failure: str | None = None, device_time: int | None = None) -> dict:
    """A receipt body as the phone sends it, tagged with `keys` (key_id, device_tx)."""
    moment = int(time.time() * 1000) if device_time is None else device_time
    kid = bytes.fromhex(keys["key_id"])
    made = rv.tag(rv.receipt_key(keys["device_tx"]), rv.signed_bytes(kid, push_id, stage, moment, failure))
    body = {"push_id": push_id, "stage": stage, "device_time": moment, "key_id": keys["key_id"], "tag": rv.b64url(made)}
    return body | ({"failure": failure} if failure else {})


def _phone(relay: Relay, user: str, app: str) -> tuple[dict, dict]:
    """An activated phone with a PyNaCl key pair; its session keys as the device holds them."""
    phone = relay.new_sandbox_device(app)
    activation, device_key = relay.activate(
        user, app=app, messaging_token=phone["messaging_token"], voip_token=phone["voip_token"]
    )
    relay_pk = base64.b64decode(activation["relay_public_key"])
    _rx, tx = sodium.crypto_kx_client_session_keys(bytes(device_key.public_key), bytes(device_key), relay_pk)
    kid = rv.key_id(bytes(device_key.public_key), relay_pk).hex()
    assert kid == activation["key_id"]
    return activation, {"key_id": kid, "device_tx": tx}


def _delivered_message(relay: Relay, user: str) -> str:
    body = {"to": user, "from": {"id": "agent", "name": "Ada"}, "conversation": unique("conv"), "text": "hi"}
    (push,) = relay.call("POST", "/v1/messages", 202, body, relay.api_key)["pushes"]
    assert relay.wait_final(push["push_id"])["state"] == "delivered"
    return push["push_id"]


def _events(relay: Relay, app: str, count: int) -> list[dict]:
    """The app's webhook events once `count` are written (its receiver never answers: they stay)."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    while True:
        events = relay.call("GET", "/v1/webhooks/events?app=" + app, 200, token=relay.api_key)["events"]
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def exercise_receipts(relay: Relay) -> None:
    """Every answer of `POST /v1/devices/{id}/receipts` (test_relay_openapi.py checks that each
    documented one was seen), with receipts made here."""
    key = relay.api_key
    app = unique("com.example.receipts")
    webhook = {"url": "http://127.0.0.1:9/events", "secret": "receipts-webhook-secret-" + "x" * 16}
    relay.call("PUT", f"/v1/apps/{app}", 200, {"team_id": relay.default_team(), "webhook": webhook}, key)
    user = unique("receipt-user")
    activation, keys = _phone(relay, user, app)
    device, credential = activation["device_id"], activation["device_credential"]
    path = f"/v1/devices/{device}/receipts"
    push_id = _delivered_message(relay, user)

    shown = _receipt(keys, push_id, "shown")
    first = relay.call("POST", path, 201, shown, credential)
    fields = ("push_id", "stage", "device_time")
    assert {k: first[k] for k in fields} == {k: shown[k] for k in fields}, first
    assert "failure" not in first and first["received_at"] >= shown["device_time"] - 60_000
    assert relay.call("POST", path, 200, shown, credential) == first, "a retry answers the first receipt"
    later = _receipt(keys, push_id, "shown", device_time=shown["device_time"] + 5)
    assert relay.call("POST", path, 200, later, credential) == first

    flipped = bytearray(rv.b64url_decode(shown["tag"]))
    flipped[7] ^= 0x80
    relay.call("POST", path, 403, shown | {"tag": rv.b64url(bytes(flipped))}, credential)
    relay.call("POST", path, 403, shown | {"stage": "tapped"}, credential)
    relay.call("POST", path, 403, _receipt(keys | {"device_tx": bytes(32)}, push_id, "tapped"), credential)

    status = relay.call("GET", f"/v1/pushes/{push_id}", 200, token=key)
    assert status["device_stage"] == "shown", status
    assert [r["stage"] for r in status["receipts"]] == ["shown"] and status["receipts"][0] == first

    delivered = relay.call("POST", path, 201, _receipt(keys, push_id, "delivered"), credential)
    assert delivered["stage"] == "delivered"
    tapped = relay.call("POST", path, 201, _receipt(keys, push_id, "tapped"), credential)
    status = relay.call("GET", f"/v1/pushes/{push_id}", 200, token=key)
    assert status["device_stage"] == "tapped", status
    assert [r["stage"] for r in status["receipts"]] == ["delivered", "shown", "tapped"], status

    second = _delivered_message(relay, user)
    failed = relay.call("POST", path, 201, _receipt(keys, second, "failed", "unknown_key"), credential)
    assert failed["failure"] == "unknown_key"
    assert relay.call("GET", f"/v1/pushes/{second}", 200, token=key)["device_stage"] == "failed"

    events = [e for e in _events(relay, app, 5) if e["type"] not in ("push.delivered",)]
    assert [(e["type"], e["data"]["push_id"]) for e in events] == [
        ("push.shown", push_id), ("push.tapped", push_id), ("push.failed_on_device", second),
    ], events  # fmt: skip
    data_schema = relay.spec.schema("ReceiptWebhookData")
    for event, receipt in zip(events, (first, tapped, failed)):
        assert event["ordering_key"] == "push:" + receipt["push_id"]
        assert event["data"] == receipt | {"device_id": device, "user_id": user}, event
        assert not list(data_schema.iter_errors(event["data"]))

    # Refusals: the fields, the credential, another device's push.
    relay.call("POST", path, 400, _receipt(keys, push_id, "opened") | {"stage": "read"}, credential, field_name="stage")
    relay.call("POST", path, 400, shown | {"key_id": "xyz"}, credential, field_name="key_id")
    relay.call("POST", path, 400, shown | {"tag": "c2hvcnQ"}, credential, field_name="tag")
    relay.call("POST", path, 400, {k: v for k, v in shown.items() if k != "tag"}, credential, field_name="tag")
    relay.call("POST", path, 400, shown | {"failure": "tampered"}, credential, field_name="failure")
    relay.call("POST", path, 400, shown | {"stage": "failed"}, credential, field_name="failure")
    relay.call("POST", path, 400, shown | {"extra": 1}, credential)
    relay.call("POST", path, 401, shown)
    relay.call("POST", path, 403, shown, key)
    stranger, stranger_keys = _phone(relay, unique("receipt-stranger"), app)
    relay.call("POST", path, 403, shown, stranger["device_credential"])
    theirs = f"/v1/devices/{stranger['device_id']}/receipts"
    relay.call("POST", theirs, 404, _receipt(stranger_keys, push_id, "shown"), stranger["device_credential"])
    relay.call("POST", path, 404, _receipt(keys, "no-such-push", "shown"), credential)
    relay.call("POST", path, 413, raw=b" " * (MAX_BODY + 1), token=credential, field_name="body")


def test_receipts_on_a_running_relay(relay: Relay):
    exercise_receipts(relay)

