"""The hostile corpus (issue 30): bodies made to cost a parser memory or time, posted to every
listener of `herald serve` and to `herald provider`.

The corpus is made here, in code (`corpus`): nesting of `[` and `{` 1,000 to 120,000 levels
deep (closed, and never closed), 3,000, 15,000 and 50,000 unknown keys, 100,000 array elements,
a 250 KB string, a 100 KB key given twice, a number of 100,000 digits, `1e999999`, invalid
UTF-8 (overlong forms, surrogates, past U+10FFFF, lone and missing continuation bytes, Latin-1,
a BOM), keys given twice (escaped, nested, inside an array), truncated JSON, NUL bytes, JSON
that is not one object, and a body exactly at the listener's size limit and one byte over it.

The test drives the real binaries and talks to them only over the wire:

* `herald serve` in sandbox mode (the `relay` fixture of test_relay_openapi.py: free ports, the
  Genesys adapter on) and a `herald provider` pointed at its sandbox;
* every body goes to `POST /v1/activations` without a credential (401, the body never read), and
  with the API key (400 `invalid_field` naming the field at fault or `body`, or the body's first
  key when the route's request schema in docs/openapi.yaml does not have it: a strict route
  refuses an unknown key as it reads it; 413 `body_too_large` over 262,144 bytes); to
  `POST /v1/messages` with the API key (the same); to
  `POST /v1/adapters/genesys` signed (the same) and unsigned (401, or 413 when too large: the
  signature covers the body, so it is read first); to the sandbox control API's
  `POST /sandbox/devices` (400 `{"error": <sentence naming the field or the body>}`, 413 over
  64 KiB); to the sandbox FCM listener over TLS (HTTP/1.1, ALPN), `messages:send` with a real
  access token (400 `INVALID_ARGUMENT`, Google's error shape) and `POST /token` as JSON (400
  `unsupported_grant_type`: no field survives); to the provider's `POST /v1/push/batch` with the
  secret (400 `invalid_request` naming the field, 413 over 16 MiB) and without it (401);
* no answer echoes the body (each is under 2 KB), and each of the bodies up to 1 MiB is answered
  within REQUEST_BOUND seconds (far above what they take, so it cannot flake; the figures are in
  scripts/bench-hostile.sh and docs/performance.md);
* afterwards every listener still answers: the relay's `/health` (with the same counts as
  before: nothing was written), the control API's `/sandbox/health`, the FCM token endpoint (a
  fresh access token), the APNs listener (TLS with ALPN h2 and the server's SETTINGS frame), the
  provider's `/health`;
* the peak resident memory of the `herald serve` process (relay and sandbox; `VmHWM` in
  /proc/<pid>/status) stays under 150 MB (PEAK_BOUND), the issue's bound. The provider's peak is
  printed, not bounded.

With HERALD_HOSTILE_REPORT=1 (scripts/bench-hostile.sh sets it) the time of every request and the
peaks are printed (run pytest with -s to see them).

Python packages: pytest, pyyaml, jsonschema, openapi-spec-validator, pynacl (for
test_relay_openapi.py's fixtures), PyJWT and cryptography (aioapns brings them) for the FCM
access token.

Run: python3 -m pytest -q Tests/interop/test_hostile_bodies.py   (HERALD_BIN overrides the
binary, default .build/debug/herald relative to the repository root; the test is skipped only
when that binary is missing).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import jwt
import pytest

from test_relay_crash import Processes, free_port, stop
from test_relay_openapi import (  # noqa: F401  (herald, spec and relay are fixtures)
    MAX_BODY,
    WEBHOOK_SECRET,
    Relay,
    Spec,
    herald,
    relay,
    spec,
)

PEAK_BOUND = 150 * 1024 * 1024  # bytes: the "Must hold"
REQUEST_BOUND = 5.0  # seconds, for any body up to TIMED_BODY (they take milliseconds)
TIMED_BODY = 1024 * 1024
HTTP_TIMEOUT = 60.0  # a 16 MiB body on a debug build takes a few seconds
STARTUP_TIMEOUT = 60.0
CONTROL_MAX_BODY = 64 * 1024  # the sandbox's control API and FCM listener
PROVIDER_MAX_BODY = 16 * 1024 * 1024
PROVIDER_SECRET = "hostile-provider-secret-0123456789"
ANSWER_BOUND = 2048  # bytes: an answer names the field, it does not repeat the body
REPORT = os.environ.get("HERALD_HOSTILE_REPORT") == "1"


# --- the corpus ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Body:
    """A hostile body, and the `field` a relay route must name when it refuses it as JSON.

    `fields` is None when the body is JSON within the limits: then the route's own decoding
    names a field of its own (the first one missing), which differs by route."""

    name: str
    data: bytes
    fields: frozenset[str] | None

    @property
    def top(self) -> str | None:
        """The body's first key, when it opens as an object with a plain key: a route that knows
        its fields refuses an unknown one as it reads it, before anything after it."""
        match = re.match(rb'\{"([\x20-\x21\x23-\x5b\x5d-\x7e]*)"', self.data)
        return match.group(1).decode() if match else None


BODY = frozenset({"body"})


def _keys(count: int) -> bytes:
    return b"{" + b",".join(b'"k%06d":0' % n for n in range(count)) + b"}"


def corpus(limit: int) -> list[Body]:
    """Every hostile body, for a listener that reads at most `limit` bytes."""
    bodies: list[Body] = []

    def add(name: str, data: bytes, fields: frozenset[str] | set[str] | None = BODY) -> None:
        bodies.append(Body(name, data, None if fields is None else frozenset(fields)))

    # Nesting: each level is a container, a coding path and a stack frame in Foundation's decoders.
    for levels in (1_000, 30_000, 60_000, 120_000):
        add(f"[ x {levels:,}", b"[" * levels + b"]" * levels)
        add(f"{{ x {levels:,}", b'{"a":' * levels + b"0" + b"}" * levels)
    add("[ x 120,000, never closed", b"[" * 120_000)
    add("{ x 50,000, never closed", b'{"a":' * 50_000)
    add('{"to": [ x 60,000', b'{"to":' + b"[" * 60_000 + b"]" * 60_000 + b"}")
    add("[{ x 20,000", b'[{"a":' * 20_000 + b"0" + b"}]" * 20_000)
    # Width: a flood of members.
    add("3,000 unknown keys", _keys(3_000), None)
    add("15,000 unknown keys", _keys(15_000))
    add("50,000 unknown keys", _keys(50_000))
    add("100,000 array elements", b'{"to":[' + b",".join([b"0"] * 100_000) + b"]}")
    add("4,000 keys given twice", b"{" + b",".join([b'"to":0'] * 4_000) + b"}", {"to"})
    # Length.
    add("250 KB string", b'{"text":"' + b"a" * 250_000 + b'"}', None)
    add("40,000 escapes", b'{"text":"' + b"\\u00e9" * 40_000 + b'"}', None)
    long_key = b"k" * 100_000
    add("100 KB key given twice", b'{"' + long_key + b'":0,"' + long_key + b'":1}', {"k" * 200 + "…"})
    add("100,000-digit number", b'{"to":' + b"7" * 100_000 + b"}", {"to"})
    add("100,000-digit fraction", b'{"to":0.' + b"0" * 100_000 + b"1}", {"to"})
    add("100-digit exponent", b'{"to":1e' + b"9" * 100 + b"}", {"to"})
    add("1e999999", b'{"to":1e999999}', None)
    add("-1e-999999", b'{"to":-1e-999999,"ttl":1e999999}', None)
    # Invalid UTF-8, in a value (the field is named), in a key and outside any string (the body).
    for name, sequence in (
        ("0xFF", b"\xff"),
        ("overlong '/'", b"\xc0\xaf"),
        ("overlong NUL", b"\xc0\x80"),
        ("overlong 3 bytes", b"\xe0\x80\xaf"),
        ("surrogate U+D800", b"\xed\xa0\x80"),
        ("past U+10FFFF", b"\xf4\x90\x80\x80"),
        ("0xF5 lead", b"\xf5\x80\x80\x80"),
        ("lone continuation", b"\x80"),
        ("missing continuation", b"\xe2\x82"),
        ("Latin-1", b"caf\xe9"),
    ):
        add(f"invalid UTF-8 in a value: {name}", b'{"to":"' + sequence + b'"}', {"to"})
    add("invalid UTF-8 in a key", b'{"t\xffo":"a"}')
    add("invalid UTF-8 outside a string", b'{"to":"a"\xff}')
    add("UTF-8 BOM", b'\xef\xbb\xbf{"to":"a"}')
    add("UTF-16", '{"to":"a"}'.encode("utf-16"))
    # Keys given twice: `JSONDecoder` would keep one of them without a word.
    add("duplicate key", b'{"to":"a","to":"b"}', {"to"})
    add("duplicate key, escaped", b'{"to":"a","t\\u006f":"b"}', {"to"})
    add("duplicate key, nested", b'{"from":{"id":"a","name":"A","id":"b"}}', {"from.id"})
    add("duplicate key in an array", b'{"pushes":[{"id":"a"},{"id":"b","id":"c"}]}', {"pushes[1].id"})
    # Truncated, and not JSON.
    for text in (b"{", b'{"to"', b'{"to":', b'{"to":"a', b'{"to":"a",', b'{"to":[1,2', b'{"to":tru', b'{"a":"\\u12'):
        add(f"truncated {text.decode()}", text)
    for text in (b'{"a":1,}', b"{'a':1}", b'{"a":NaN}', b'{"a":01}', b'{"a":1}{}', b"{/* */}", b'{"a":"\\x41"}'):
        add(f"not JSON {text.decode()}", text)
    for text in (b"", b"   ", b"[]", b'"text"', b"1", b"null", b"[{}]"):
        add(f"not an object {text.decode()!r}", text)
    # NUL: a raw NUL is never JSON; an escaped one is, and the field refuses it.
    add("NUL in a string", b'{"to":"a\x00b"}')
    add("NUL before", b'\x00{"to":"a"}')
    add("NUL after", b'{"to":"a"}\x00\x00')
    add("NUL only", b"\x00" * 1_000)
    add("escaped NUL", b'{"to":"\\u0000"}', None)
    # The size limit: exactly at it (read, and refused for what it lacks), and one byte over.
    frame = b'{"pad":"' + b'"}'
    add(f"exactly {limit:,} bytes", b'{"pad":"' + b"x" * (limit - len(frame)) + b'"}', None)
    add(f"{limit + 1:,} bytes", b'{"pad":"' + b"x" * (limit + 1 - len(frame)) + b'"}', None)
    return bodies


# --- HTTP ----------------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # lowercased names
    raw: bytes
    seconds: float

    @property
    def json(self):
        return json.loads(self.raw)


def post(url: str, data: bytes, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None) -> Answer:
    """One POST on a fresh connection, timed from the first byte sent to the last received."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=HTTP_TIMEOUT, context=context)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=HTTP_TIMEOUT)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    started = time.monotonic()
    try:
        connection.request("POST", path, body=data, headers={"content-type": "application/json", **(headers or {})})
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    seconds = time.monotonic() - started
    return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, raw, seconds)


def get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, object]:
    parts = urllib.parse.urlsplit(url)
    connection = (
        http.client.HTTPSConnection(parts.hostname, parts.port, timeout=HTTP_TIMEOUT, context=context)
        if parts.scheme == "https"
        else http.client.HTTPConnection(parts.hostname, parts.port, timeout=HTTP_TIMEOUT)
    )
    try:
        connection.request("GET", parts.path)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (`VmHWM`), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB$", status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) * 1024


@dataclass
class Report:
    """Every request's time, and the peaks, for the benchmark (HERALD_HOSTILE_REPORT=1)."""

    rows: list[tuple[str, str, int, int, float]] = field(default_factory=list)
    peaks: dict[str, int] = field(default_factory=dict)

    def add(self, target: str, body: Body, answer: Answer) -> None:
        self.rows.append((target, body.name, len(body.data), answer.status, answer.seconds))

    def print(self) -> None:
        print(f"\n{'target':<34} {'body':<44} {'bytes':>10} {'status':>6} {'ms':>9}")
        for target, name, size, status, seconds in self.rows:
            print(f"{target:<34} {name[:44]:<44} {size:>10,} {status:>6} {seconds * 1000:>9.1f}")
        slowest = sorted(self.rows, key=lambda row: -row[4])[:5]
        print("slowest: " + "; ".join(f"{t} {n!r} {s * 1000:.0f} ms" for t, n, _, _, s in slowest))
        for name, value in self.peaks.items():
            print(f"{name}: {value / 1024 / 1024:.1f} MB")


REPORTED = Report()


@pytest.fixture(scope="module", autouse=True)
def report():
    """Prints the figures after the module's tests, passed or not (HERALD_HOSTILE_REPORT=1)."""
    yield REPORTED
    if REPORT:
        REPORTED.print()


def check(target: str, body: Body, answer: Answer, status: int) -> None:
    """The status, an answer that does not repeat the body, and the time of a small body."""
    REPORTED.add(target, body, answer)
    assert answer.status == status, (
        f"{target}, body {body.name!r} ({len(body.data):,} bytes): expected {status}, got {answer.status}: "
        f"{answer.raw[:300]!r}"
    )
    assert len(answer.raw) < ANSWER_BOUND, f"{target}, body {body.name!r}: an answer of {len(answer.raw):,} bytes"
    if len(body.data) <= TIMED_BODY:
        assert answer.seconds < REQUEST_BOUND, f"{target}, body {body.name!r}: answered in {answer.seconds:.1f} s"


def request_keys(spec: Spec, path: str) -> frozenset[str]:
    """The top-level fields of a route's request body, from docs/openapi.yaml."""
    _, body = spec.follow(spec.operation_pointer(path, "post") + "/requestBody")
    schema = body["content"]["application/json"]["schema"]
    while "$ref" in schema:
        schema = spec.lookup(schema["$ref"][1:])
    assert schema.get("additionalProperties") is False, f"POST {path} takes unknown fields"
    return frozenset(schema["properties"])


def check_relay_refusal(
    target: str, body: Body, answer: Answer, limit: int = MAX_BODY, known: frozenset[str] | None = None
) -> None:
    """The relay's error body: 413 `body_too_large` over the limit, else 400 `invalid_field`
    naming the field the check refused (or any field, for JSON within the limits). A route that
    `known` says refuses unknown fields names the body's first key when it is not one of them."""
    too_large = len(body.data) > limit
    check(target, body, answer, 413 if too_large else 400)
    error = answer.json
    assert set(error) <= {"error", "reason", "field"} and isinstance(error.get("reason"), str), error
    if too_large:
        assert (error["error"], error.get("field")) == ("body_too_large", "body"), error
        return
    assert error["error"] == "invalid_field", error
    named = error.get("field")
    assert isinstance(named, str) and named, f"{target}, body {body.name!r}: no field named: {error}"
    fields = body.fields
    if known is not None and body.top is not None and body.top not in known:
        # A path is cut at 200 characters (JSONCheck): an answer does not repeat a long key.
        fields = frozenset({body.top if len(body.top) <= 200 else body.top[:200] + "…"})
    if fields is not None:
        assert named in fields, (
            f"{target}, body {body.name!r}: field {named[:80]!r}, expected {sorted(f[:80] for f in fields)}"
        )


# --- the provider and the sandbox's FCM listener ---------------------------------------------------


@dataclass
class Listeners:
    """Where `herald serve`'s sandbox listens, from its banner."""

    apns: str
    fcm: str
    team: str

    @staticmethod
    def of(relay: Relay) -> "Listeners":
        text = "\n".join(relay.banner)
        apns = re.search(r"^  sandbox\s+APNs (https://\S+)", text, re.MULTILINE)
        fcm = re.search(r"^  sandbox\s.*FCM (https://\S+)", text, re.MULTILINE)
        team = re.search(r"^  apps\s.*\(team (\w+)", text, re.MULTILINE)
        assert apns and fcm and team, f"unexpected banner: {relay.banner!r}"
        return Listeners(apns.group(1), fcm.group(1), team.group(1))


@dataclass
class Provider:
    url: str
    pid: int


@pytest.fixture(scope="module")
def provider(herald: Path, relay: Relay, tmp_path_factory: pytest.TempPathFactory):
    """`herald provider` with the sandbox's APNs key, pointed at `herald serve`'s sandbox."""
    root = tmp_path_factory.mktemp("hostile-provider")
    keys = relay.workdir / "keys"
    secret = root / "provider.secret"
    secret.write_text(PROVIDER_SECRET + "\n")
    secret.chmod(0o600)
    listeners = Listeners.of(relay)
    port = free_port()
    processes = Processes(root)
    process = processes.start(
        "provider",
        [
            str(herald), "provider",
            "--port", str(port),
            "--apns-key", str(sorted(keys.glob("AuthKey_*.p8"))[0]),
            "--apns-team-id", listeners.team,
            "--apns-url", listeners.apns,
            "--apns-ca", str(keys / "sandbox-ca.pem"),
            "--secret-file", str(secret),
            "--token-cache", str(root / "provider-token"),
            "--log-level", "warning",
        ],  # fmt: skip
        cwd=root,
    )
    try:
        process.wait_for_line("  listening", STARTUP_TIMEOUT)
        yield Provider(f"http://127.0.0.1:{port}", process.popen.pid)
        assert stop(process) == 0, process.stderr_tail()
    finally:
        processes.kill_all()


@dataclass
class FCM:
    url: str
    project: str
    context: ssl.SSLContext
    access_token: str


def tls_context(relay: Relay, alpn: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(relay.workdir / "keys" / "sandbox-ca.pem"))
    context.set_alpn_protocols([alpn])
    return context


def access_token(url: str, account: dict, context: ssl.SSLContext) -> str:
    """A token from the sandbox's token endpoint, for a JWT signed with the account's key."""
    now = int(time.time())
    claims = {
        "iss": account["client_email"],
        "scope": "https://www.googleapis.com/auth/firebase.messaging",
        "aud": url + "/token",
        "iat": now,
        "exp": now + 3600,
    }
    assertion = jwt.encode(claims, account["private_key"], algorithm="RS256", headers={"kid": account["private_key_id"]})
    form = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion})
    answer = post(url + "/token", form.encode(), {"content-type": "application/x-www-form-urlencoded"}, context)
    assert answer.status == 200, answer.raw
    return answer.json["access_token"]


@pytest.fixture(scope="module")
def fcm(relay: Relay) -> FCM:
    account = json.loads((relay.workdir / "keys" / "fcm-service-account.json").read_text())
    url = Listeners.of(relay).fcm
    context = tls_context(relay, "http/1.1")
    return FCM(url, account["project_id"], context, access_token(url, account, context))


def apns_answers(relay: Relay) -> None:
    """The APNs listener is alive: TLS with ALPN h2, and the server's SETTINGS frame after the
    client preface (RFC 9113 §3.4)."""
    parts = urllib.parse.urlsplit(Listeners.of(relay).apns)
    context = tls_context(relay, "h2")
    with socket.create_connection((parts.hostname, parts.port), timeout=HTTP_TIMEOUT) as raw:
        with context.wrap_socket(raw, server_hostname=parts.hostname) as connection:
            assert connection.selected_alpn_protocol() == "h2"
            connection.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            head = b""
            while len(head) < 9:
                chunk = connection.recv(9 - len(head))
                assert chunk, "the APNs listener closed the connection"
                head += chunk
            assert head[3] == 0x04, f"the first frame is not SETTINGS: {head!r}"


# --- the tests -----------------------------------------------------------------------------------

STATE: dict[str, object] = {}


def test_relay_routes_answer_every_hostile_body(relay: Relay, spec: Spec):
    """Activations without a credential (401), activations and messages with the API key."""
    STATE["health"] = get(relay.url + "/health")
    STATE["peak before"] = peak_rss(relay.process.pid)
    activation, message = request_keys(spec, "/v1/activations"), request_keys(spec, "/v1/messages")
    for body in corpus(MAX_BODY):
        answer = post(relay.url + "/v1/activations", body.data)
        check("activations, no credential", body, answer, 401)
        assert answer.json["error"] == "unauthorized" and answer.headers.get("www-authenticate") == "Bearer"
        key = {"authorization": "Bearer " + relay.api_key}
        answer = post(relay.url + "/v1/activations", body.data, key)
        check_relay_refusal("activations, API key", body, answer, known=activation)
        check_relay_refusal("messages, API key", body, post(relay.url + "/v1/messages", body.data, key), known=message)
    assert relay.process.poll() is None, "herald serve died"


def test_adapter_answers_every_hostile_body(relay: Relay):
    """The Genesys webhook: signed, each body is refused as JSON; unsigned, 401 (once read)."""
    url = relay.url + "/v1/adapters/genesys"
    for body in corpus(MAX_BODY):
        signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body.data, hashlib.sha256).hexdigest()
        check_relay_refusal("adapters/genesys, signed", body, post(url, body.data, {"x-herald-signature": signature}))
        unsigned = post(url, body.data)
        if len(body.data) > MAX_BODY:
            check_relay_refusal("adapters/genesys, unsigned", body, unsigned)
        else:
            check("adapters/genesys, unsigned", body, unsigned, 401)
            assert unsigned.json["error"] == "unauthorized"
    assert relay.process.poll() is None, "herald serve died"


def test_sandbox_control_api_answers_every_hostile_body(relay: Relay):
    """`POST /sandbox/devices`: 400 with a sentence naming the field (or the body), 413 over 64 KiB."""
    for body in corpus(CONTROL_MAX_BODY):
        answer = post(relay.control_url + "/devices", body.data)
        too_large = len(body.data) > CONTROL_MAX_BODY
        check("sandbox control /devices", body, answer, 413 if too_large else 400)
        error = answer.json
        assert list(error) == ["error"] and isinstance(error["error"], str), error
        if too_large:
            assert error["error"] == "Content Too Large", error
        elif body.fields == BODY:
            assert "body" in error["error"], f"body {body.name!r}: {error}"
        elif body.fields is not None:
            assert any(f"'{name}'" in error["error"] for name in body.fields), f"body {body.name!r}: {error}"
    assert relay.process.poll() is None, "herald serve died"


def test_sandbox_fcm_answers_every_hostile_body(relay: Relay, fcm: FCM):
    """`messages:send` with a valid access token, and `POST /token` as JSON: 400 each time."""
    send = f"{fcm.url}/v1/projects/{fcm.project}/messages:send"
    for body in corpus(CONTROL_MAX_BODY):
        answer = post(send, body.data, {"authorization": "Bearer " + fcm.access_token}, fcm.context)
        check("sandbox FCM messages:send", body, answer, 400)
        error = answer.json["error"]
        assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT") and error["message"], error
        answer = post(fcm.url + "/token", body.data, context=fcm.context)
        check("sandbox FCM /token", body, answer, 400)
        assert answer.json["error"] == "unsupported_grant_type", answer.json
    assert relay.process.poll() is None, "herald serve died"


def test_provider_batch_answers_every_hostile_body(provider: Provider):
    """`POST /v1/push/batch`: without the secret 401 (the body never read); with it 400
    `invalid_request` whose reason names the field (or the body), 413 over 16 MiB."""
    url = provider.url + "/v1/push/batch"
    STATE["provider peak before"] = peak_rss(provider.pid)
    for body in corpus(PROVIDER_MAX_BODY):
        answer = post(url, body.data)
        check("provider batch, no secret", body, answer, 401)
        assert answer.json["error"] == "unauthorized", answer.json
        answer = post(url, body.data, {"authorization": "bearer " + PROVIDER_SECRET})
        too_large = len(body.data) > PROVIDER_MAX_BODY
        check("provider batch, secret", body, answer, 413 if too_large else 400)
        error = answer.json
        assert error["error"] == ("body_too_large" if too_large else "invalid_request"), error
        # The provider's limit is 32,000 values, not the relay's 4,096.
        fields = body.fields if body.name != "15,000 unknown keys" else None
        if not too_large and fields == BODY:
            assert "body" in error["reason"], f"body {body.name!r}: {error}"
        elif not too_large and fields is not None:
            assert any(f"'{name}'" in error["reason"] for name in fields), f"body {body.name!r}: {error}"


def test_every_listener_still_answers_and_the_peak_stays_bounded(relay: Relay, provider: Provider, fcm: FCM):
    assert relay.process.poll() is None, "herald serve died"
    # The relay answers, and nothing was written: the same counts as before the corpus.
    assert get(relay.url + "/health") == STATE["health"]
    assert get(relay.control_url + "/health")[0] == 200
    account = json.loads((relay.workdir / "keys" / "fcm-service-account.json").read_text())
    assert access_token(fcm.url, account, fcm.context)
    apns_answers(relay)
    assert get(provider.url + "/health")[0] == 200
    peak = peak_rss(relay.process.pid)
    REPORTED.peaks = {
        "herald serve peak RSS (VmHWM) before the corpus": STATE["peak before"],
        "herald serve peak RSS (VmHWM) after the corpus": peak,
        "herald provider peak RSS (VmHWM) before the corpus": STATE["provider peak before"],
        "herald provider peak RSS (VmHWM) after the corpus": peak_rss(provider.pid),
    }
    assert peak < PEAK_BOUND, f"herald serve's peak RSS is {peak / 1024 / 1024:.1f} MB (bound 150 MB)"
