#!/usr/bin/env python3
"""Writes docs/test-vectors/receipt-v1.json: fixed inputs and expected outputs for the phone's
receipts (docs/receipts.md), computed with PyNaCl (libsodium) from the spec alone.

    python3 scripts/receipt_vectors.py           # writes the file
    python3 scripts/receipt_vectors.py --check   # exits 1 when the committed file differs

Everything comes from fixed seeds, so two runs write the same bytes. The functions below are
the spec's formulas; Tests/interop/test_receipts_pynacl.py uses them to recompute every vector and
to make the receipts it posts to a running relay, and Tests/HeraldCryptoTests/ReceiptVectorTests
checks Herald's own code (DeliveryReceipt) against the file.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from pathlib import Path

from nacl import bindings as sodium
from nacl.encoding import RawEncoder
from nacl.hash import blake2b

REPO = Path(__file__).resolve().parents[1]
VECTORS_PATH = REPO / "docs" / "test-vectors" / "receipt-v1.json"

# --- docs/receipts.md ---------------------------------------------------------------------------

DOMAIN = b"herald-receipt-v1"
KEY_LABEL = b"herald-receipt-key-v1"
VERSION = 1
STAGES = {"delivered": 1, "opened": 2, "shown": 3, "failed": 4, "tapped": 5}
FAILURES = ("tampered", "unknown_key", "budget_exceeded", "malformed")
TAG_LENGTH = 32


def key_id(device_pk: bytes, relay_pk: bytes) -> bytes:
    """docs/envelope.md section 2: unkeyed BLAKE2b with a 16-byte output, its first 8 bytes."""
    return blake2b(b"herald-kid-v1" + device_pk + relay_pk, digest_size=16, encoder=RawEncoder)[:8]


def receipt_key(device_tx: bytes) -> bytes:
    """BLAKE2b-256 keyed with the device → relay session key over the label."""
    return blake2b(KEY_LABEL, digest_size=32, key=device_tx, encoder=RawEncoder)


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    return struct.pack(">H", len(data)) + data


def signed_bytes(kid: bytes, push_id: str, stage: str, device_time: int, failure: str | None) -> bytes:
    """The bytes the tag covers; `failure` is given exactly when the stage is `failed`."""
    if (stage == "failed") != (failure is not None):
        raise ValueError("a failure exactly when the stage is failed")
    return (
        DOMAIN
        + bytes([VERSION])
        + kid
        + _string(push_id)
        + bytes([STAGES[stage]])
        + struct.pack(">q", device_time)
        + _string(failure or "")
    )


def tag(key: bytes, signed: bytes) -> bytes:
    return blake2b(signed, digest_size=TAG_LENGTH, key=key, encoder=RawEncoder)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def agreement(device_seed: bytes, relay_seed: bytes) -> dict:
    """Both sides of one activation's key agreement (the device is the crypto_kx client)."""
    device_pk, device_sk = sodium.crypto_kx_seed_keypair(device_seed)
    relay_pk, relay_sk = sodium.crypto_kx_seed_keypair(relay_seed)
    device_rx, device_tx = sodium.crypto_kx_client_session_keys(device_pk, device_sk, relay_pk)
    relay_rx, relay_tx = sodium.crypto_kx_server_session_keys(relay_pk, relay_sk, device_pk)
    assert relay_rx == device_tx and relay_tx == device_rx
    values = {
        "device_seed": device_seed,
        "device_public_key": device_pk,
        "device_secret_key": device_sk,
        "relay_seed": relay_seed,
        "relay_public_key": relay_pk,
        "relay_secret_key": relay_sk,
        "device_rx": device_rx,
        "device_tx": device_tx,
        "relay_rx": relay_rx,
        "relay_tx": relay_tx,
        "key_id": key_id(device_pk, relay_pk),
        "receipt_key": receipt_key(device_tx),
    }
    return {name: value.hex() for name, value in values.items()}


# --- the file -----------------------------------------------------------------------------------

DEVICE_SEED = bytes(range(0x00, 0x20))
RELAY_SEED = bytes(range(0x20, 0x40))
OTHER_DEVICE_SEED = bytes(range(0x40, 0x60))
OTHER_RELAY_SEED = bytes(range(0x60, 0x80))
PUSH_ID = "732f2bde-c10a-4609-b846-29ba2d16b471"
DEVICE_TIME = 1_763_726_400_123


def make_receipt(keys: dict, name: str, push_id: str, stage: str, device_time: int, failure: str | None) -> dict:
    signed = signed_bytes(bytes.fromhex(keys["key_id"]), push_id, stage, device_time, failure)
    return {
        "name": name,
        "key_id": keys["key_id"],
        "push_id": push_id,
        "stage": stage,
        "device_time": device_time,
        "failure": failure,
        "signed": signed.hex(),
        "tag": b64url(tag(bytes.fromhex(keys["receipt_key"]), signed)),
    }


def receipts(keys: dict) -> list[dict]:
    made = [make_receipt(keys, stage, PUSH_ID, stage, DEVICE_TIME, None) for stage in STAGES if stage != "failed"]
    made += [make_receipt(keys, "failed-" + f, PUSH_ID, "failed", DEVICE_TIME + 1, f) for f in FAILURES]
    made.append(make_receipt(keys, "non-ascii-push-id", "pûsh-Ω-😀", "shown", DEVICE_TIME, None))
    made.append(make_receipt(keys, "device-time-before-1970", "p-1", "delivered", -1, None))
    return made


def _changed(base: dict, name: str, why: str, **fields) -> dict:
    """A receipt presented with the base's tag and some field changed: it must not verify."""
    keep = ("key_id", "push_id", "stage", "device_time", "failure", "tag")
    return {"name": name, "base": base["name"], "why": why} | {k: base[k] for k in keep} | fields


def negative(keys: dict, other: dict, made: list[dict]) -> list[dict]:
    by_name = {entry["name"]: entry for entry in made}
    shown, failed = by_name["shown"], by_name["failed-tampered"]
    flipped = bytearray(b64url_decode(shown["tag"]))
    flipped[0] ^= 0x01
    # The other device's receipt for the same push, presented with its own key id and with ours.
    theirs = make_receipt(other, "other", PUSH_ID, "shown", DEVICE_TIME, None)
    wrong_direction = tag(
        receipt_key(bytes.fromhex(keys["device_rx"])),
        signed_bytes(bytes.fromhex(keys["key_id"]), PUSH_ID, "shown", DEVICE_TIME, None),
    )
    return [
        _changed(shown, "changed-push-id", "another push", push_id=PUSH_ID[:-1] + "2"),
        _changed(shown, "changed-stage", "shown presented as tapped", stage="tapped"),
        _changed(shown, "changed-device-time", "the phone's clock moved by 1 ms", device_time=DEVICE_TIME + 1),
        _changed(failed, "changed-failure", "tampered presented as malformed", failure="malformed"),
        _changed(shown, "flipped-tag-bit", "the tag's first byte xor 1", tag=b64url(bytes(flipped))),
        _changed(shown, "other-device-key", "tagged with another device's receipt key", tag=theirs["tag"]),
        _changed(shown, "other-device-key-id", "another device's receipt", key_id=other["key_id"], tag=theirs["tag"]),
        _changed(shown, "relay-to-device-key", "the key from device_rx, not device_tx", tag=b64url(wrong_direction)),
        _changed(shown, "truncated-tag", "31 bytes", tag=b64url(b64url_decode(shown["tag"])[:31])),
    ]


def vector_file() -> dict:
    keys = agreement(DEVICE_SEED, RELAY_SEED)
    other = agreement(OTHER_DEVICE_SEED, OTHER_RELAY_SEED)
    made = receipts(keys)
    return {
        "description": (
            "Receipts from the phone (docs/receipts.md), version 1. keys: one activation's key agreement "
            "from fixed seeds (crypto_kx_seed_keypair; the device is the client), with the key id "
            "(docs/envelope.md section 2) and receipt_key = BLAKE2b-256(key = device_tx, "
            "'herald-receipt-key-v1'). receipts: each one's signed bytes (hex) and tag (BLAKE2b-256 "
            "keyed with receipt_key; base64url without padding); each must verify with the relay's "
            "keys (relay_rx). negative: receipts presented with a tag that must not verify with the "
            "relay's keys of `keys`. other_device: another activation, whose keys made some negative "
            "tags. Made by scripts/receipt_vectors.py."
        ),
        "version": 1,
        "keys": keys,
        "other_device": other,
        "receipts": made,
        "negative": negative(keys, other, made),
    }


def rendered() -> str:
    return json.dumps(vector_file(), indent=2, ensure_ascii=False) + "\n"


def main(arguments: list[str]) -> int:
    text = rendered()
    if arguments == ["--check"]:
        same = VECTORS_PATH.exists() and VECTORS_PATH.read_text(encoding="utf-8") == text
        print(f"{VECTORS_PATH}: {'up to date' if same else 'differs from what this script writes'}")
        return 0 if same else 1
    if arguments:
        print(__doc__, file=sys.stderr)
        return 2
    VECTORS_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {VECTORS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
