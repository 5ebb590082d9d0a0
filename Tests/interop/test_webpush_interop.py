"""Web Push from Herald, decrypted by an independent implementation (docs/webpush.md).

* RFC 8291 Appendix A's body decrypts through `http_ece` to its plaintext, with the same values
  Tests/HeraldWebPushCoreTests/WebPushEncryptionTests.swift checks Herald's code against;
* a running `herald serve` (the spec-checking relay of test_relay_openapi.py) in sandbox mode
  pushes to a browser played here: a P-256 key pair and an auth secret made with `cryptography`,
  the app's application server key from `GET /v1/apps/{id}/web-push`, a subscription minted by
  the sandbox's Web Push service, an activation with it; a message and a call are sent, and from
  the sandbox's inspection each body is decrypted with `http_ece` (aes128gcm), the envelope in it
  opened with PyNaCl, the VAPID claims checked (`k` the app's key, `aud` the endpoint's origin,
  `exp` within 24 hours, a `sub`), and no marker text or sender name appears in the ciphertext,
  the headers or the plaintext's clear fields.

Run: HERALD_BIN=.build/debug/herald scripts/with-postgres.sh python3 -m pytest -q
Tests/interop/test_webpush_interop.py
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.parse

import http_ece
from py_vapid import Vapid02
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from test_relay_openapi import (  # noqa: F401 (fixtures)
    DEFAULT_APP,
    Relay,
    herald,
    key_id,
    open_envelope,
    parse_plaintext,
    receive_key,
    relay,
    spec,
    unique,
)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# --- RFC 8291 Appendix A -------------------------------------------------------------------------

RFC8291 = {
    "plaintext": "V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24",
    "sender_public": "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
    "user_agent_private": "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
    "user_agent_public": "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
    "auth": "BTBZMqHH6r4Tts7J_aSIgg",
    "salt": "DGv6ra1nlYgDCS1FRnbzlw",
    "body": "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEq"
    "KK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
}


def _rfc_user_agent() -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(int.from_bytes(b64url_decode(RFC8291["user_agent_private"]), "big"), ec.SECP256R1())


def test_rfc8291_appendix_a_decrypts_with_http_ece():
    key = _rfc_user_agent()
    public = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    assert b64url(public) == RFC8291["user_agent_public"]
    body = b64url_decode(RFC8291["body"])
    assert body[:16] == b64url_decode(RFC8291["salt"]) and body[21:86] == b64url_decode(RFC8291["sender_public"])
    plaintext = http_ece.decrypt(
        body, private_key=key, auth_secret=b64url_decode(RFC8291["auth"]), version="aes128gcm"
    )
    assert plaintext == b64url_decode(RFC8291["plaintext"])


def test_rfc8291_appendix_a_refuses_another_auth_secret():
    body = b64url_decode(RFC8291["body"])
    try:
        http_ece.decrypt(body, private_key=_rfc_user_agent(), auth_secret=os.urandom(16), version="aes128gcm")
    except Exception:  # http_ece raises cryptography's InvalidTag or its own ECEException
        return
    raise AssertionError("a body decrypted with the wrong auth secret")


# --- a running relay -----------------------------------------------------------------------------


class Browser:
    """A browser's push subscription, made here: the sandbox never sees the private key or auth."""

    def __init__(self, endpoint: str):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        self.endpoint = endpoint

    @property
    def subscription(self) -> dict:
        public = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"endpoint": self.endpoint, "keys": {"p256dh": b64url(public), "auth": b64url(self.auth)}}

    def decrypt(self, body: bytes) -> bytes:
        return http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _records(relay: Relay, endpoint: str, count: int) -> list[dict]:
    deadline = time.monotonic() + 10
    while True:
        query = urllib.parse.urlencode({"endpoint": endpoint})
        records = [r for r in relay.sandbox("GET", f"/webpush/inspection?{query}")["records"] if r["status"] == 201]
        if len(records) >= count or time.monotonic() > deadline:
            return records
        time.sleep(0.05)


def test_a_browser_decrypts_what_herald_sends(relay: Relay):
    app = relay.call("GET", f"/v1/apps/{DEFAULT_APP}/web-push", 200, token=relay.api_key)
    vapid_public = b64url_decode(app["application_server_key"])
    assert len(vapid_public) == 65 and vapid_public[0] == 4
    device = relay.new_sandbox_device(DEFAULT_APP, "web", application_server_key=app["application_server_key"])
    browser = Browser(device["messaging_token"])
    user = unique("web-user")
    activation, device_key = relay.activate(user, app=DEFAULT_APP, platform="web", subscription=browser.subscription)

    marker, sender = unique("marker-text"), unique("Sender Name")
    message = relay.call(
        "POST",
        "/v1/messages",
        202,
        {"to": user, "from": {"id": "agent-1", "name": sender}, "conversation": "conv-1", "text": marker},
        relay.api_key,
    )
    call_id = unique("call")
    call = relay.call(
        "POST",
        "/v1/calls",
        202,
        {"to": user, "from": {"id": "agent-1", "name": sender}, "call_id": call_id, "media": "audio"},
        relay.api_key,
    )
    for receipt in (message, call):
        assert relay.wait_final(receipt["pushes"][0]["push_id"])["state"] == "delivered"

    records = _records(relay, browser.endpoint, 2)
    assert len(records) == 2, records
    rx, kid = receive_key(device_key, activation), key_id(device_key, activation)
    opened = {}
    for record in records:
        body = base64.b64decode(record["body"])
        assert len(body) <= 4096 and record["headers"].get("content-encoding") == "aes128gcm"
        for clear in (body, json.dumps(record["headers"]).encode(), json.dumps(record.get("vapid")).encode()):
            assert marker.encode() not in clear and sender.encode() not in clear
        assert int(record["headers"]["ttl"]) > 0 and record["headers"]["urgency"] in {"high", "normal"}

        vapid = record["vapid"]  # present only once the sandbox verified the ES256 signature with k
        # And verified again here, independently: py_vapid checks the JWT's ES256 signature with k.
        assert Vapid02.verify(f"vapid t={vapid['t']},k={vapid['k']}")
        header, claims = (json.loads(b64url_decode(part)) for part in vapid["t"].split(".")[:2])
        assert header["alg"] == "ES256" and claims == {"aud": vapid["aud"], "exp": vapid["exp"], "sub": vapid["sub"]}
        assert b64url_decode(vapid["k"]) == vapid_public
        assert vapid["aud"] == _origin(browser.endpoint)
        assert 0 < vapid["exp"] - time.time() <= 24 * 3600
        assert vapid["sub"].startswith(("mailto:", "https:"))

        data = json.loads(browser.decrypt(body))
        assert all(isinstance(v, str) for v in data.values())
        clear = {k: v for k, v in data.items() if k != "sealed"}
        assert marker not in json.dumps(clear) and sender not in json.dumps(clear)
        assert data["v"] == "1" and data["push_id"] and data["sealed"]
        kind, subject = (0x01, data["message_id"]) if data["kind"] == "message" else (0x02, data["call_id"])
        content = parse_plaintext(open_envelope(data["sealed"], rx, kid, kind, subject, activation["device_id"]))
        opened[data["kind"]] = (content, record["headers"]["urgency"])

    message_content, _ = opened["message"]
    assert message_content["text"] == marker and message_content["sender_name"] == sender
    call_content, urgency = opened["call"]
    assert call_content["call_id"] == call_id and call_content["caller_name"] == sender and urgency == "high"


def test_another_browser_cannot_decrypt(relay: Relay):
    app = relay.call("GET", f"/v1/apps/{DEFAULT_APP}/web-push", 200, token=relay.api_key)
    device = relay.new_sandbox_device(DEFAULT_APP, "web", application_server_key=app["application_server_key"])
    browser = Browser(device["messaging_token"])
    user = unique("web-user")
    relay.activate(user, app=DEFAULT_APP, platform="web", subscription=browser.subscription)
    receipt = relay.call(
        "POST",
        "/v1/messages",
        202,
        {"to": user, "from": {"id": "a", "name": "n"}, "conversation": "c", "text": "t"},
        relay.api_key,
    )
    relay.wait_final(receipt["pushes"][0]["push_id"])
    (record,) = _records(relay, browser.endpoint, 1)
    stranger = Browser(browser.endpoint)
    try:
        stranger.decrypt(base64.b64decode(record["body"]))
    except Exception:
        return
    raise AssertionError("another browser's keys decrypted the push")
