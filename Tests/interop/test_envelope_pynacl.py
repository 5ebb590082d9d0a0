"""Independent check of Herald's envelope format (docs/envelope.md) with PyNaCl.

Everything here is written from docs/envelope.md alone: key agreement (crypto_kx), the key id,
the additional data, the plaintext encoding, the binary and text forms of the envelope. Nothing
is imported from Herald. The tests

* recompute every vector in docs/test-vectors/envelope-v1.json (key pairs, session keys, key id,
  plaintext, additional data, envelope) and open it;
* check that every entry of its `negative` list fails to open;
* follow section 5's clear-field rules on every entry of its `routing` list (whole pushes with
  clear fields changed or removed) and reach the outcome the file gives (opened, tampered,
  refused);
* seal fresh envelopes here and have Herald's binary (`herald envelope open`) open them, and
  refuse tampered ones.

Run: python3 -m pytest -q Tests/interop   (HERALD_BIN overrides the binary, default
.build/debug/herald relative to the repository root).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import subprocess
from pathlib import Path

import pytest
from nacl import bindings as sodium
from nacl.encoding import RawEncoder
from nacl.exceptions import CryptoError
from nacl.hash import blake2b as nacl_blake2b

REPO = Path(__file__).resolve().parents[2]
VECTORS_PATH = REPO / "docs" / "test-vectors" / "envelope-v1.json"

# --- constants from docs/envelope.md -------------------------------------------------------------

VERSION = 0x01  # section 3
KEY_ID_LEN = 8  # section 2
NONCE_LEN = 24  # section 3
TAG_LEN = 16  # section 3
OVERHEAD = 1 + KEY_ID_LEN + NONCE_LEN + TAG_LEN  # section 3: "The overhead is 49 bytes"
KID_PREFIX = b"herald-kid-v1"  # section 2, 13 ASCII bytes
AD_MAGIC = b"HRLD"  # section 5
KIND_BYTE = {"message": 0x01, "call": 0x02, "missed_call": 0x03, "callback": 0x04}  # section 5 (kind) and section 6 (type byte)
ACTION_KIND = {"connect": 1, "snooze": 2, "cancel": 3}  # section 6, callback action kinds
ACTION_NAME = {v: k for k, v in ACTION_KIND.items()}
KIND_NAME = {v: k for k, v in KIND_BYTE.items()}
STR_MAX = 0xFFFF  # section 6: a str holds at most 65,535 bytes
FLAG_TRUNCATED = 0x01  # section 6, message flags bit 0
FLAG_TITLE = 0x02  # section 6, message flags bit 1: a sealed title follows the text
FLAG_DATA = 0x04  # section 6, message flags bit 2: sealed custom data follows
FLAG_VIDEO = 0x01  # section 6, call flags bit 0
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
B64URL_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

MESSAGE_KEYS = {
    "type",
    "message_id",
    "conversation_id",
    "sender_id",
    "sender_name",
    "text",
    "sent_at",
    "truncated",
}
CALL_KEYS = {"type", "call_id", "caller_id", "caller_name", "media", "started_at"}
CALLBACK_KEYS = {"type", "callback_id", "sequence", "service_id", "dialog", "pushed_at"}
ID_FIELD = {"message": "message_id", "call": "call_id", "missed_call": "call_id", "callback": "callback_id"}  # section 5's push_id


class EnvelopeError(Exception):
    """A receiver-side rejection; `reason` is one of the cases the spec names."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


# --- the implementation under the spec -----------------------------------------------------------


def kx_keypair_from_seed(seed: bytes) -> tuple[bytes, bytes]:
    """crypto_kx_seed_keypair: (public key, secret key)."""
    return sodium.crypto_kx_seed_keypair(seed)


def device_session_keys(device_pk: bytes, device_sk: bytes, relay_pk: bytes) -> tuple[bytes, bytes]:
    """Section 1: the device is the kx client. Returns (device_rx, device_tx)."""
    return sodium.crypto_kx_client_session_keys(device_pk, device_sk, relay_pk)


def relay_session_keys(relay_pk: bytes, relay_sk: bytes, device_pk: bytes) -> tuple[bytes, bytes]:
    """Section 1: the relay is the kx server. Returns (relay_rx, relay_tx)."""
    return sodium.crypto_kx_server_session_keys(relay_pk, relay_sk, device_pk)


def key_id(device_pk: bytes, relay_pk: bytes) -> bytes:
    """Section 2: first 8 bytes of a 16-byte unkeyed BLAKE2b of prefix ‖ device_pk ‖ relay_pk."""
    return hashlib.blake2b(KID_PREFIX + device_pk + relay_pk, digest_size=16).digest()[:KEY_ID_LEN]


def b64url_encode(data: bytes) -> str:
    """Section 4: base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Section 4, strictly: no padding, nothing outside A-Z a-z 0-9 - _.

    Also rejects a length that no encoding has (4k+1) and non-canonical trailing bits, as
    libsodium's sodium_base642bin does; the spec does not say so explicitly (see the report).
    """
    if not isinstance(text, str):
        raise EnvelopeError("base64", "not a string")
    bad = set(text) - B64URL_ALPHABET
    if bad:
        raise EnvelopeError("base64", f"characters outside the alphabet: {sorted(bad)!r}")
    if len(text) % 4 == 1:
        raise EnvelopeError("base64", "impossible length")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64url_encode(data) != text:
        raise EnvelopeError("base64", "non-canonical trailing bits")
    return data


def _u16(n: int) -> bytes:
    return struct.pack(">H", n)


def _str(value: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    raw = value.encode("utf-8")  # strict: a lone surrogate raises
    if len(raw) > STR_MAX:
        raise ValueError(f"field of {len(raw)} bytes exceeds {STR_MAX}")
    return _u16(len(raw)) + raw


def _i64(value: int) -> bytes:
    if type(value) is not int or not I64_MIN <= value <= I64_MAX:
        raise ValueError(f"not an i64: {value!r}")
    return struct.pack(">q", value)


def build_ad(kind: str, kid: bytes, push_id: str, device_id: str, sequence: int = 0) -> bytes:
    """Section 5: a callback's ends with its push number."""
    assert len(kid) == KEY_ID_LEN
    ad = AD_MAGIC + bytes([VERSION]) + kid + bytes([KIND_BYTE[kind]]) + _str(push_id) + _str(device_id)
    return ad + _u16(sequence) if kind == "callback" else ad


def encode_content(content: dict) -> bytes:
    """Section 6: content JSON object -> plaintext bytes."""
    kind = content["type"]
    if kind == "message":
        if not MESSAGE_KEYS <= set(content) <= MESSAGE_KEYS | {"title", "data"}:
            raise ValueError(f"message keys {sorted(content)}")
        if type(content["truncated"]) is not bool:
            raise ValueError("truncated must be a bool")
        flags = FLAG_TRUNCATED if content["truncated"] else 0
        extras = b""
        if "title" in content:
            flags |= FLAG_TITLE
            extras += _str(content["title"])
        if "data" in content:
            flags |= FLAG_DATA
            pairs = sorted(content["data"].items(), key=lambda kv: kv[0].encode("utf-8"))
            extras += struct.pack(">H", len(pairs)) + b"".join(_str(k) + _str(v) for k, v in pairs)
        return (
            bytes([KIND_BYTE["message"], flags])
            + _i64(content["sent_at"])
            + _str(content["message_id"])
            + _str(content["conversation_id"])
            + _str(content["sender_id"])
            + _str(content["sender_name"])
            + _str(content["text"])
            + extras
        )
    if kind in ("call", "missed_call"):
        if set(content) != CALL_KEYS:
            raise ValueError(f"{kind} keys {sorted(content)}")
        if content["media"] not in ("audio", "video"):
            raise ValueError(f"media {content['media']!r}")
        flags = FLAG_VIDEO if content["media"] == "video" else 0
        return (
            bytes([KIND_BYTE[kind], flags])
            + _i64(content["started_at"])
            + _str(content["call_id"])
            + _str(content["caller_id"])
            + _str(content["caller_name"])
        )
    if kind == "callback":
        if set(content) != CALLBACK_KEYS:
            raise ValueError(f"callback keys {sorted(content)}")
        dialog = content["dialog"]
        out = (
            bytes([KIND_BYTE["callback"], 0])
            + _i64(content["pushed_at"])
            + _str(content["callback_id"])
            + _u16(content["sequence"])
            + _str(content["service_id"])
            + _str(dialog["title"])
            + _str(dialog["text"])
            + bytes([len(dialog["actions"])])
        )
        for action in dialog["actions"]:
            out += _str(action["id"]) + _str(action["label"]) + bytes([ACTION_KIND[action["kind"]]])
            out += struct.pack(">I", action["delay_seconds"])
        return out
    raise ValueError(f"unknown content type {kind!r}")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise EnvelopeError("plaintext", f"length runs past the end at offset {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def byte(self) -> int:
        return self.take(1)[0]

    def i64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def u16(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def str(self) -> str:
        (n,) = struct.unpack(">H", self.take(2))
        raw = self.take(n)
        try:
            return raw.decode("utf-8")  # strict, no repair
        except UnicodeDecodeError as e:
            raise EnvelopeError("plaintext", f"invalid UTF-8: {e}") from None

    def end(self) -> None:
        if self.pos != len(self.data):
            raise EnvelopeError("plaintext", f"{len(self.data) - self.pos} trailing bytes")


def decode_plaintext(plaintext: bytes) -> dict:
    """Section 6: plaintext bytes -> content JSON object. Unknown flag bits are ignored."""
    r = _Reader(plaintext)
    type_byte = r.byte()
    if type_byte == KIND_BYTE["message"]:
        flags = r.byte()
        sent_at = r.i64()
        content = {
            "type": "message",
            "message_id": r.str(),
            "conversation_id": r.str(),
            "sender_id": r.str(),
            "sender_name": r.str(),
            "text": r.str(),
            "sent_at": sent_at,
            "truncated": bool(flags & FLAG_TRUNCATED),
        }
        if flags & FLAG_TITLE:
            content["title"] = r.str()
        if flags & FLAG_DATA:
            (count,) = struct.unpack(">H", r.take(2))
            data = {}
            for _ in range(count):
                key = r.str()
                if key in data:
                    raise EnvelopeError("plaintext", f"data key {key!r} twice")
                data[key] = r.str()
            content["data"] = data
    elif type_byte in (KIND_BYTE["call"], KIND_BYTE["missed_call"]):
        flags = r.byte()
        started_at = r.i64()
        content = {
            "type": "call" if type_byte == KIND_BYTE["call"] else "missed_call",
            "call_id": r.str(),
            "caller_id": r.str(),
            "caller_name": r.str(),
            "media": "video" if flags & FLAG_VIDEO else "audio",
            "started_at": started_at,
        }
    elif type_byte == KIND_BYTE["callback"]:
        r.byte()  # flags: none defined
        pushed_at = r.i64()
        callback_id, sequence, service_id = r.str(), r.u16(), r.str()
        title, text = r.str(), r.str()
        actions = []
        for _ in range(r.byte()):
            action_id, label, kind_byte, delay = r.str(), r.str(), r.byte(), r.u32()
            if kind_byte not in ACTION_NAME:
                raise EnvelopeError("plaintext", f"unknown action kind 0x{kind_byte:02x}")
            actions.append({"id": action_id, "label": label, "kind": ACTION_NAME[kind_byte], "delay_seconds": delay})
        content = {
            "type": "callback",
            "callback_id": callback_id,
            "sequence": sequence,
            "service_id": service_id,
            "dialog": {"title": title, "text": text, "actions": actions},
            "pushed_at": pushed_at,
        }
    else:
        raise EnvelopeError("plaintext", f"unknown type byte 0x{type_byte:02x}")
    r.end()
    return content


def seal_binary(content: dict, push_id: str, device_id: str, kid: bytes, relay_tx: bytes, nonce: bytes) -> bytes:
    """Section 3: version ‖ key_id ‖ nonce ‖ AEAD(plaintext, ad, nonce, relay_tx)."""
    assert len(nonce) == NONCE_LEN
    ad = build_ad(content["type"], kid, push_id, device_id, content.get("sequence", 0))
    ct = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(encode_content(content), ad, nonce, relay_tx)
    return bytes([VERSION]) + kid + nonce + ct


def seal(content: dict, push_id: str, device_id: str, kid: bytes, relay_tx: bytes, nonce: bytes) -> str:
    return b64url_encode(seal_binary(content, push_id, device_id, kid, relay_tx, nonce))


def open_binary(
    envelope: bytes, kind: str, push_id: str, device_id: str, keys: dict[bytes, bytes], sequence: int = 0
) -> bytes:
    """Section 3's rejections, in the spec's order; returns the plaintext. keys: key_id -> device_rx."""
    if len(envelope) == 0:
        raise EnvelopeError("empty")
    if envelope[0] != VERSION:
        raise EnvelopeError("version", f"0x{envelope[0]:02x}")
    if len(envelope) < OVERHEAD:
        raise EnvelopeError("too_short", f"{len(envelope)} bytes")
    kid = envelope[1 : 1 + KEY_ID_LEN]
    nonce = envelope[1 + KEY_ID_LEN : 1 + KEY_ID_LEN + NONCE_LEN]
    ct = envelope[1 + KEY_ID_LEN + NONCE_LEN :]
    if kid not in keys:
        raise EnvelopeError("unknown_key_id", kid.hex())
    ad = build_ad(kind, kid, push_id, device_id, sequence)
    try:
        return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(ct, ad, nonce, keys[kid])
    except CryptoError as e:
        raise EnvelopeError("auth", str(e)) from e


def open_envelope(
    text: str, kind: str, push_id: str, device_id: str, keys: dict[bytes, bytes], sequence: int = 0
) -> dict:
    """Text form -> content, with section 6's after-decoding checks (type, id, a callback's push number)."""
    content = decode_plaintext(open_binary(b64url_decode(text), kind, push_id, device_id, keys, sequence))
    if content["type"] != kind:
        raise EnvelopeError("kind_mismatch", f"{content['type']} sealed, {kind} expected")
    sealed_id = content[ID_FIELD[kind]]
    if sealed_id != push_id:
        raise EnvelopeError("id_mismatch", f"{sealed_id!r} sealed, {push_id!r} expected")
    if kind == "callback" and content["sequence"] != sequence:
        raise EnvelopeError("id_mismatch", f"push {content['sequence']} sealed, {sequence} expected")
    return content


def canonical(value) -> str:
    """JSON text that tells True from 1 and 1 from 1.0, so comparisons are exact."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def make_entry(name: str, content: dict, device_id: str, nonce: bytes | None = None, seeds=None) -> dict:
    """A complete vector entry in the format of envelope-v1.json, sealed here."""
    device_seed, relay_seed = seeds or (os.urandom(32), os.urandom(32))
    nonce = nonce if nonce is not None else os.urandom(NONCE_LEN)
    dpk, dsk = kx_keypair_from_seed(device_seed)
    rpk, rsk = kx_keypair_from_seed(relay_seed)
    device_rx, device_tx = device_session_keys(dpk, dsk, rpk)
    _, relay_tx = relay_session_keys(rpk, rsk, dpk)
    kid = key_id(dpk, rpk)
    kind = content["type"]
    push_id = content[ID_FIELD[kind]]
    plaintext = encode_content(content)
    ad = build_ad(kind, kid, push_id, device_id, content.get("sequence", 0))
    return {
        "name": name,
        "description": "sealed by Tests/interop/test_envelope_pynacl.py",
        "kind": kind,
        "push_id": push_id,
        "device_id": device_id,
        "device_seed": device_seed.hex(),
        "device_public_key": dpk.hex(),
        "device_secret_key": dsk.hex(),
        "relay_seed": relay_seed.hex(),
        "relay_public_key": rpk.hex(),
        "relay_secret_key": rsk.hex(),
        "key_id": kid.hex(),
        "device_rx": device_rx.hex(),
        "device_tx": device_tx.hex(),
        "nonce": nonce.hex(),
        "content": content,
        "plaintext": plaintext.hex(),
        "additional_data": ad.hex(),
        "envelope": seal(content, push_id, device_id, kid, relay_tx, nonce),
    }


# --- the vector file -----------------------------------------------------------------------------


def _load_vectors():
    try:
        return json.loads(VECTORS_PATH.read_text(encoding="utf-8")), None
    except (OSError, ValueError) as e:
        return None, f"{VECTORS_PATH.relative_to(REPO)} unreadable: {e}"


VECTOR_FILE, VECTOR_FILE_ERROR = _load_vectors()
# A missing or broken vector file fails (it does not skip): docs/envelope.md promises it.
_MISSING = [pytest.param(None, id="vector-file-missing")]


def _vector_params():
    if VECTOR_FILE is None or not isinstance(VECTOR_FILE.get("vectors"), list) or not VECTOR_FILE["vectors"]:
        return _MISSING
    return [pytest.param(v, id=str(v.get("name", i))) for i, v in enumerate(VECTOR_FILE["vectors"])]


def _negative_params():
    if VECTOR_FILE is None or not isinstance(VECTOR_FILE.get("negative"), list) or not VECTOR_FILE["negative"]:
        return _MISSING
    return [pytest.param(n, id=str(n.get("name", i))) for i, n in enumerate(VECTOR_FILE["negative"])]


def _need(item):
    if item is None:
        pytest.fail(VECTOR_FILE_ERROR or "the vector file has no vectors / no negative entries")
    return item


# The `error` names in the vector file's negative list (Herald's names), mapped to the rejections
# of docs/envelope.md sections 3 and 4 as this file names them.
HERALD_ERROR_NAMES = {
    "badFormat": "base64",  # section 4: not base64url without padding
    "emptyInput": "empty",
    "unknownVersion": "version",
    "tooShort": "too_short",
    "unknownKeyID": "unknown_key_id",
    "authenticationFailed": "auth",
}


def _base_vector(neg: dict) -> dict:
    by_name = {v["name"]: v for v in VECTOR_FILE["vectors"]}
    assert neg["base"] in by_name, f"negative {neg['name']!r} names unknown base {neg['base']!r}"
    return by_name[neg["base"]]


def test_vector_file_shape():
    assert VECTOR_FILE is not None, VECTOR_FILE_ERROR
    assert VECTOR_FILE.get("format") == "herald-envelope-v1"
    vectors, negative = VECTOR_FILE.get("vectors"), VECTOR_FILE.get("negative")
    assert isinstance(vectors, list) and vectors, "no vectors"
    assert isinstance(negative, list) and negative, "no negative entries"
    names = [v["name"] for v in vectors] + [n["name"] for n in negative]
    assert len(names) == len(set(names)), "names are not unique"
    assert {v["kind"] for v in vectors} == {"message", "call", "missed_call", "callback"}, "every kind must have vectors"
    entry_fields = {
        "name", "description", "kind", "push_id", "device_id", "device_seed", "device_public_key",
        "device_secret_key", "relay_seed", "relay_public_key", "relay_secret_key", "key_id",
        "device_rx", "device_tx", "nonce", "content", "plaintext", "additional_data", "envelope",
    }  # fmt: skip
    for v in vectors:
        assert entry_fields <= set(v), f"{v.get('name')}: missing {sorted(entry_fields - set(v))}"
        sizes = {"device_seed": 32, "device_public_key": 32, "device_secret_key": 32, "relay_seed": 32,
                 "relay_public_key": 32, "relay_secret_key": 32, "key_id": 8, "device_rx": 32,
                 "device_tx": 32, "nonce": 24, "plaintext": None, "additional_data": None}  # fmt: skip
        for field, size in sizes.items():
            assert v[field] == v[field].lower(), f"{v['name']}.{field} is not lowercase hex"
            raw = bytes.fromhex(v[field])
            assert size is None or len(raw) == size, f"{v['name']}.{field} has {len(raw)} bytes"
    for n in negative:
        assert {"name", "base", "kind", "push_id", "device_id", "envelope", "error"} <= set(n), n.get("name")
        assert isinstance(n["error"], str) and n["error"], f"{n['name']}: no error text"


# --- 1. keys, session keys, key id ---------------------------------------------------------------


@pytest.mark.parametrize("vector", _vector_params())
def test_vector_keys(vector):
    v = _need(vector)
    dpk, dsk = kx_keypair_from_seed(bytes.fromhex(v["device_seed"]))
    rpk, rsk = kx_keypair_from_seed(bytes.fromhex(v["relay_seed"]))
    assert dpk.hex() == v["device_public_key"]
    assert dsk.hex() == v["device_secret_key"]
    assert rpk.hex() == v["relay_public_key"]
    assert rsk.hex() == v["relay_secret_key"]
    # The public key follows from the secret key (what `herald envelope open` relies on).
    assert sodium.crypto_scalarmult_base(dsk) == dpk

    device_rx, device_tx = device_session_keys(dpk, dsk, rpk)
    relay_rx, relay_tx = relay_session_keys(rpk, rsk, dpk)
    assert device_rx.hex() == v["device_rx"]
    assert device_tx.hex() == v["device_tx"]
    assert relay_tx == device_rx and relay_rx == device_tx
    assert device_rx != device_tx

    kid = key_id(dpk, rpk)
    assert kid.hex() == v["key_id"]
    # Same value through libsodium's crypto_generichash (PyNaCl), the primitive the spec names.
    assert nacl_blake2b(KID_PREFIX + dpk + rpk, digest_size=16, encoder=RawEncoder)[:8] == kid
    # And not the value of a 32-byte digest cut to 8 (the pitfall section 2 warns about).
    assert hashlib.blake2b(KID_PREFIX + dpk + rpk, digest_size=32).digest()[:8] != kid


# --- 2. plaintext, additional data, reseal, open -------------------------------------------------


@pytest.mark.parametrize("vector", _vector_params())
def test_vector_plaintext_and_ad(vector):
    v = _need(vector)
    content = v["content"]
    assert content["type"] == v["kind"]
    assert content[ID_FIELD[v["kind"]]] == v["push_id"]
    assert v.get("sequence", 0) == content.get("sequence", 0)
    assert encode_content(content).hex() == v["plaintext"]
    ad = build_ad(v["kind"], bytes.fromhex(v["key_id"]), v["push_id"], v["device_id"], v.get("sequence", 0))
    assert ad.hex() == v["additional_data"]
    # The decoder is the inverse of the encoder on the vector's bytes.
    assert canonical(decode_plaintext(bytes.fromhex(v["plaintext"]))) == canonical(content)


@pytest.mark.parametrize("vector", _vector_params())
def test_vector_reseal(vector):
    v = _need(vector)
    dpk = bytes.fromhex(v["device_public_key"])
    _, relay_tx = relay_session_keys(
        bytes.fromhex(v["relay_public_key"]), bytes.fromhex(v["relay_secret_key"]), dpk
    )
    nonce = bytes.fromhex(v["nonce"])
    text = seal(v["content"], v["push_id"], v["device_id"], bytes.fromhex(v["key_id"]), relay_tx, nonce)
    assert text == v["envelope"]
    binary = b64url_decode(v["envelope"])
    assert len(binary) == len(bytes.fromhex(v["plaintext"])) + OVERHEAD
    assert len(v["envelope"]) == (4 * len(binary) + 2) // 3
    assert binary[0] == VERSION
    assert binary[1:9].hex() == v["key_id"]
    assert binary[9:33].hex() == v["nonce"]


@pytest.mark.parametrize("vector", _vector_params())
def test_vector_open(vector):
    v = _need(vector)
    keys = {bytes.fromhex(v["key_id"]): bytes.fromhex(v["device_rx"])}
    binary = b64url_decode(v["envelope"])
    sequence = v.get("sequence", 0)
    plaintext = open_binary(binary, v["kind"], v["push_id"], v["device_id"], keys, sequence)
    assert plaintext.hex() == v["plaintext"]
    content = open_envelope(v["envelope"], v["kind"], v["push_id"], v["device_id"], keys, sequence)
    assert canonical(content) == canonical(v["content"])
    # Replayed as another kind (or, for a callback, as another of its pushes): it does not open.
    others = [(kind, 0) for kind in KIND_BYTE if kind != v["kind"]]
    if v["kind"] == "callback":
        others.append(("callback", sequence + 1))
    for kind, other_sequence in others:
        with pytest.raises(EnvelopeError) as refused:
            open_envelope(v["envelope"], kind, v["push_id"], v["device_id"], keys, other_sequence)
        assert refused.value.reason == "auth", (kind, other_sequence)


# --- 3. negative entries -------------------------------------------------------------------------


@pytest.mark.parametrize("neg", _negative_params())
def test_negative_does_not_open(neg):
    n = _need(neg)
    base = _base_vector(n)
    keys = {bytes.fromhex(base["key_id"]): bytes.fromhex(base["device_rx"])}
    with pytest.raises(EnvelopeError) as excinfo:
        open_envelope(n["envelope"], n["kind"], n["push_id"], n["device_id"], keys, n.get("sequence") or 0)
    # Herald names its error; the spec's rejection order must lead this opener to the same case.
    assert n["error"] in HERALD_ERROR_NAMES, f"error name {n['error']!r} is not one the spec describes"
    assert excinfo.value.reason == HERALD_ERROR_NAMES[n["error"]], str(excinfo.value)
    # When the rejection is decryption, it is PyNaCl's CryptoError underneath.
    if excinfo.value.reason == "auth":
        assert isinstance(excinfo.value.__cause__, CryptoError)


# --- spec-level checks that need no vector file --------------------------------------------------


def _fresh_keys():
    dpk, dsk = sodium.crypto_kx_keypair()
    rpk, rsk = sodium.crypto_kx_keypair()
    device_rx, _ = device_session_keys(dpk, dsk, rpk)
    _, relay_tx = relay_session_keys(rpk, rsk, dpk)
    return key_id(dpk, rpk), device_rx, relay_tx


def _message(text="hello", message_id="m-1", **overrides):
    content = {
        "type": "message",
        "message_id": message_id,
        "conversation_id": "c-1",
        "sender_id": "u-1",
        "sender_name": "Ada",
        "text": text,
        "sent_at": 1_700_000_000_123,
        "truncated": False,
    }
    content.update(overrides)
    return content


def test_overhead_and_text_length():
    kid, device_rx, relay_tx = _fresh_keys()
    base_len = len(encode_content(_message(text="")))
    for extra in range(0, 40):
        content = _message(text="x" * extra)
        binary = seal_binary(content, "m-1", "d-1", kid, relay_tx, os.urandom(NONCE_LEN))
        assert len(binary) == base_len + extra + 49
        text = b64url_encode(binary)
        assert len(text) == (4 * len(binary) + 2) // 3
        assert "=" not in text and set(text) <= B64URL_ALPHABET


def test_ad_binds_context():
    kid, device_rx, relay_tx = _fresh_keys()
    keys = {kid: device_rx}
    text = seal(_message(), "m-1", "d-1", kid, relay_tx, os.urandom(NONCE_LEN))
    assert open_envelope(text, "message", "m-1", "d-1", keys)["text"] == "hello"
    for kind, push_id, device_id in [("call", "m-1", "d-1"), ("message", "m-2", "d-1"), ("message", "m-1", "d-2")]:
        with pytest.raises(EnvelopeError) as e:
            open_envelope(text, kind, push_id, device_id, keys)
        assert e.value.reason == "auth"


def test_rejection_order():
    kid, device_rx, relay_tx = _fresh_keys()
    keys = {kid: device_rx}
    good = seal_binary(_message(), "m-1", "d-1", kid, relay_tx, os.urandom(NONCE_LEN))
    cases = {
        "empty": b"",
        "version": b"\x02" + good[1:],  # also wrong version beats too short:
        "too_short": good[:48],
        "unknown_key_id": good[:1] + bytes(8) + good[9:],
        "auth": good[:-1] + bytes([good[-1] ^ 1]),
    }
    for reason, data in cases.items():
        with pytest.raises(EnvelopeError) as e:
            open_binary(data, "message", "m-1", "d-1", keys)
        assert e.value.reason == reason, (reason, e.value)
    with pytest.raises(EnvelopeError) as e:
        open_binary(b"\x02", "message", "m-1", "d-1", keys)
    assert e.value.reason == "version"
    with pytest.raises(EnvelopeError) as e:  # a 49-byte envelope is long enough to be looked at
        open_binary(good[:1] + bytes(48), "message", "m-1", "d-1", keys)
    assert e.value.reason == "unknown_key_id"


def test_text_form_is_strict():
    data = os.urandom(51)  # 68 characters, no padding needed
    text = b64url_encode(data)
    assert len(text) == 68 and b64url_decode(text) == data
    for bad in (text + "==", text[:-1] + "+", text[:-1] + "/", text[:10] + " " + text[10:], text + "A"):
        with pytest.raises(EnvelopeError, match="base64"):
            b64url_decode(bad)
    # 50 bytes: 67 characters, the last one carries 2 unused bits; setting one is non-canonical.
    data = data[:50]
    text = b64url_encode(data)
    assert len(text) == 67 and b64url_decode(text) == data
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(text[-1])
    assert last & 0b11 == 0
    with pytest.raises(EnvelopeError, match="non-canonical"):
        b64url_decode(text[:-1] + alphabet[last | 1])
    with pytest.raises(EnvelopeError, match="characters outside"):
        b64url_decode(text + "=")


def test_plaintext_decoder_rejects_and_ignores():
    good = encode_content(_message(text="héllo"))
    assert decode_plaintext(good)["text"] == "héllo"
    # Unknown flag bits (3 to 7) are ignored; bit 0 still read.
    assert decode_plaintext(good[:1] + b"\xf8" + good[2:])["truncated"] is False
    assert decode_plaintext(good[:1] + b"\xf9" + good[2:])["truncated"] is True
    bad = {
        "unknown type": b"\x03" + good[1:],
        "trailing": good + b"\x00",
        "runs past end": good[:-1],
        "invalid utf-8": good[:-2] + b"\xc3\x28",  # 'lo' -> broken 2-byte sequence
        "empty": b"",
    }
    for label, data in bad.items():
        with pytest.raises(EnvelopeError, match="plaintext"):
            decode_plaintext(data)
    # A str cannot exceed 65,535 bytes.
    with pytest.raises(ValueError):
        encode_content(_message(text="a" * 65536))
    assert len(encode_content(_message(text="a" * 65535))) == len(good) - len("héllo".encode()) + 65535


def test_type_and_id_are_checked_after_decoding():
    kid, device_rx, relay_tx = _fresh_keys()
    keys = {kid: device_rx}
    # Sealed with a consistent ad but a message id in the plaintext that differs from push_id.
    text = seal(_message(message_id="m-9"), "m-1", "d-1", kid, relay_tx, os.urandom(NONCE_LEN))
    with pytest.raises(EnvelopeError) as e:
        open_envelope(text, "message", "m-1", "d-1", keys)
    assert e.value.reason == "id_mismatch"


def test_payload_budget_example():
    """Section 7's worked example, checked against this encoder."""
    limit, surrounding = 4096, 300
    text_room = limit - surrounding
    max_plaintext = (3 * text_room) // 4 - OVERHEAD
    assert text_room == 3796 and max_plaintext == 2798
    # 60 bytes of ids and names, 20 fixed bytes, 2718 bytes of text.
    content = _message(message_id="m" * 15, conversation_id="c" * 15, sender_id="s" * 15, sender_name="n" * 15)
    content["text"] = ""
    assert len(encode_content(content)) == 60 + 20
    content["text"] = "t" * 2718
    kid, _, relay_tx = _fresh_keys()
    binary = seal_binary(content, content["message_id"], "d-1", kid, relay_tx, os.urandom(NONCE_LEN))
    assert len(binary) - OVERHEAD == max_plaintext
    assert len(b64url_encode(binary)) <= text_room
    content["text"] += "t"
    binary = seal_binary(content, content["message_id"], "d-1", kid, relay_tx, os.urandom(NONCE_LEN))
    assert len(b64url_encode(binary)) > text_room


# --- 4. Herald's binary opens what Python sealed -------------------------------------------------


@pytest.fixture(scope="module")
def herald():
    configured = os.environ.get("HERALD_BIN", ".build/debug/herald")
    path = Path(configured)
    if not path.is_absolute():
        path = REPO / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"Herald binary not found at {path} (set HERALD_BIN or build with `swift build`)")
    return path


def run_open(herald: Path, entry: dict, tmp_path: Path, use_stdin: bool = False):
    body = json.dumps(entry, ensure_ascii=False, indent=2)
    if use_stdin:
        args, stdin = [str(herald), "envelope", "open", "-"], body.encode("utf-8")
    else:
        file = tmp_path / f"{entry['name']}.json"
        file.write_text(body, encoding="utf-8")
        args, stdin = [str(herald), "envelope", "open", str(file)], None
    return subprocess.run(args, input=stdin, capture_output=True, timeout=60, cwd=REPO)


FRESH_CONTENTS = {
    "message-emoji": _message(
        message_id="msg-ü-🦄-0001",
        conversation_id="conv-日本語",
        sender_id="user-ø",
        sender_name="Zoë 👩🏽‍💻 Ωμέγα",
        text="Grüße! 你好 👋🏾 family 👨‍👩‍👧‍👦 flag 🇫🇷 e\u0301 \"quoted\" \\ back\nnew line \u2028 end",
        sent_at=1_732_198_800_042,
    ),
    "message-truncated-pre-epoch": _message(
        message_id="m-trunc", text="cut here…", sent_at=-86_400_000, truncated=True
    ),
    "message-empty-text": _message(message_id="m-empty", text="", sender_name=""),
    "call-video": {
        "type": "call",
        "call_id": "call-📞-42",
        "caller_id": "user-é",
        "caller_name": "Ada Lovelace 👩‍🔬",
        "media": "video",
        "started_at": 1_732_198_801_000,
    },
    "call-audio": {
        "type": "call",
        "call_id": "c-audio",
        "caller_id": "u-2",
        "caller_name": "Bob",
        "media": "audio",
        "started_at": 0,
    },
    "missed-call": {
        "type": "missed_call",
        "call_id": "c-missed",
        "caller_id": "u-3",
        "caller_name": "Zoë",
        "media": "audio",
        "started_at": 1_732_198_802_000,
    },
}


@pytest.mark.parametrize("name", list(FRESH_CONTENTS))
def test_herald_opens_python_sealed(herald, tmp_path, name):
    content = FRESH_CONTENTS[name]
    entry = make_entry(name, content, device_id="device-Ø-7f3a")
    # Our own opener agrees first, so a failure below is Herald's, not this file's.
    keys = {bytes.fromhex(entry["key_id"]): bytes.fromhex(entry["device_rx"])}
    assert canonical(open_envelope(entry["envelope"], entry["kind"], entry["push_id"], entry["device_id"], keys)) == canonical(content)

    result = run_open(herald, entry, tmp_path)
    assert result.returncode == 0, f"herald failed: {result.stderr.decode(errors='replace')}"
    printed = json.loads(result.stdout.decode("utf-8"))
    assert canonical(printed) == canonical(content)


def test_herald_prints_sorted_keys_and_reads_stdin(herald, tmp_path):
    content = FRESH_CONTENTS["message-emoji"]
    entry = make_entry("stdin-sorted", content, device_id="d-1")
    result = run_open(herald, entry, tmp_path, use_stdin=True)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    pairs = json.loads(result.stdout.decode("utf-8"), object_pairs_hook=lambda kv: [k for k, _ in kv])
    assert pairs == sorted(pairs) and set(pairs) == set(content)


def _flip(text: str, index: int) -> str:
    binary = bytearray(b64url_decode(text))
    binary[index] ^= 0x01
    return b64url_encode(bytes(binary))


TAMPERS = {
    "flip-ciphertext-byte": lambda e: {**e, "envelope": _flip(e["envelope"], 40)},
    "flip-tag-byte": lambda e: {**e, "envelope": _flip(e["envelope"], len(b64url_decode(e["envelope"])) - 1)},
    "flip-nonce-byte": lambda e: {**e, "envelope": _flip(e["envelope"], 9)},
    "flip-key-id-byte": lambda e: {**e, "envelope": _flip(e["envelope"], 1)},
    "flip-version-byte": lambda e: {**e, "envelope": _flip(e["envelope"], 0)},
    "other-device-id": lambda e: {**e, "device_id": e["device_id"] + "x"},
    "other-push-id": lambda e: {**e, "push_id": "m-other"},
    "other-kind": lambda e: {**e, "kind": "call"},
    "truncated-envelope": lambda e: {**e, "envelope": b64url_encode(b64url_decode(e["envelope"])[:48])},
    "empty-envelope": lambda e: {**e, "envelope": ""},
    "padding-appended": lambda e: {**e, "envelope": e["envelope"] + "=" * (-len(e["envelope"]) % 4 or 4)},
    "standard-base64-alphabet": lambda e: {
        **e,
        "envelope": base64.b64encode(b64url_decode(e["envelope"])).decode().rstrip("="),
    },
    "other-device-key": lambda e: {**e, "device_secret_key": sodium.crypto_kx_keypair()[1].hex()},
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_herald_refuses_tampered(herald, tmp_path, tamper):
    # Fixed seeds and nonce: the standard-alphabet case needs an envelope with '+' or '/' in it.
    content = _message(message_id="m-tamper", text="tamper me 🔒")
    entry = make_entry("tampered", content, device_id="device-1", nonce=bytes(range(24)), seeds=(bytes(32), bytes([1]) * 32))
    good = run_open(herald, entry, tmp_path)
    assert good.returncode == 0, f"untampered entry should open: {good.stderr.decode(errors='replace')}"

    bad = TAMPERS[tamper](entry)
    if tamper == "standard-base64-alphabet":
        assert bad["envelope"] != entry["envelope"], "pick a seed/nonce whose envelope has '-' or '_'"
    keys = {bytes.fromhex(entry["key_id"]): bytes.fromhex(entry["device_rx"])}
    if tamper != "other-device-key":  # our own opener refuses the same input
        with pytest.raises(EnvelopeError):
            open_envelope(bad["envelope"], bad["kind"], bad["push_id"], bad["device_id"], keys)

    result = run_open(herald, bad, tmp_path)
    stderr = result.stderr.decode("utf-8", errors="replace")
    assert result.returncode != 0, f"herald opened a tampered envelope ({tamper}): {result.stdout!r}"
    assert stderr.strip(), "no message on stderr"
    assert "Error" in stderr, stderr
    assert result.stdout.strip() == b"", "content printed for an envelope that did not open"


def _entry_with_plaintext(plaintext: bytes, kind: str, push_id: str, device_id: str = "device-1") -> dict:
    """An entry whose envelope authenticates (right key, right ad) around arbitrary plaintext bytes."""
    placeholder = _message(message_id=push_id) if kind == "message" else {**FRESH_CONTENTS["call-audio"], "call_id": push_id}
    entry = make_entry(f"raw-{kind}", placeholder, device_id)
    _, relay_tx = relay_session_keys(
        bytes.fromhex(entry["relay_public_key"]),
        bytes.fromhex(entry["relay_secret_key"]),
        bytes.fromhex(entry["device_public_key"]),
    )
    kid, nonce = bytes.fromhex(entry["key_id"]), os.urandom(NONCE_LEN)
    ad = build_ad(kind, kid, push_id, device_id)
    ct = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, ad, nonce, relay_tx)
    entry.update(plaintext=plaintext.hex(), nonce=nonce.hex(), envelope=b64url_encode(bytes([VERSION]) + kid + nonce + ct))
    return entry


_GOOD_PT = encode_content(_message(message_id="m-1"))
_GOOD_CALL_PT = encode_content({**FRESH_CONTENTS["call-audio"], "call_id": "c-1"})

# Section 6: plaintexts that authenticate but that a reader must refuse.
BAD_PLAINTEXTS = {
    "unknown-type-byte": ("message", "m-1", b"\x03" + _GOOD_PT[1:]),
    "trailing-byte": ("message", "m-1", _GOOD_PT + b"\x00"),
    "length-runs-past-end": ("message", "m-1", _GOOD_PT[:-1]),
    "header-cut": ("message", "m-1", _GOOD_PT[:5]),
    "empty-plaintext": ("message", "m-1", b""),
    "invalid-utf8": ("message", "m-1", _GOOD_PT[:-2] + b"\xc3\x28"),
    "overlong-utf8": ("message", "m-1", _GOOD_PT[:-2] + b"\xc0\x80"),
    "utf8-surrogate": ("message", "m-1", _GOOD_PT[:-3] + b"\xed\xa0\x80"),
    "call-content-as-message": ("message", "c-1", _GOOD_CALL_PT),
    "message-content-as-call": ("call", "m-1", _GOOD_PT),
    "message-id-differs-from-push-id": ("message", "m-2", _GOOD_PT),
    "call-id-differs-from-push-id": ("call", "c-2", _GOOD_CALL_PT),
}


@pytest.mark.parametrize("case", list(BAD_PLAINTEXTS))
def test_herald_rejects_bad_plaintext(herald, tmp_path, case):
    kind, push_id, plaintext = BAD_PLAINTEXTS[case]
    entry = _entry_with_plaintext(plaintext, kind, push_id)
    keys = {bytes.fromhex(entry["key_id"]): bytes.fromhex(entry["device_rx"])}
    assert open_binary(b64url_decode(entry["envelope"]), kind, push_id, entry["device_id"], keys) == plaintext
    with pytest.raises(EnvelopeError) as e:  # it authenticates, and this reader still refuses it
        open_envelope(entry["envelope"], kind, push_id, entry["device_id"], keys)
    assert e.value.reason in ("plaintext", "kind_mismatch", "id_mismatch")

    result = run_open(herald, entry, tmp_path)
    stderr = result.stderr.decode("utf-8", errors="replace")
    assert result.returncode != 0, f"herald accepted {case}: {result.stdout!r}"
    assert stderr.startswith("Error: "), stderr
    assert result.stdout.strip() == b""


# Section 6: plaintexts a reader must accept, with what it must read.
GOOD_PLAINTEXTS = {
    "unknown-flag-bits-ignored": (
        _GOOD_PT[:1] + b"\xf8" + _GOOD_PT[2:],
        _message(message_id="m-1"),
    ),
    "unknown-flag-bits-with-truncated": (
        _GOOD_PT[:1] + b"\xf9" + _GOOD_PT[2:],
        _message(message_id="m-1", truncated=True),
    ),
    "call-unknown-flag-bits-with-video": (
        _GOOD_CALL_PT[:1] + b"\x81" + _GOOD_CALL_PT[2:],
        {**FRESH_CONTENTS["call-audio"], "call_id": "c-1", "media": "video"},
    ),
    "i64-max": (None, _message(message_id="m-1", sent_at=I64_MAX)),
    "i64-min": (None, _message(message_id="m-1", sent_at=I64_MIN)),
    "beyond-double-precision": (None, _message(message_id="m-1", sent_at=2**53 + 1)),
    "nul-bom-noncharacter": (None, _message(message_id="m-1", text="a\x00b \ufeff \uffff")),
    "str-at-65535-bytes": (None, _message(message_id="m-1", text="é" * 32767 + "a")),
}


@pytest.mark.parametrize("case", list(GOOD_PLAINTEXTS))
def test_herald_reads_plaintext_edges(herald, tmp_path, case):
    plaintext, expected = GOOD_PLAINTEXTS[case]
    if plaintext is None:
        plaintext = encode_content(expected)
    kind = expected["type"]
    push_id = expected["message_id"] if kind == "message" else expected["call_id"]
    entry = _entry_with_plaintext(plaintext, kind, push_id)
    keys = {bytes.fromhex(entry["key_id"]): bytes.fromhex(entry["device_rx"])}
    assert canonical(open_envelope(entry["envelope"], kind, push_id, entry["device_id"], keys)) == canonical(expected)

    result = run_open(herald, entry, tmp_path)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert canonical(json.loads(result.stdout.decode("utf-8"))) == canonical(expected)


# --- Herald's binary agrees with its own vector file ---------------------------------------------


@pytest.mark.parametrize("vector", _vector_params())
def test_herald_opens_vector(herald, tmp_path, vector):
    v = _need(vector)
    result = run_open(herald, v, tmp_path)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert canonical(json.loads(result.stdout.decode("utf-8"))) == canonical(v["content"])


@pytest.mark.parametrize("neg", _negative_params())
def test_herald_refuses_negative(herald, tmp_path, neg):
    n = _need(neg)
    base = _base_vector(n)
    entry = {**base, **{k: n[k] for k in ("name", "kind", "push_id", "device_id", "envelope")}}
    # A callback's push number is the negative entry's own (absent for the other kinds).
    entry.pop("sequence", None)
    if n.get("sequence") is not None:
        entry["sequence"] = n["sequence"]
    result = run_open(herald, entry, tmp_path)
    stderr = result.stderr.decode("utf-8", errors="replace")
    assert result.returncode != 0, f"herald opened negative entry {n['name']!r}: {result.stdout!r}"
    # The CLI prints a sentence, not the error's name, so only its presence is checked.
    assert stderr.startswith("Error: ") and len(stderr.strip()) > len("Error:"), stderr
    assert result.stdout.strip() == b""


# --- 5. clear fields beside the envelope (section 5) ---------------------------------------------


def _routing_params():
    if VECTOR_FILE is None or not isinstance(VECTOR_FILE.get("routing"), list) or not VECTOR_FILE["routing"]:
        return _MISSING
    return [pytest.param(r, id=str(r.get("name", i))) for i, r in enumerate(VECTOR_FILE["routing"])]


def test_clear_fields_listed():
    assert VECTOR_FILE is not None, VECTOR_FILE_ERROR
    fields = VECTOR_FILE.get("clear_fields")
    assert isinstance(fields, list) and fields, "no clear_fields"
    for f in fields:
        assert {"network", "field", "bound_by", "rule"} <= set(f), f
        assert f["network"] in {"apns", "fcm"} and f["bound_by"] in {
            "additional_data", "sealed_content", "push_type", "none"
        }, f  # fmt: skip
    bound = {(f["network"], f["field"]): f["bound_by"] for f in fields}
    assert bound[("apns", "herald.conversation_id")] == "sealed_content"
    assert bound[("apns", "aps.thread-id")] == "sealed_content"
    assert bound[("fcm", "conversation_id")] == "sealed_content"
    assert {e["expect"] for e in VECTOR_FILE["routing"]} == {"opened", "tampered", "refused"}


def receive(entry: dict, base: dict) -> str:
    """A receiver written from section 5: route by what the envelope authenticates."""
    keys = {bytes.fromhex(base["key_id"]): bytes.fromhex(base["device_rx"])}
    if entry["network"] == "apns":
        body = json.loads(entry["payload"])
        aps, clear = body.get("aps", {}), body.get("herald", {})
        kind = {"alert": "message", "voip": "call"}[entry["push_type"]]
        checks = [(clear.get("kind"), lambda content: kind)]
        conversations = [clear.get("conversation_id"), aps.get("thread-id")]
    else:
        clear = entry["data"]
        kind = clear.get("kind")
        checks = []
        conversations = [clear.get("conversation_id")]
    push_id = clear.get("message_id" if kind == "message" else "call_id")
    try:
        content = open_envelope(clear["sealed"], kind, push_id, base["device_id"], keys)
    except EnvelopeError:
        return "refused"
    if kind == "message":
        checks += [(value, lambda content: content["conversation_id"]) for value in conversations]
    # Missing counts as different.
    return "tampered" if any(value != sealed(content) for value, sealed in checks) else "opened"


@pytest.mark.parametrize("entry", _routing_params())
def test_routing_entry(entry):
    e = _need(entry)
    base = {v["name"]: v for v in VECTOR_FILE["vectors"]}[e["base"]]
    assert receive(e, base) == e["expect"], e["name"]
