"""Checks docs/openapi.yaml against a live relay (`herald serve`).

The spec is the contract app and backend developers read; this test holds the server to it:

* docs/openapi.yaml must be a valid OpenAPI 3.1 document (openapi-spec-validator), and every
  example in it must satisfy its own schema;
* a real `herald serve` runs in a temporary directory on free ports (0), in sandbox mode (no
  Apple key: pushes go to the in-process APNs sandbox, whose control API makes device tokens);
* every route is called with good and bad requests. Each answer's status must be one the spec
  documents for that path and method, and its body must validate against the schema the spec
  declares for that status (JSON Schema 2020-12, with the spec's components). Request bodies
  are checked too: what the server accepts must satisfy the spec's request schema, and what it
  refuses as `invalid_field` must violate it wherever a schema can say so;
* the APNs payloads the relay sent (read back from the sandbox's inspection log) must match
  `ApnsMessagePayload` and `ApnsCallPayload`, and their `herald.sealed` must open with PyNaCl
  using the device's side of the key agreement (docs/envelope.md);
* SIGTERM must stop the server with exit status 0 within a few seconds.

Python packages: pytest, pyyaml, jsonschema, openapi-spec-validator, pynacl.

Run: python3 -m pytest -q Tests/interop/test_relay_openapi.py   (HERALD_BIN overrides the binary,
default .build/debug/herald relative to the repository root; the test is skipped only when that
binary is missing).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator
from nacl import bindings as sodium
from nacl.exceptions import CryptoError
from nacl.public import PrivateKey
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from waiting import eventually

REPO = Path(__file__).resolve().parents[2]
SPEC_PATH = REPO / "docs" / "openapi.yaml"
SPEC_URI = "https://herald.invalid/docs/openapi.yaml"  # a base URI for $ref resolution only

STARTUP_TIMEOUT = 60.0  # a debug build under load can take a while to start
EXIT_TIMEOUT = 10.0
DELIVERY_TIMEOUT = 20.0
HTTP_TIMEOUT = 15.0

DEFAULT_APP = "com.example.herald"  # made by `herald serve` in sandbox mode when no app exists
MAX_BODY = 256 * 1024
FINAL_STATES = {"delivered", "failed", "expired", "token_dead", "skipped"}
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
WEBHOOK_SECRET = "openapi-webhook-secret-0123"
FIXTURES = REPO / "Tests" / "HeraldRelayTests" / "Fixtures"
NOT_TRIGGERABLE = {"500", "503"}  # store failures and internal errors cannot be provoked from outside


# --- the spec ------------------------------------------------------------------------------------


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


class Spec:
    """docs/openapi.yaml, with JSON Schema validators for the schemas it declares."""

    def __init__(self, document: dict):
        self.document = document
        self.registry = Registry().with_resource(SPEC_URI, DRAFT202012.create_resource(document))
        self._validators: dict[str, Draft202012Validator] = {}
        self._templates = [
            (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$"), path)
            for path in document["paths"]
        ]

    def lookup(self, pointer: str):
        node = self.document
        for part in pointer.lstrip("/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def follow(self, pointer: str) -> tuple[str, dict]:
        """The object at `pointer`, after any chain of `$ref` (responses, parameters, headers)."""
        node = self.lookup(pointer)
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), f"only local references are expected, got {ref}"
            pointer = ref[1:]
            node = self.lookup(pointer)
        return pointer, node

    def validator(self, pointer: str) -> Draft202012Validator:
        if pointer not in self._validators:
            self._validators[pointer] = Draft202012Validator({"$ref": SPEC_URI + "#" + pointer}, registry=self.registry)
        return self._validators[pointer]

    def schema(self, name: str) -> Draft202012Validator:
        return self.validator("/components/schemas/" + _escape(name))

    def template(self, path: str) -> str | None:
        path = path.split("?", 1)[0]
        for pattern, template in self._templates:
            if pattern.match(path):
                return template
        return None

    def operation_pointer(self, template: str, method: str) -> str:
        return f"/paths/{_escape(template)}/{method}"

    def operations(self) -> list[tuple[str, str]]:
        return [
            (path, method) for path, item in self.document["paths"].items() for method in item if method in HTTP_METHODS
        ]

    def request_validator(self, template: str, method: str) -> Draft202012Validator:
        pointer = self.operation_pointer(template, method) + "/requestBody"
        pointer, body = self.follow(pointer)
        assert "application/json" in body["content"], f"{method.upper()} {template} takes no JSON body"
        return self.validator(pointer + "/content/application~1json/schema")


def _errors(validator: Draft202012Validator, instance) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(instance)]


@pytest.fixture(scope="module")
def spec() -> Spec:
    document = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    return Spec(document)


# --- the server as a subprocess ------------------------------------------------------------------


@pytest.fixture(scope="module")
def herald() -> Path:
    configured = os.environ.get("HERALD_BIN", ".build/debug/herald")
    path = Path(configured)
    if not path.is_absolute():
        path = REPO / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"Herald binary not found at {path} (set HERALD_BIN or build with `swift build`)")
    return path


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lowercased names
    raw: bytes

    @property
    def json(self):
        return json.loads(self.raw)


@dataclass
class Relay:
    """The running server and an HTTP client that checks every answer against the spec."""

    process: subprocess.Popen
    workdir: Path
    url: str  # http://host:port, without /v1
    control_url: str  # http://host:port/sandbox
    api_key: str
    spec: Spec
    banner: list[str]
    observed: set[tuple[str, str, str]] = field(default_factory=set)  # (template, method, status)

    # HTTP

    def _send(
        self,
        method: str,
        url: str,
        body=None,
        token: str | None = None,
        raw: bytes | None = None,
        authorization: str | None = None,
    ) -> Response:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"content-type": "application/json"} if data is not None else {}
        if authorization is not None:
            headers["authorization"] = authorization
        elif token is not None:
            headers["authorization"] = "Bearer " + token
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as answer:
                status, answer_headers, payload = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            status, answer_headers, payload = error.code, error.headers, error.read()
        return Response(status, {k.lower(): v for k, v in answer_headers.items()}, payload)

    def sandbox(self, method: str, path: str, body=None):
        answer = self._send(method, self.control_url + path, body)
        assert answer.status < 300, f"sandbox {method} {path}: {answer.status} {answer.raw!r}"
        return answer.json if answer.raw else None

    def call(
        self,
        method: str,
        path: str,
        status: int,
        body=None,
        token: str | None = None,
        *,
        raw: bytes | None = None,
        authorization: str | None = None,
        field_name: str | None = None,
        schema_rejects: bool | None = None,
    ):
        """One request; asserts the status, checks the answer (and the request) against the spec.

        Returns the decoded JSON body, or the raw bytes when the answer is not JSON.
        """
        answer = self._send(method, self.url + path, body, token, raw, authorization)
        assert answer.status == status, f"{method} {path}: expected {status}, got {answer.status}: {answer.raw[:500]!r}"
        template = self.spec.template(path)
        assert template is not None, f"{path} is not a path of the spec"
        self.check_answer(template, method.lower(), answer)
        decoded = answer.json if answer.headers.get("content-type", "").startswith("application/json") else answer.raw
        if field_name is not None:
            assert decoded.get("field") == field_name, (
                f"{method} {path}: expected field {field_name!r}, got {decoded!r}"
            )
        if body is not None and raw is None:
            self.check_request(template, method.lower(), body, status, schema_rejects)
        return decoded

    def upgrade(self, path: str, status: int, authorization: str | None = None) -> Response:
        """A WebSocket upgrade request over a raw socket (urllib cannot ask for one); asserts the
        status and checks the answer against the spec like `call`."""
        parsed = urllib.parse.urlsplit(self.url)
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {parsed.netloc}",
            "Connection: Upgrade",
            "Upgrade: websocket",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)).decode(),
        ]
        if authorization is not None:
            lines.append(f"Authorization: {authorization}")
        with socket.create_connection((parsed.hostname, parsed.port), timeout=HTTP_TIMEOUT) as connection:
            connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = connection.recv(65536)
                assert chunk, f"GET {path}: the connection closed before an answer: {received!r}"
                received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            head_lines = head.decode("latin-1").split("\r\n")
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in head_lines[1:])
            }
            answered = int(head_lines[0].split(" ")[1])
            length = 0 if answered == 101 else int(headers.get("content-length", "0"))
            while len(body) < length:
                chunk = connection.recv(65536)
                assert chunk, f"GET {path}: the connection closed inside the body"
                body += chunk
        answer = Response(status=answered, headers=headers, raw=body[:length])
        assert answered == status, f"GET {path} (upgrade): expected {status}, got {answered}: {answer.raw[:500]!r}"
        template = self.spec.template(path)
        assert template is not None, f"{path} is not a path of the spec"
        self.check_answer(template, "get", answer)
        return answer

    # Spec checks

    def check_answer(self, template: str, method: str, answer: Response) -> None:
        spec = self.spec
        operation = spec.lookup(spec.operation_pointer(template, method))
        status = str(answer.status)
        assert status in operation["responses"], (
            f"{method.upper()} {template} answered {status}, which the spec does not document "
            f"(documented: {sorted(operation['responses'])}): {answer.raw[:300]!r}"
        )
        self.observed.add((template, method, status))
        pointer, response = spec.follow(spec.operation_pointer(template, method) + f"/responses/{status}")
        for name, header_pointer in ((n, f"{pointer}/headers/{_escape(n)}") for n in response.get("headers", {})):
            header_pointer, header = spec.follow(header_pointer)
            value = answer.headers.get(name.lower())
            if header.get("required"):
                assert value is not None, f"{method.upper()} {template} {status}: no {name} header"
            if value is not None:
                problems = _errors(spec.validator(header_pointer + "/schema"), value)
                assert not problems, f"{method.upper()} {template} {status}: header {name}: {problems}"
        content = response.get("content")
        if not content:
            assert answer.raw == b"", f"{method.upper()} {template} {status}: expected no body, got {answer.raw!r}"
            return
        content_type = answer.headers.get("content-type", "")
        media = next((m for m in content if content_type.replace(" ", "") == m.replace(" ", "")), None)
        if media is None and content_type.split(";")[0].strip() == "application/json":
            media = "application/json" if "application/json" in content else None
        assert media is not None, (
            f"{method.upper()} {template} {status}: content-type {content_type!r} not in {list(content)}"
        )
        if media == "application/json":
            problems = _errors(spec.validator(f"{pointer}/content/application~1json/schema"), answer.json)
            assert not problems, (
                f"{method.upper()} {template} {status}: {answer.json!r} does not match the spec: {problems}"
            )

    def check_request(self, template: str, method: str, body, status: int, schema_rejects: bool | None) -> None:
        validator = self.spec.request_validator(template, method)
        problems = _errors(validator, body)
        if 200 <= status < 300:
            assert not problems, f"the server accepted {body!r}, but the spec's request schema refuses it: {problems}"
        elif status == 400 and schema_rejects is not False:
            assert problems, f"the server refused {body!r} as invalid, but the spec's request schema allows it"

    # Helpers for the scenarios

    def default_team(self) -> str:
        apps = self.call("GET", "/v1/apps", 200, token=self.api_key)["apps"]
        return next(app["team_id"] for app in apps if app["id"] == DEFAULT_APP)

    def new_sandbox_device(self, bundle_id: str = DEFAULT_APP, platform: str = "ios", **extra) -> dict:
        return self.sandbox("POST", "/devices", {"bundle_id": bundle_id, "platform": platform} | extra)

    def activate(self, user: str, app: str = DEFAULT_APP, platform: str = "ios", **extra) -> tuple[dict, PrivateKey]:
        key = PrivateKey.generate()
        body = {"user_id": user, "app": app, "platform": platform, "public_key": b64(bytes(key.public_key))} | extra
        return self.call("POST", "/v1/activations", 201, body, self.api_key), key

    def wait_final(self, push_id: str) -> dict:
        """Polls the push until it reaches a final state (the dispatcher's answer is the signal)."""
        last: list = [None]

        def final():
            last[0] = self.call("GET", f"/v1/pushes/{push_id}", 200, token=self.api_key)
            return last[0] if last[0]["state"] in FINAL_STATES else None

        return eventually(final, DELIVERY_TIMEOUT, 0.05, lambda: f"push {push_id} final (still {last[0]['state']})")

    def inspection(self, token: str) -> list[dict]:
        return self.sandbox("GET", f"/inspection?token={token}")["records"]

    def fcm_inspection(self, token: str) -> list[dict]:
        """What the sandbox's FCM side accepted for a registration token."""
        records = self.sandbox("GET", f"/fcm/inspection?token={urllib.parse.quote(token)}")["records"]
        return [r for r in records if r["kind"] == "send" and r["status"] == 200]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _read_banner(process: subprocess.Popen, deadline: float) -> list[str]:
    """Reads stdout lines until the relay and sandbox lines are printed (the ready signal)."""
    lines: list[str] = []
    pending = b""
    fd = process.stdout.fileno()
    while time.monotonic() < deadline:
        if any(line.startswith("  relay") for line in lines) and any(line.startswith("  sandbox ") for line in lines):
            return lines
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            if process.poll() is not None:
                break
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        pending += chunk
        *complete, pending = pending.split(b"\n")
        lines += [line.decode("utf-8", "replace") for line in complete]
    raise AssertionError(f"herald serve did not print its URLs (exit status {process.poll()}); stdout: {lines!r}")


@pytest.fixture(scope="module")
def relay(herald: Path, spec: Spec, tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("relay-openapi")
    command = [str(herald), "serve", "--port", "0", "--sandbox-apns-port", "0", "--sandbox-control-port", "0"]
    command += ["--sandbox-fcm-port", "0"]
    command += ["--keys-dir", str(workdir / "keys"), "--data", str(workdir / "data"), "--log-level", "warning"]
    # Messages to users without a device are refused (409 no_devices), so that answer is exercised;
    # the held answer is the relay tests' (Tests/HeraldRelayTests/UndeliverableTests.swift).
    # One app's message quota is one message at all, so its 429 is exercised (exercise_quotas).
    (workdir / "herald.yaml").write_text(
        "undeliverable: refuse\n"
        f"quotas:\n  apps:\n    {QUOTA_APP}:\n      messages_per_second: 0.001\n      burst: 1\n",
        encoding="utf-8",
    )
    command += ["--config", str(workdir / "herald.yaml")]
    environment = dict(os.environ, HERALD_GENESYS_SECRET=WEBHOOK_SECRET)
    with open(workdir / "serve.stderr", "w+b") as stderr_file:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr_file, cwd=workdir, env=environment)
        yield from _serve(process, workdir, spec, stderr_file)


def _serve(process: subprocess.Popen, workdir: Path, spec: Spec, stderr_file):
    try:
        banner = _read_banner(process, time.monotonic() + STARTUP_TIMEOUT)
        text = "\n".join(banner)
        relay_match = re.search(r"^  relay\s+(http://\S+?)/v1\s", text, re.MULTILINE)
        control_match = re.search(r"^  sandbox\s.*control\s+(http://\S+/sandbox)", text, re.MULTILINE)
        assert relay_match and control_match, f"unexpected banner: {banner!r}"
        api_key = (workdir / "keys" / "api.key").read_text(encoding="utf-8").strip()
        server = Relay(process, workdir, relay_match.group(1), control_match.group(1), api_key, spec, banner)
        def healthy() -> bool:
            try:
                return server._send("GET", server.url + "/health").status == 200
            except OSError:
                return False

        # The banner is printed once the API listens; /health confirms the store answers.
        eventually(healthy, STARTUP_TIMEOUT, what="/health to answer 200")
        yield server
    finally:
        if process.poll() is None:  # a test failed before the SIGTERM test: stop our own process
            process.terminate()
            try:
                process.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()
        stderr_file.seek(0)
        tail = stderr_file.read()[-4000:].decode("utf-8", "replace")
        if "Fatal error" in tail or "runtime failure" in tail:
            print("herald serve stderr (tail):\n" + tail)


# --- envelopes (docs/envelope.md), to check what `herald.sealed` carries ---------------------------


def open_envelope(text: str, receive_key: bytes, key_id: str, kind: int, subject_id: str, device_id: str) -> bytes:
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    assert data[0] == 0x01, "envelope version"
    assert data[1:9].hex() == key_id, "the envelope's key id is the activation's key_id"
    nonce, sealed = data[9:33], data[33:]

    def field_bytes(value: str) -> bytes:
        encoded = value.encode()
        return struct.pack(">H", len(encoded)) + encoded

    ad = b"HRLD" + b"\x01" + data[1:9] + bytes([kind]) + field_bytes(subject_id) + field_bytes(device_id)
    return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(sealed, ad, nonce, receive_key)


def parse_plaintext(plaintext: bytes) -> dict:
    kind, flags, moment = plaintext[0], plaintext[1], struct.unpack(">q", plaintext[2:10])[0]
    names = (
        ["message_id", "conversation_id", "sender_id", "sender_name", "text"]
        if kind == 0x01
        else ["call_id", "caller_id", "caller_name"]  # a call (0x02) or a missed call (0x03)
    )
    values, offset = {}, 10
    for name in names:
        (length,) = struct.unpack(">H", plaintext[offset : offset + 2])
        values[name] = plaintext[offset + 2 : offset + 2 + length].decode("utf-8")
        offset += 2 + length
    assert offset == len(plaintext), "no trailing bytes"
    return {"type": kind, "flags": flags, "at": moment} | values


def key_id(device_key: PrivateKey, activation: dict) -> str:
    """docs/envelope.md section 2: BLAKE2b-128 of the prefix and both public keys, first 8 bytes."""
    relay_public = base64.b64decode(activation["relay_public_key"])
    digest = hashlib.blake2b(b"herald-kid-v1" + bytes(device_key.public_key) + relay_public, digest_size=16).digest()
    return digest[:8].hex()


def receive_key(device_key: PrivateKey, activation: dict) -> bytes:
    relay_public = base64.b64decode(activation["relay_public_key"])
    rx, _tx = sodium.crypto_kx_client_session_keys(bytes(device_key.public_key), bytes(device_key), relay_public)
    return rx


# --- callbacks (seed 002), exercised by test_every_route_matches_the_spec ---------------------------


def _rfc3339(offset_seconds: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _milliseconds(text: str) -> int:
    """An RFC 3339 time the relay wrote, as milliseconds since the epoch."""
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def _wait_callback(relay: "Relay", callback_id: str, state: str, pushes: int) -> dict:
    last: list = [None]

    def reached():
        last[0] = relay.call("GET", f"/v1/callbacks/{callback_id}", 200, token=relay.api_key)
        return last[0] if last[0]["state"] == state and last[0]["pushes"] == pushes else None

    return eventually(reached, DELIVERY_TIMEOUT, 0.05, lambda: f"callback {callback_id} {state} (still {last[0]})")


QUOTA_APP = "com.example.openapi-quota"


def exercise_keys_and_quotas(relay: "Relay", herald: Path, credential: str) -> None:
    """`GET /v1/audit`, and the 429 of the three routes that count messages against a quota, with
    a key of an app whose quota is one message (the relay's configuration)."""
    key = relay.api_key
    relay.call("PUT", f"/v1/apps/{QUOTA_APP}", 200, {"team_id": relay.default_team()}, key)
    made = subprocess.run(
        [str(herald), "keys", "api", "create", "--name", "openapi", "--app", QUOTA_APP, "--scopes", "send,read",
         "--json", "--data", str(relay.workdir / "data")],
        capture_output=True, text=True, timeout=60, cwd=relay.workdir,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    token = json.loads(made.stdout)["token"]
    # The node reads the stored keys every 2 s.
    eventually(lambda: relay._send("GET", relay.url + "/v1/audit", token=token).status == 200, 10,
               what="the new key taken")  # fmt: skip

    audit = relay.call("GET", "/v1/audit", 200, token=token)
    assert audit["entries"] and all(entry.get("app") == QUOTA_APP for entry in audit["entries"]), audit
    page = relay.call("GET", "/v1/audit?limit=1", 200, token=key)
    assert len(page["entries"]) == 1 and page["next"] == page["entries"][0]["id"], page
    relay.call("GET", "/v1/audit?limit=0", 400, token=key, field_name="limit")
    relay.call("GET", "/v1/audit", 401)
    relay.call("GET", "/v1/audit", 403, token=credential)

    # The quota's one message (refused: nobody has a device), then 429 on every counting route.
    message = {"to": unique("quota-user"), "from": {"id": "a", "name": "A"}, "conversation": "c", "text": "t"}
    relay.call("POST", "/v1/messages", 409, message, token)
    refusal = relay.call("POST", "/v1/messages", 429, message, token)
    assert refusal["error"] == "too_many_requests" and QUOTA_APP in refusal["reason"], refusal
    broadcast = {**message, "to": [unique("quota-user")]}
    relay.call("POST", "/v1/broadcasts", 429, broadcast, token)
    callback = {"user_id": unique("quota-user"), "service_id": "svc", "idempotency_key": unique("cb")}
    relay.call("POST", "/v1/callbacks", 429, callback, token)


def exercise_callbacks(relay: "Relay", spec: Spec) -> None:
    """Every documented answer of the three callback routes, and the push they make."""
    key = relay.api_key
    phone = relay.new_sandbox_device()
    user = unique("cb-user")
    activation, device_key = relay.activate(user, messaging_token=phone["messaging_token"])
    credential = activation["device_credential"]
    outsider, _ = relay.activate(unique("cb-outsider"))
    dialog = {
        "title": "Agent is available right now",
        "text": "Are you ready?",
        "actions": [
            {"id": "ready", "label": "Yes, I'm ready to talk", "kind": "connect"},
            {"id": "snooze", "label": "No, try again in 5 minutes", "kind": "snooze", "delay_seconds": 300},
            {"id": "cancel", "label": "Cancel, my problem has been solved", "kind": "cancel"},
        ],
    }
    service = "3SQI3S31693JL9L3R00506T40C000U73"
    body = {"user_id": user, "service_id": service, "dialog": dialog, "idempotency_key": unique("cb")}
    made = relay.call("POST", "/v1/callbacks", 201, body, key)
    assert made["state"] == "scheduled" and made["app"] == DEFAULT_APP and "duplicate" not in made
    again = relay.call("POST", "/v1/callbacks", 200, body, key)
    assert again["callback_id"] == made["callback_id"] and again["duplicate"] is True
    callback_id = made["callback_id"]
    pushed = _wait_callback(relay, callback_id, "pushed", 1)
    assert [e["event"] for e in pushed["history"]] == ["scheduled", "pushed"]

    # The push: a priority-10 alert with the callback category; the dialog only in the envelope.
    records = eventually(lambda: [r for r in relay.inspection(phone["messaging_token"]) if r["status"] == 200],
                         DELIVERY_TIMEOUT, 0.05, "the callback push at the sandbox")  # fmt: skip
    (record,) = records
    assert (record["topic"], record["push_type"], record["priority"]) == (DEFAULT_APP, "alert", "10")
    payload = json.loads(record["payload"])
    problems = _errors(spec.schema("ApnsCallbackPayload"), payload)
    assert not problems, f"{payload!r} does not match ApnsCallbackPayload: {problems}"
    assert service not in record["payload"] and "ready to talk" not in record["payload"]
    herald = payload["herald"]
    assert (herald["callback_id"], herald["push"]) == (callback_id, 1)
    data = base64.urlsafe_b64decode(herald["sealed"] + "=" * (-len(herald["sealed"]) % 4))
    ad_fields = b"".join(struct.pack(">H", len(v.encode())) + v.encode() for v in (callback_id, activation["device_id"]))
    ad = b"HRLD\x01" + data[1:9] + b"\x04" + ad_fields + struct.pack(">H", 1)
    plaintext = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        data[33:], ad, data[9:33], receive_key(device_key, activation)
    )
    assert plaintext[0] == 0x04 and service.encode() in plaintext and b"ready to talk" in plaintext
    # Replayed as a message or a call (docs/envelope.md section 5), it does not open.
    for kind in (b"\x01", b"\x02"):
        with pytest.raises(CryptoError):
            sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
                data[33:], b"HRLD\x01" + data[1:9] + kind + ad_fields, data[9:33], receive_key(device_key, activation)
            )

    base = f"/v1/callbacks/{callback_id}"
    assert relay.call("GET", base, 200, token=credential)["state"] == "pushed"
    relay.call("GET", base, 401)
    relay.call("GET", base, 403, token=outsider["device_credential"])
    relay.call("GET", "/v1/callbacks/no-such-callback", 404, token=key)
    relay.call("POST", base + "/actions/ready", 401)
    relay.call("POST", base + "/actions/ready", 403, token=key)
    relay.call("POST", base + "/actions/ready", 403, token=outsider["device_credential"])
    relay.call("POST", base + "/actions/dance", 400, token=credential, field_name="action")
    relay.call("POST", "/v1/callbacks/no-such-callback/actions/ready", 404, token=credential)
    snoozed = relay.call("POST", base + "/actions/snooze", 200, token=credential)
    assert snoozed["state"] == "scheduled" and snoozed["kind"] == "snooze" and snoozed["next_push_at"]
    assert snoozed["next_push_at_ms"] == _milliseconds(snoozed["next_push_at"]), snoozed
    relay.call("POST", base + "/actions/ready", 409, token=credential)  # not waiting: snoozed
    # A second callback, its times in milliseconds (a JSON integer), answered ready, then again.
    now = int(time.time() * 1000)
    timed = {"user_id": user, "service_id": service, "at": now, "expires": now + 3_600_000}
    second = relay.call("POST", "/v1/callbacks", 201, timed, key)
    assert second["next_push_at_ms"] == now and second["expires_at"] == now + 3_600_000, second
    assert _milliseconds(second["next_push_at"]) == now and _milliseconds(second["expires"]) == now + 3_600_000
    assert all(_milliseconds(line["at"]) == line["at_ms"] for line in second["history"]), second
    _wait_callback(relay, second["callback_id"], "pushed", 1)
    ready = relay.call("POST", f"/v1/callbacks/{second['callback_id']}/actions/ready", 200, token=credential)
    assert ready["state"] == "connected" and "next_push_at" not in ready
    relay.call("POST", f"/v1/callbacks/{second['callback_id']}/actions/cancel", 409, token=credential)

    # Refusals of scheduling.
    relay.call("POST", "/v1/callbacks", 401, {"user_id": user, "service_id": service})
    relay.call("POST", "/v1/callbacks", 403, {"user_id": user, "service_id": service}, credential)
    relay.call("POST", "/v1/callbacks", 400, {"user_id": user}, key, field_name="service_id")
    relay.call("POST", "/v1/callbacks", 400, {**timed, "at": True}, key, field_name="at")
    relay.call("POST", "/v1/callbacks", 400, {**timed, "expires": 1.5}, key, field_name="expires")
    relay.call(
        "POST", "/v1/callbacks", 400, {"user_id": user, "service_id": service, "at": _rfc3339(-60)}, key,
        field_name="at", schema_rejects=False,
    )
    relay.call(
        "POST", "/v1/callbacks", 400,
        {"user_id": user, "service_id": service, "at": _rfc3339(120), "expires": _rfc3339(60)}, key,
        field_name="expires", schema_rejects=False,
    )
    twice = {**dialog, "actions": [dialog["actions"][0], {**dialog["actions"][2], "id": "ready"}]}
    relay.call(
        "POST", "/v1/callbacks", 400, {"user_id": user, "service_id": service, "dialog": twice}, key,
        field_name="dialog.actions[1].id", schema_rejects=False,
    )
    relay.call(
        "POST", "/v1/callbacks", 400, {"user_id": user, "service_id": service, "dialog": {**dialog, "actions": []}},
        key, field_name="dialog.actions",
    )
    huge = {**dialog, "text": "y" * 2048, "title": "t" * 256, "actions": [
        {"id": f"a{i}", "label": "l" * 256, "kind": "cancel"} for i in range(4)
    ]}  # fmt: skip
    relay.call(
        "POST", "/v1/callbacks", 400, {"user_id": user, "service_id": "s" * 256, "dialog": huge}, key,
        field_name="dialog", schema_rejects=False,
    )
    relay.call("POST", "/v1/callbacks", 413, token=key, raw=b"{" + b" " * (300 * 1024) + b"}")


# --- tests ---------------------------------------------------------------------------------------


def test_spec_is_valid_openapi_3_1(spec: Spec):
    validate_openapi(spec.document)
    assert spec.document["openapi"].startswith("3.1")
    schemes = spec.document["components"]["securitySchemes"]
    assert {name: (s["type"], s.get("scheme") or s.get("name")) for name, s in schemes.items()} == {
        "apiKey": ("http", "bearer"),
        "deviceCredential": ("http", "bearer"),
        "webhookSecret": ("http", "bearer"),
        "webhookSignature": ("apiKey", "x-herald-signature"),
    }
    expected = {
        ("/v1", "get"),
        ("/health", "get"),
        ("/health/live", "get"),
        ("/health/ready", "get"),
        ("/metrics", "get"),
        ("/v1/apps/{id}", "put"),
        ("/v1/apps", "get"),
        ("/v1/apps/{id}/web-push", "get"),
        ("/v1/activations", "post"),
        ("/v1/devices/{id}", "get"),
        ("/v1/devices/{id}/tokens", "put"),
        ("/v1/devices/{id}", "delete"),
        ("/v1/devices/{id}/presence", "put"),
        ("/v1/devices/{id}/notifications", "put"),
        ("/v1/devices/{id}/receipts", "post"),
        ("/v1/devices/{id}/live", "get"),
        ("/v1/messages", "post"),
        ("/v1/messages/{id}", "get"),
        ("/v1/calls", "post"),
        ("/v1/calls/{id}", "get"),
        ("/v1/calls/{id}/cancel", "post"),
        ("/v1/calls/{id}/ringing", "post"),
        ("/v1/calls/{id}/answer", "post"),
        ("/v1/calls/{id}/decline", "post"),
        ("/v1/pushes/{id}", "get"),
        ("/v1/pushes", "get"),
        ("/v1/users/{id}/devices", "get"),
        ("/v1/adapters/{name}", "post"),
        ("/v1/broadcasts", "post"),
        ("/v1/chats/{conversation}/events", "post"),
        ("/v1/chats/{conversation}/end", "post"),
        ("/v1/chats/{conversation}/transcript", "get"),
        ("/v1/devices/{id}/chats/{conversation}/disconnect", "post"),
        ("/v1/devices/{id}/chats/{conversation}/connect", "post"),
        ("/v1/webhooks/events", "get"),
        ("/v1/webhooks/events/{id}", "get"),
        ("/v1/callbacks", "post"),
        ("/v1/callbacks/{id}", "get"),
        ("/v1/callbacks/{id}/actions/{action}", "post"),
        ("/v1/audit", "get"),
    }
    assert set(spec.operations()) == expected
    for name in (
        "ApnsMessagePayload", "ApnsCallPayload", "FcmMessageData", "FcmCallData", "Error",
        "ApnsCallbackPayload", "FcmCallbackData", "ApnsMissedCallPayload", "FcmMissedCallData",
    ):  # fmt: skip
        assert name in spec.document["components"]["schemas"]


def _examples(node, pointer: str = ""):
    """(schema pointer, example) for every `example`/`examples` next to a schema in the spec."""
    if isinstance(node, dict):
        if "schema" in node and isinstance(node["schema"], dict):
            if "example" in node:
                yield pointer + "/schema", node["example"]
            for example in (node.get("examples") or {}).values():
                if isinstance(example, dict) and "value" in example:
                    yield pointer + "/schema", example["value"]
        if pointer.startswith("/components/schemas/") and pointer.count("/") == 3:
            if "example" in node:
                yield pointer, node["example"]
            for example in node.get("examples") or []:
                yield pointer, example
        for key, value in node.items():
            yield from _examples(value, f"{pointer}/{_escape(str(key))}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _examples(value, f"{pointer}/{index}")


def test_examples_match_their_schemas(spec: Spec):
    checked = 0
    for pointer, example in _examples(spec.document):
        if pointer.startswith("/paths/") and "/content/text~1plain" in pointer:
            continue
        problems = _errors(spec.validator(pointer), example)
        assert not problems, f"the example at {pointer} does not match its schema: {problems}"
        checked += 1
    assert checked >= 20


def test_every_route_matches_the_spec(relay: Relay, spec: Spec, herald: Path):
    relay.observed.clear()
    key = relay.api_key
    team = relay.default_team()

    # --- service ---
    index = relay.call("GET", "/v1", 200)
    assert index["health"] == "/health" and index["api"] == "/v1", "the banner's URL says what is there"
    health = relay.call("GET", "/health", 200)
    assert health["status"] == "ok"
    assert relay.call("GET", "/health/live", 200) == {"status": "live"}
    assert relay.call("GET", "/health/ready", 200) == {"status": "ready", "reasons": []}
    metrics = relay.call("GET", "/metrics", 200)
    text = metrics.decode("utf-8")
    assert "# TYPE herald_relay_activations_total counter" in text
    assert "# HELP herald_relay_activations_total " in text
    # Label values are quoted and may hold braces (route="/v1/pushes/{id}").
    sample = re.compile(r'^[A-Za-z_:][A-Za-z0-9_:]*(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? \S+$')
    for line in text.splitlines():
        assert line.startswith("#") or not line or sample.match(line), f"not Prometheus text: {line!r}"
    unmatched = relay._send("GET", relay.url + "/v1/no-such-route", token=key)
    assert unmatched.status == 404, "an unmatched route is 404"
    assert json.loads(unmatched.raw)["error"] == "not_found", "an unmatched route answers the usual JSON"

    # --- apps ---
    relay.call("GET", "/v1/apps", 401)
    relay.call("GET", "/v1/apps", 401, token="not-the-key")
    relay.call("GET", "/v1/apps", 200, authorization="bearer   " + key + " ")  # scheme case, blanks
    relay.call("GET", "/v1/apps", 401, authorization="Basic " + key)
    app_id = unique("com.example.openapi")
    made = relay.call("PUT", f"/v1/apps/{app_id}", 200, {"team_id": team}, key)
    assert made == {
        "id": app_id,
        "team_id": team,
        "content_policy": "full",
        "alert_title": "New message",
        "alert_body": "You have a new message",
        "message_ttl": 86400,
        "call_ttl": 30,
        "collapse_by_conversation": False,
        "presence_policy": "per_device",
        "message_priority": 5,
        "queue_order": "queue_time",
    }
    full = {
        "team_id": team,
        "content_policy": "sender_only",
        "alert_title": "Chat",
        "alert_body": "Open the app",
        "message_ttl": 3600,
        "call_ttl": 45,
        "collapse_by_conversation": True,
        "presence_policy": "per_user",
        "message_priority": 10,
        "queue_order": "customer_wait",
    }
    assert relay.call("PUT", f"/v1/apps/{app_id}", 200, full, key) == {"id": app_id} | full
    # A key the request does not have is refused, named (the spec: additionalProperties: false).
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "unknown_key": 1}, key, field_name="unknown_key")
    replaced = relay.call("PUT", f"/v1/apps/{app_id}", 200, {"team_id": team}, key)
    # A browser's application server key: the sandbox mode's development VAPID key serves every app.
    relay.call("GET", f"/v1/apps/{app_id}/web-push", 401)
    web = relay.call("GET", f"/v1/apps/{app_id}/web-push", 200, token=key)
    assert web["app"] == app_id and web["vapid_key"] == "default" and len(web["application_server_key"]) == 87
    relay.call("GET", "/v1/apps/com.example.no-such-app/web-push", 404, token=key)
    assert replaced["content_policy"] == "full" and replaced["message_ttl"] == 86400, "PUT replaces the whole app"
    listed = relay.call("GET", "/v1/apps", 200, token=key)["apps"]
    assert [a["id"] for a in listed] == sorted(a["id"] for a in listed)
    assert any(a["id"] == app_id for a in listed)

    relay.call("PUT", f"/v1/apps/{app_id}", 401, {"team_id": team})
    relay.call("PUT", "/v1/apps/bad_id!", 400, {"team_id": team}, key, field_name="id", schema_rejects=False)
    assert _errors(spec.schema("BundleID"), "bad_id!"), "the path parameter's schema refuses it"
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {}, key, field_name="team_id")
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "collapse_by_conversation": "yes"}, key,
        field_name="collapse_by_conversation",
    )
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": 5}, key, field_name="team_id")
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "presence_policy": "per_team"}, key,
        field_name="presence_policy",
    )
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "message_priority": 1}, key, field_name="message_priority"
    )
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "queue_order": "fifo"}, key, field_name="queue_order"
    )
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": ""}, key, field_name="team_id")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": "T" * 257}, key, field_name="team_id")
    # 129 two-byte characters: 258 bytes, over the limit in bytes, not in characters.
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": "é" * 129}, key, field_name="team_id", schema_rejects=False
    )
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": "T\u0007"}, key, field_name="team_id")
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "content_policy": "most"}, key, field_name="content_policy"
    )
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "call_ttl": 0}, key, field_name="call_ttl")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "call_ttl": 3601}, key, field_name="call_ttl")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "message_ttl": -1}, key, field_name="message_ttl")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "message_ttl": 0}, key, field_name="message_ttl")
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "message_ttl": 2**63 - 1}, key, field_name="message_ttl"
    )
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "alert_title": ""}, key, field_name="alert_title")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "alert_body": "a\nb"}, key, field_name="alert_body")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, raw=b"", token=key, field_name="body")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, raw=b"{not json", token=key, field_name="body")
    relay.call("PUT", f"/v1/apps/{app_id}", 400, [1], key, field_name="body")
    relay.call("PUT", f"/v1/apps/{app_id}", 413, raw=b" " * (MAX_BODY + 1), token=key, field_name="body")

    # --- activation ---
    user = unique("user")
    phone = relay.new_sandbox_device()
    activation, phone_key = relay.activate(
        user, messaging_token=phone["messaging_token"], voip_token=phone["voip_token"]
    )
    device_id, credential = activation["device_id"], activation["device_credential"]
    assert "previous_key_id" not in activation
    assert credential.startswith(device_id + ".")
    assert activation["content_policy"] == "full"
    assert activation["key_id"] == key_id(phone_key, activation), "key_id as docs/envelope.md section 2 defines it"

    droid = relay.new_sandbox_device(platform="android")
    android, _ = relay.activate(user, platform="android", messaging_token=droid["messaging_token"])
    bare, _ = relay.activate(user)  # an iPhone whose tokens have not arrived yet
    other_user = unique("user")
    stranger, _ = relay.activate(other_user, messaging_token=relay.new_sandbox_device()["messaging_token"])
    stranger_credential = stranger["device_credential"]

    public_key = b64(bytes(PrivateKey.generate().public_key))
    good = {"user_id": user, "app": DEFAULT_APP, "platform": "ios", "public_key": public_key}
    relay.call("POST", "/v1/activations", 401, good)
    relay.call("POST", "/v1/activations", 401, good, "not-a-secret")
    relay.call("POST", "/v1/activations", 403, good, credential)  # a device cannot make new devices
    relay.call(
        "POST",
        "/v1/activations",
        400,
        good | {"app": "com.example.unregistered"},
        key,
        field_name="app",
        schema_rejects=False,
    )
    relay.call("POST", "/v1/activations", 400, good | {"platform": "windows"}, key, field_name="platform")
    relay.call("POST", "/v1/activations", 400, good | {"public_key": "AAAA"}, key, field_name="public_key")
    relay.call(
        "POST",
        "/v1/activations",
        400,
        good | {"public_key": b64(bytes(32))},
        key,
        field_name="public_key",
        schema_rejects=False,
    )  # a low-order point: the agreement fails
    relay.call("POST", "/v1/activations", 400, good | {"messaging_token": "xyz"}, key, field_name="messaging_token")
    relay.call(
        "POST", "/v1/activations", 400, good | {"messaging_token": "fcm:" + "a" * 20}, key, field_name="messaging_token"
    )  # an FCM token on iOS
    relay.call(
        "POST",
        "/v1/activations",
        400,
        good | {"platform": "android", "voip_token": "ab" * 16},
        key,
        field_name="voip_token",
    )
    relay.call(
        "POST", "/v1/activations", 400, {k: v for k, v in good.items() if k != "user_id"}, key, field_name="user_id"
    )
    relay.call("POST", "/v1/activations", 400, good | {"user_id": "a\tb"}, key, field_name="user_id")
    # The credential is checked before the body is read: no body of an unknown caller is parsed.
    relay.call("POST", "/v1/activations", 401, {"user_id": user})
    relay.call("POST", "/v1/activations", 401, raw=b"[" * 60_000 + b"]" * 60_000)
    relay.call("POST", "/v1/activations", 413, raw=b" " * (MAX_BODY + 1), token=key, field_name="body")
    relay.call("POST", "/v1/activations", 404, good | {"device_id": str(uuid.uuid4())}, key)
    relay.call("POST", "/v1/activations", 401, good | {"device_id": device_id})
    relay.call("POST", "/v1/activations", 403, good | {"device_id": device_id}, stranger_credential)
    relay.call("POST", "/v1/activations", 403, good | {"device_id": device_id, "user_id": other_user}, credential)
    relay.call("POST", "/v1/activations", 403, good | {"device_id": device_id, "user_id": other_user}, key)

    # Re-activation by the device itself: new keys and credential, tokens kept, previous key id given.
    rotated_key = PrivateKey.generate()
    rotation = good | {"public_key": b64(bytes(rotated_key.public_key)), "device_id": device_id}
    rotated = relay.call("POST", "/v1/activations", 201, rotation, credential)
    assert rotated["device_id"] == device_id
    assert rotated["previous_key_id"] == activation["key_id"] != rotated["key_id"]
    relay.call("GET", f"/v1/devices/{device_id}", 401, token=credential)  # the old credential is gone
    credential = rotated["device_credential"]
    shown = relay.call("GET", f"/v1/devices/{device_id}", 200, token=credential)
    assert shown["messaging_token"] == phone["messaging_token"] and shown["voip_token"] == phone["voip_token"]
    assert shown["key_id"] == rotated["key_id"]
    assert rotated["key_id"] == key_id(rotated_key, rotated)
    # Re-activation by the backend, with the url-safe form of the key (the relay's half is new).
    url_safe = base64.urlsafe_b64encode(bytes(phone_key.public_key)).rstrip(b"=").decode()
    again = relay.call("POST", "/v1/activations", 201, rotation | {"public_key": url_safe}, key)
    assert again["previous_key_id"] == rotated["key_id"] and again["key_id"] == key_id(phone_key, again)
    relay.call("GET", f"/v1/devices/{device_id}", 401, token=credential)
    credential = again["device_credential"]

    # --- devices ---
    assert relay.call("GET", f"/v1/devices/{device_id}", 200, token=key) == shown | {"key_id": again["key_id"]}
    relay.call("GET", f"/v1/devices/{device_id}", 200, token=credential)
    relay.call("GET", f"/v1/devices/{device_id}", 401)
    relay.call("GET", f"/v1/devices/{device_id}", 401, token=device_id + ".forged")
    relay.call("GET", f"/v1/devices/{device_id}", 403, token=stranger_credential)
    relay.call("GET", f"/v1/apps/{app_id}/web-push", 403, token=stranger_credential)  # a device reads no app
    relay.call("GET", f"/v1/devices/{uuid.uuid4()}", 404, token=key)
    assert "messaging_token" not in relay.call("GET", f"/v1/devices/{bare['device_id']}", 200, token=key)

    tokens = f"/v1/devices/{device_id}/tokens"
    relay.call("PUT", tokens, 401, {"voip_token": phone["voip_token"]})
    relay.call("PUT", tokens, 403, {"voip_token": phone["voip_token"]}, stranger_credential)
    relay.call("PUT", f"/v1/devices/{uuid.uuid4()}/tokens", 404, {"voip_token": phone["voip_token"]}, key)
    relay.call("PUT", tokens, 400, {}, credential, field_name="messaging_token")
    relay.call("PUT", tokens, 400, {"messaging_token": None}, credential, field_name="messaging_token")
    relay.call("PUT", tokens, 400, {"voip_token": "xyz"}, credential, field_name="voip_token")
    relay.call("PUT", tokens, 400, {"voip_token": 7}, credential, field_name="voip_token")
    relay.call("PUT", tokens, 413, raw=b" " * (MAX_BODY + 1), token=credential, field_name="body")
    relay.call(
        "PUT",
        f"/v1/devices/{android['device_id']}/tokens",
        400,
        {"voip_token": "ab" * 32},
        android["device_credential"],
        field_name="voip_token",
        schema_rejects=False,
    )
    removed = relay.call("PUT", tokens, 200, {"messaging_token": ""}, credential)
    assert "messaging_token" not in removed and removed["voip_token"] == phone["voip_token"]
    restored = relay.call("PUT", tokens, 200, {"messaging_token": phone["messaging_token"].upper()}, key)
    assert restored["messaging_token"] == phone["messaging_token"].upper()
    relay.call("PUT", tokens, 200, {"messaging_token": phone["messaging_token"]}, credential)
    late = relay.new_sandbox_device()
    bare_tokens = f"/v1/devices/{bare['device_id']}/tokens"
    late_device = relay.call("PUT", bare_tokens, 200, {"voip_token": late["voip_token"]}, bare["device_credential"])
    assert late_device["voip_token"] == late["voip_token"] and "messaging_token" not in late_device

    # --- presence ---
    presence = f"/v1/devices/{device_id}/presence"
    conversation = unique("conv")
    before = int(time.time() * 1000)
    beat = relay.call("PUT", presence, 200, {"state": "active", "conversation": conversation, "ttl": 120}, credential)
    assert beat["device_id"] == device_id and beat["conversation"] == conversation
    assert before + 119_000 <= beat["expires_at"] <= int(time.time() * 1000) + 121_000
    relay.call("PUT", presence, 401, {"state": "active"})
    relay.call("PUT", presence, 403, {"state": "active"}, key)
    relay.call("PUT", presence, 403, {"state": "active"}, stranger_credential)
    relay.call("PUT", presence, 400, {"state": "asleep"}, credential, field_name="state")
    relay.call("PUT", presence, 400, {}, credential, field_name="state")
    relay.call("PUT", presence, 400, {"state": "active", "ttl": 0}, credential, field_name="ttl")
    relay.call("PUT", presence, 400, {"state": "active", "ttl": 3601}, credential, field_name="ttl")
    relay.call("PUT", presence, 400, {"state": "active", "ttl": "60"}, credential, field_name="ttl")
    relay.call("PUT", presence, 400, {"state": "active", "conversation": ""}, credential, field_name="conversation")
    relay.call("PUT", presence, 413, raw=b" " * (MAX_BODY + 1), token=credential, field_name="body")

    # --- messages ---
    sender = {"id": unique("agent"), "name": "Ada Lovelace"}
    message = {
        "to": user,
        "from": sender,
        "conversation": conversation,
        "text": "Hello\nworld 👋🏽",
        "idempotency_key": unique("idem"),
    }
    first = relay.call("POST", "/v1/messages", 202, message, key)
    assert first["duplicate"] is False
    skipped = {s["device_id"]: s["reason"] for s in first["skipped"]}
    assert skipped == {device_id: "active_in_conversation", bare["device_id"]: "no_token"}, first
    assert [p["device_id"] for p in first["pushes"]] == [android["device_id"]]
    repeat = relay.call("POST", "/v1/messages", 202, message | {"text": "something else"}, key)
    assert repeat == first | {"duplicate": True}

    elsewhere = relay.call(
        "POST", "/v1/messages", 202, message | {"conversation": unique("conv"), "idempotency_key": unique("idem")}, key
    )
    assert sorted(p["device_id"] for p in elsewhere["pushes"]) == sorted([device_id, android["device_id"]])
    relay.call("PUT", presence, 200, {"state": "background"}, credential)
    sent = relay.call("POST", "/v1/messages", 202, {k: v for k, v in message.items() if k != "idempotency_key"}, key)
    assert sent["duplicate"] is False
    assert sorted(p["device_id"] for p in sent["pushes"]) == sorted([device_id, android["device_id"]])
    push_id = next(p["push_id"] for p in sent["pushes"] if p["device_id"] == device_id)
    nobody_user = unique("nobody")
    to_nobody = message | {"to": nobody_user, "idempotency_key": unique("idem")}
    refused = relay.call("POST", "/v1/messages", 409, to_nobody, key)
    assert (refused["error"], refused["user"]) == ("no_devices", nobody_user)
    relay.activate(nobody_user, messaging_token=relay.new_sandbox_device()["messaging_token"])
    retried = relay.call("POST", "/v1/messages", 202, to_nobody, key)
    assert retried["duplicate"] is False and retried["status"] == "accepted" and len(retried["pushes"]) == 1, (
        "a refused message's idempotency key is not used: the retry after the activation is pushed"
    )

    plain = {k: v for k, v in message.items() if k != "idempotency_key"}
    relay.call("POST", "/v1/messages", 401, plain)
    relay.call("POST", "/v1/messages", 403, plain, credential)
    relay.call("POST", "/v1/messages", 400, plain | {"text": ""}, key, field_name="text")
    relay.call("POST", "/v1/messages", 400, plain | {"text": "x" * 65537}, key, field_name="text")
    relay.call("POST", "/v1/messages", 400, plain | {"to": ""}, key, field_name="to")
    relay.call("POST", "/v1/messages", 400, plain | {"from": {"id": "a"}}, key, field_name="from.name")
    relay.call(
        "POST", "/v1/messages", 400, plain | {"from": {"id": "a", "name": "A\u0000"}}, key, field_name="from.name"
    )
    relay.call("POST", "/v1/messages", 400, plain | {"from": "Ada"}, key, field_name="from")
    relay.call("POST", "/v1/messages", 400, plain | {"conversation": "c\u009f"}, key, field_name="conversation")
    relay.call("POST", "/v1/messages", 400, plain | {"idempotency_key": ""}, key, field_name="idempotency_key")
    relay.call("POST", "/v1/messages", 413, plain | {"text": "x" * (MAX_BODY + 1)}, key, field_name="body")
    # Push options (docs/relay.md, "Push options").
    options = {
        "priority": 10,
        "expiration": 0,
        "badge": 2,
        "category": "chat.newagentmessage",
        "public_data": {"deep_link": "app://chat/1"},
        "title": "Refund update",
        "data": {"order": "1001"},
    }
    with_options = relay.call("POST", "/v1/messages", 202, plain | options, key)
    assert with_options["pushes"], with_options
    relay.call("POST", "/v1/messages", 202, plain | {"priority": 5, "expiration": 600, "badge": 0}, key)
    for field_name, bad in [
        ("priority", 1),
        ("priority", 7),
        ("expiration", -1),
        ("expiration", 2419201),
        ("badge", -1),
        ("category", ""),
        ("title", ""),
        ("data", {"": "x"}),
    ]:
        relay.call("POST", "/v1/messages", 400, plain | {field_name: bad}, key, field_name=field_name)
    for reserved in ["aps", "herald", "sealed", "google.x"]:
        relay.call("POST", "/v1/messages", 400, plain | {"public_data": {reserved: "x"}}, key, field_name="public_data")
    # Data that leaves no room for the message: the schema cannot count the budget.
    relay.call(
        "POST",
        "/v1/messages",
        400,
        plain | {"public_data": {"a": "x" * 4000}},
        key,
        field_name="public_data",
        schema_rejects=False,
    )
    relay.call(
        "POST",
        "/v1/messages",
        400,
        plain | {"data": {"a": "x" * 4000}},
        key,
        field_name="data",
        schema_rejects=False,
    )

    fetched = relay.call("GET", f"/v1/messages/{sent['id']}", 200, token=credential)
    assert fetched == {
        "message_id": sent["id"],
        "conversation": conversation,
        "from": sender,
        "text": message["text"],
        "sent_at": fetched["sent_at"],
    }
    relay.call("GET", f"/v1/messages/{sent['id']}", 200, token=android["device_credential"])  # same user
    relay.call("GET", f"/v1/messages/{sent['id']}", 404, token=stranger_credential)  # not the recipient
    relay.call("GET", f"/v1/messages/{uuid.uuid4()}", 404, token=credential)
    relay.call("GET", f"/v1/messages/{sent['id']}", 403, token=key)
    relay.call("GET", f"/v1/messages/{sent['id']}", 401)

    # --- pushes ---
    status = relay.wait_final(push_id)
    assert (status["state"], status["kind"], status["priority"], status["device_id"]) == (
        "delivered",
        "message",
        5,
        device_id,
    )
    assert status["apns_id"] == push_id and status["attempts"] == 1
    assert [event["state"] for event in status["history"]] == ["queued", "delivered"]
    relay.call("GET", f"/v1/pushes/{push_id}", 401)
    relay.call("GET", f"/v1/pushes/{push_id}", 403, token=credential)
    relay.call("GET", f"/v1/pushes/{uuid.uuid4()}", 404, token=key)

    # --- lists: a user's devices, recent pushes ---
    devices = relay.call("GET", f"/v1/users/{urllib.parse.quote(user)}/devices", 200, token=key)
    assert device_id in [d["device_id"] for d in devices["devices"]]
    for secret in (phone["messaging_token"], phone["voip_token"], droid["messaging_token"], credential):
        assert secret not in json.dumps(devices), "no token or credential in the device list"
    empty = relay.call("GET", f"/v1/users/{unique('nobody')}/devices", 200, token=key)
    assert empty["devices"] == [], "a user without devices lists none"
    relay.call("GET", f"/v1/users/{user}/devices", 401)
    relay.call("GET", f"/v1/users/{user}/devices", 403, token=credential)
    relay.call("GET", f"/v1/users/{user}/devices?limit=1", 400, token=key, field_name="limit")
    listed = relay.call("GET", f"/v1/pushes?user={urllib.parse.quote(user)}&state=delivered", 200, token=key)
    item = next(p for p in listed["pushes"] if p["push_id"] == push_id)
    assert (item["state"], item["network"], item["kind"], item["device_id"]) == ("delivered", "apns", "message", device_id)
    assert "text" not in item and "from" not in item
    first = relay.call("GET", f"/v1/pushes?device={device_id}&limit=1", 200, token=key)
    assert len(first["pushes"]) == 1
    if "next" in first:
        second = relay.call(
            "GET", f"/v1/pushes?device={device_id}&limit=1&cursor={urllib.parse.quote(first['next'])}", 200, token=key
        )
        assert [p["push_id"] for p in second["pushes"]] != [p["push_id"] for p in first["pushes"]]
    relay.call("GET", "/v1/pushes?since=2026-11-25T00:00:00Z&limit=500", 200, token=key)
    relay.call("GET", "/v1/pushes", 401)
    relay.call("GET", "/v1/pushes", 403, token=credential)
    relay.call("GET", "/v1/pushes?state=in_flight", 400, token=key, field_name="state")
    relay.call("GET", "/v1/pushes?limit=501", 400, token=key, field_name="limit")
    relay.call("GET", "/v1/pushes?since=yesterday", 400, token=key, field_name="since")
    relay.call("GET", "/v1/pushes?cursor=garbage", 400, token=key, field_name="cursor")
    relay.call("GET", "/v1/pushes?users=alice", 400, token=key, field_name="users")

    # --- calls ---
    call = {"to": user, "from": sender, "call_id": unique("call"), "media": "video"}
    rang = relay.call("POST", "/v1/calls", 202, call, key)
    assert rang["id"] == call["call_id"] and rang["duplicate"] is False
    assert sorted(p["device_id"] for p in rang["pushes"]) == sorted([device_id, bare["device_id"], android["device_id"]])
    assert rang["skipped"] == []
    assert relay.call("POST", "/v1/calls", 202, call | {"media": "audio"}, key) == rang | {"duplicate": True}
    for push in rang["pushes"]:
        done = relay.wait_final(push["push_id"])
        assert (done["state"], done["kind"], done["priority"]) == ("delivered", "call", 10)
    relay.call("PUT", bare_tokens, 200, {"voip_token": ""}, key)
    audio = relay.call(
        "POST", "/v1/calls", 202, {k: v for k, v in call.items() if k != "media"} | {"call_id": unique("call")}, key
    )
    assert {"device_id": bare["device_id"], "reason": "no_voip_token"} in audio["skipped"]
    relay.call("POST", "/v1/calls", 401, call)
    relay.call("POST", "/v1/calls", 403, call, credential)
    relay.call("POST", "/v1/calls", 400, call | {"media": "hologram"}, key, field_name="media")
    relay.call("POST", "/v1/calls", 400, {k: v for k, v in call.items() if k != "call_id"}, key, field_name="call_id")
    relay.call("POST", "/v1/calls", 400, call | {"call_id": ""}, key, field_name="call_id")
    relay.call("POST", "/v1/calls", 400, call | {"from": {"id": "", "name": "Ada"}}, key, field_name="from.id")
    relay.call("POST", "/v1/calls", 413, raw=b" " * (MAX_BODY + 1), token=key, field_name="body")
    relay.call("POST", "/v1/calls", 400, call | {"call_id": unique("call"), "ttl": 0}, key, field_name="ttl")

    # --- a call's life: ringing, answered, cancelled, declined ---
    live_call = relay.call("POST", "/v1/calls", 202, call | {"call_id": unique("call"), "ttl": 60}, key)["id"]
    ringing = relay.call("GET", f"/v1/calls/{live_call}", 200, token=key)
    assert ringing["state"] == "ringing" and ringing["user_id"] == user and "Ada" not in json.dumps(ringing)
    assert ringing["expires_at"] - ringing["created_at"] == 60_000
    rang_here = relay.call("POST", f"/v1/calls/{live_call}/ringing", 200, token=credential)
    assert next(d for d in rang_here["devices"] if d["device_id"] == device_id)["report"] == "ringing"
    assert rang_here["ringing_at"] is not None
    answered = relay.call("POST", f"/v1/calls/{live_call}/answer", 200, token=credential)
    assert answered["state"] == "answered" and answered["answered_by"] == device_id
    relay.call("POST", f"/v1/calls/{live_call}/answer", 409, token=bare["device_credential"])
    relay.call("POST", f"/v1/calls/{live_call}/decline", 409, token=bare["device_credential"])
    relay.call("POST", f"/v1/calls/{live_call}/cancel", 409, token=key)
    assert relay.call("GET", f"/v1/calls/{live_call}", 200, token=credential)["state"] == "answered"
    relay.call("GET", f"/v1/calls/{live_call}", 401)
    relay.call("GET", "/v1/calls/no-such-call", 404, token=key)
    relay.call("GET", "/v1/calls/" + "x" * 2000, 400, token=key, field_name="call_id")  # too long
    for action in ("ringing", "answer", "decline"):
        relay.call("POST", f"/v1/calls/{live_call}/{action}", 404, token=stranger_credential)  # another user's
        relay.call("POST", f"/v1/calls/{live_call}/{action}", 401)
        relay.call("POST", f"/v1/calls/{live_call}/{action}", 403, token=key)
    hung_up = relay.call("POST", "/v1/calls", 202, call | {"call_id": unique("call")}, key)["id"]
    relay.call("POST", f"/v1/calls/{hung_up}/cancel", 401)
    relay.call("POST", f"/v1/calls/{hung_up}/cancel", 403, token=credential)
    relay.call("POST", "/v1/calls/no-such-call/cancel", 404, token=key)
    cancelled = relay.call("POST", f"/v1/calls/{hung_up}/cancel", 200, token=key)
    assert (cancelled["state"], cancelled["reason"]) == ("cancelled", "remote_ended")
    late = relay.call("POST", f"/v1/calls/{hung_up}/ringing", 200, token=credential)
    assert late["state"] == "cancelled"
    for action in ("ringing", "answer", "decline"):
        relay.call("POST", f"/v1/calls/no-such-call/{action}", 404, token=credential)
    declined_call = relay.call("POST", "/v1/calls", 202, call | {"call_id": unique("call")}, key)["id"]
    declined = relay.call("POST", f"/v1/calls/{declined_call}/decline", 200, token=bare["device_credential"])
    assert declined["state"] == "declined" and declined["declined_by"] == bare["device_id"]

    # --- the live channel (a WebSocket upgrade) ---
    live = f"/v1/devices/{android['device_id']}/live"
    relay.upgrade(live, 101, authorization="Bearer " + android["device_credential"])
    relay.upgrade(f"{live}?credential={android['device_credential']}", 101)
    relay.upgrade(live, 401)
    relay.upgrade(live, 401, authorization="Bearer " + android["device_id"] + ".forged")
    relay.upgrade(live, 403, authorization="Bearer " + stranger_credential)
    relay.upgrade(live, 403, authorization="Bearer " + key)
    # The device's credential without the upgrade headers: 426, naming the protocol.
    plain = relay.call("GET", live, 426, token=android["device_credential"])
    assert plain["error"] == "upgrade_required", plain

    # --- deactivation ---
    relay.call("DELETE", f"/v1/devices/{android['device_id']}", 401)
    relay.call("DELETE", f"/v1/devices/{android['device_id']}", 403, token=stranger_credential)
    relay.call("DELETE", f"/v1/devices/{android['device_id']}", 204, token=android["device_credential"])
    relay.call("DELETE", f"/v1/devices/{android['device_id']}", 401, token=android["device_credential"])
    relay.upgrade(f"{live}?credential={android['device_credential']}", 401)  # revoked
    relay.call("DELETE", f"/v1/devices/{android['device_id']}", 404, token=key)
    relay.call("DELETE", f"/v1/devices/{bare['device_id']}", 204, token=key)
    relay.call("GET", f"/v1/devices/{bare['device_id']}", 404, token=key)
    # Another app's forbidden operations, with a device credential.
    relay.call("GET", "/v1/apps", 403, token=credential)
    relay.call("PUT", f"/v1/apps/{app_id}", 403, {"team_id": team}, credential)
    relay.call("GET", "/health", 200)

    # Broadcasts.
    party = {"id": "quiz-host", "name": "Quiz"}
    members = relay.call(
        "POST",
        "/v1/broadcasts",
        202,
        {"to": ["quiz-a", "quiz-b", "quiz-a"], "from": party, "conversation": "quiz-1", "text": "Go!"},
        key,
    )
    assert [member["user"] for member in members["members"]] == ["quiz-a", "quiz-b"]
    relay.call(
        "POST",
        "/v1/broadcasts",
        202,
        {"to": ["quiz-a"], "from": party, "conversation": "quiz-2", "text": "Go!", "priority": 10, "badge": 1,
         "category": "quiz.start", "public_data": {"round": "2"}, "title": "Quiz", "data": {"q": "1"}},
        key,
    )
    relay.call(
        "POST", "/v1/broadcasts", 400, {"to": ["a"], "from": party, "conversation": "q", "text": "x", "priority": 1},
        key, field_name="priority",
    )
    relay.call("POST", "/v1/broadcasts", 400, {"to": [], "from": party, "conversation": "q", "text": "x"}, key, field_name="to")
    relay.call("POST", "/v1/broadcasts", 401, {"to": ["a"], "from": party, "conversation": "q", "text": "x"})
    relay.call("POST", "/v1/broadcasts", 403, {"to": ["a"], "from": party, "conversation": "q", "text": "x"}, credential)
    relay.call("POST", "/v1/broadcasts", 413, raw=b"{" + b" " * (300 * 1024) + b"}", token=key)

    # Chats (seed 001): transcript events, disconnect, resync, connect.
    chat_phone, _ = relay.activate("chat-customer")
    chat_device, chat_credential = chat_phone["device_id"], chat_phone["device_credential"]
    outsider, _ = relay.activate("chat-outsider")
    agent = {"id": "agent-7", "name": "Ada"}
    events = "/v1/chats/chat-openapi/events"
    first = relay.call("POST", events, 202, {"to": "chat-customer", "type": "Message.Text", "from": agent, "text": "Hi"}, key)
    assert first["position"] == 1 and first["filtered"] is False
    disconnect = f"/v1/devices/{chat_device}/chats/chat-openapi/disconnect"
    relay.call("POST", disconnect, 200, {"transcript_position": 1}, chat_credential)
    relay.call("POST", disconnect, 400, {"transcript_position": -1}, chat_credential, field_name="transcript_position")
    relay.call("POST", disconnect, 401, {"transcript_position": 1})
    relay.call("POST", disconnect, 403, {"transcript_position": 1}, outsider["device_credential"])
    second = relay.call("POST", events, 202, {"to": "chat-customer", "type": "Message.Text", "from": agent, "text": "Back?"}, key)
    assert second["scheduled"] == [chat_device], "the first push after a disconnect waits for the delay"
    typing = relay.call("POST", events, 202, {"to": "chat-customer", "type": "Notice.TypingStarted", "from": agent}, key)
    assert typing["filtered"] is True
    relay.call("POST", events, 400, {"to": "chat-customer", "type": "Message.Text", "from": agent}, key, field_name="text")
    relay.call("POST", events, 401, {"to": "chat-customer", "type": "Message.Text", "from": agent, "text": "x"})
    relay.call("POST", events, 403, {"to": "chat-customer", "type": "Message.Text", "from": agent, "text": "x"}, chat_credential)
    relay.call("POST", events, 413, raw=b"{" + b" " * (300 * 1024) + b"}", token=key)
    transcript = "/v1/chats/chat-openapi/transcript"
    missed = relay.call("GET", transcript + "?after=1", 200, token=chat_credential)
    assert [event["text"] for event in missed["events"]] == ["Back?", ""]
    relay.call("GET", transcript + "?after=x", 400, token=chat_credential, field_name="after")
    relay.call("GET", transcript, 401)
    relay.call("GET", transcript, 403, token=outsider["device_credential"])
    connect = f"/v1/devices/{chat_device}/chats/chat-openapi/connect"
    resync = relay.call("POST", connect, 200, token=chat_credential)
    assert [event["position"] for event in resync["events"]] == [2, 3]
    relay.call("POST", connect, 401)
    relay.call("POST", connect, 403, token=outsider["device_credential"])
    # The backend ends the chat: no more events, and a retried end answers the first.
    end = "/v1/chats/chat-openapi/end"
    ended = relay.call("POST", end, 200, token=key)
    assert ended["conversation"] == "chat-openapi" and ended["purge_at"] > ended["ended_at"]
    assert relay.call("POST", end, 200, token=key)["ended_at"] == ended["ended_at"]
    relay.call("POST", events, 409, {"to": "chat-customer", "type": "Message.Text", "from": agent, "text": "Late"}, key)
    relay.call("POST", end, 401)
    relay.call("POST", end, 403, token=chat_credential)
    relay.call("POST", "/v1/chats/no-such-chat/end", 404, token=key)
    relay.call("POST", "/v1/chats/" + "c" * 257 + "/end", 400, token=key, field_name="conversation")

    # Contact-center webhooks: the Genesys adapter is on (HERALD_GENESYS_SECRET), CXone is not.
    def signed(raw: bytes) -> str:
        return "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), raw, hashlib.sha256).hexdigest()

    def webhook(fixture: str, status: int, *, signature: str | None = None, field_name: str | None = None):
        """Posts a Genesys fixture, signed unless `signature` says otherwise ("" for no header)."""
        raw = (FIXTURES / fixture).read_bytes()
        headers = {"content-type": "application/json"}
        if signature != "":
            headers["x-herald-signature"] = signature or signed(raw)
        request = urllib.request.Request(relay.url + "/v1/adapters/genesys", data=raw, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as reply:
                answer = Response(reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply.read())
        except urllib.error.HTTPError as error:
            answer = Response(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())
        assert answer.status == status, f"webhook {fixture}: expected {status}, got {answer.status}: {answer.raw!r}"
        relay.check_answer("/v1/adapters/{name}", "post", answer)
        if field_name is not None:
            assert answer.json.get("field") == field_name, answer.raw
        return answer.json

    # The customer's user has no device yet: refused, naming the user; accepted once it activated.
    refused = webhook("genesys/agent-text.json", 409)
    assert refused["error"] == "no_devices"
    relay.activate(refused["user"], messaging_token=relay.new_sandbox_device()["messaging_token"])
    accepted = webhook("genesys/agent-text.json", 202)
    assert accepted["user"] == refused["user"]
    assert accepted["duplicate"] is False
    assert webhook("genesys/agent-text.json", 202)["duplicate"] is True, "a retried webhook is a duplicate"
    assert "inbound" in webhook("genesys/customer-inbound.json", 200)["ignored"]
    assert "bot" in webhook("genesys/bot-message.json", 200)["ignored"]
    webhook("genesys/malformed-no-body.json", 400, field_name="eventBody")
    webhook("genesys/agent-text.json", 401, signature="sha256=" + "0" * 64)
    webhook("genesys/agent-text.json", 401, signature="")
    relay.call("POST", "/v1/adapters/cxone", 404, raw=b"{}")
    relay.call("POST", "/v1/adapters/genesys", 413, raw=b"{" + b" " * (300 * 1024) + b"}")

    exercise_webhooks(relay, key, credential)
    exercise_keys_and_quotas(relay, herald, credential)
    exercise_callbacks(relay, spec)
    exercise_notification_permission(relay)
    # Imported here: test_receipts_pynacl imports this module's fixtures at its top.
    from test_receipts_pynacl import exercise_receipts

    exercise_receipts(relay)

    # Every documented status of every operation was seen, except failures of the relay itself.
    missing = [
        f"{method.upper()} {path} {status}"
        for path, method in spec.operations()
        for status in spec.lookup(spec.operation_pointer(path, method))["responses"]
        if status not in NOT_TRIGGERABLE and (path, method, status) not in relay.observed
    ]
    assert not missing, f"documented answers never exercised: {missing}"


def webhook_receiver_from_docs() -> dict:
    """Runs the Python receiver of docs/webhooks.md ("Verifying, in Python") as the docs give it."""
    text = (REPO / "docs" / "webhooks.md").read_text()
    section = text.split("## Verifying, in Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("\n```", 1)[0]
    namespace: dict = {"__name__": "webhook_receiver"}
    exec(compile(code, "docs/webhooks.md", "exec"), namespace)
    return namespace


def exercise_webhooks(relay: Relay, key: str, credential: str) -> None:
    """An app with a webhook (the docs' receiver, live): its events arrive signed and in order,
    and the webhook endpoints answer as the spec says."""
    import threading
    from http.server import ThreadingHTTPServer

    secret = "interop-webhook-secret-" + "x" * 16
    os.environ["HERALD_WEBHOOK_SECRET"] = secret
    receiver = webhook_receiver_from_docs()
    # The docs' receiver, unchanged, telling the test each request it has handled.
    handled = threading.Condition()

    class Signalling(receiver["Receiver"]):
        def do_POST(self):
            super().do_POST()
            with handled:
                handled.notify_all()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Signalling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        team = relay.default_team()
        app_id = unique("com.example.hooks")
        url = f"http://127.0.0.1:{server.server_address[1]}/events"
        base = {"team_id": team}
        relay.call("PUT", f"/v1/apps/{app_id}", 400, base | {"webhook": {"url": "ftp://x/y", "secret": secret}},
                   key, field_name="webhook.url")
        relay.call("PUT", f"/v1/apps/{app_id}", 400, base | {"webhook": {"url": url, "secret": "short"}},
                   key, field_name="webhook.secret", schema_rejects=True)
        made = relay.call("PUT", f"/v1/apps/{app_id}", 200, base | {"webhook": {"url": url, "secret": secret}}, key)
        assert made["webhook"] == {"url": url, "secret_set": True}
        listed = relay.call("GET", "/v1/apps", 200, token=key)
        assert secret not in json.dumps(listed), "the secret is never shown"

        activation, _ = relay.activate(unique("hook-user"), app=app_id)
        device, device_credential = activation["device_id"], activation["device_credential"]
        chat = unique("hook-chat")
        relay.call("POST", f"/v1/devices/{device}/chats/{chat}/disconnect", 200, {"transcript_position": 0},
                   device_credential)
        relay.call("POST", f"/v1/devices/{device}/chats/{chat}/connect", 200, token=device_credential)

        with handled:
            handled.wait_for(lambda: len(receiver["events"]) >= 2, timeout=DELIVERY_TIMEOUT)
        events = receiver["events"]
        assert [event["type"] for event in events] == ["chat.customer_offline", "chat.customer_back"], events
        assert all(event["app"] == app_id and event["data"]["conversation"] == chat for event in events)
        body_schema = relay.spec.document["webhooks"]["chat.customer_offline"]["post"]["requestBody"]
        assert body_schema, "the spec describes the event"

        path = "/v1/webhooks/events?app=" + app_id
        page = relay.call("GET", path, 200, token=key)
        assert [event["type"] for event in page["events"]] == ["chat.customer_offline", "chat.customer_back"]
        assert relay.call("GET", path + "&state=delivered&limit=1", 200, token=key)["next_cursor"]
        relay.call("GET", path + "&state=lost", 400, token=key, field_name="state")
        relay.call("GET", path + "&limit=0", 400, token=key, field_name="limit")
        relay.call("GET", "/v1/webhooks/events", 400, token=key, field_name="app")
        relay.call("GET", path, 401)
        relay.call("GET", path, 403, token=credential)
        one = relay.call("GET", "/v1/webhooks/events/" + page["events"][0]["id"], 200, token=key)
        assert one["state"] == "delivered" and one["attempts"] == 1 and "delivered_at" in one
        relay.call("GET", "/v1/webhooks/events/no-such-event", 404, token=key)
        relay.call("GET", "/v1/webhooks/events/no-such-event", 401)
        relay.call("GET", "/v1/webhooks/events/no-such-event", 403, token=credential)
    finally:
        server.shutdown()


def test_apns_payloads_match_the_spec(relay: Relay, spec: Spec):
    key = relay.api_key
    team = relay.default_team()
    long_text = "Ünïcödé " * 700  # well over the 4096-byte alert budget: cut in the push
    for policy in ("full", "sender_only", "none"):
        app_id = unique(f"com.example.policy-{policy.replace('_', '-')}")
        app = {"team_id": team, "content_policy": policy, "alert_title": "Herald", "alert_body": "Something new"}
        relay.call("PUT", f"/v1/apps/{app_id}", 200, app, key)
        phone = relay.new_sandbox_device(app_id)
        user = unique("user")
        activation, device_key = relay.activate(
            user, app=app_id, messaging_token=phone["messaging_token"], voip_token=phone["voip_token"]
        )
        assert activation["content_policy"] == policy
        sender = {"id": unique("agent"), "name": "Grace Hopper"}
        for text in ("Meet at 10?", long_text):
            conversation = unique("conv")
            body = {"to": user, "from": sender, "conversation": conversation, "text": text}
            receipt = relay.call("POST", "/v1/messages", 202, body, key)
            (push,) = receipt["pushes"]
            assert relay.wait_final(push["push_id"])["state"] == "delivered"
            (record,) = [r for r in relay.inspection(phone["messaging_token"]) if r["apns_id"] == push["push_id"]]
            assert (record["topic"], record["push_type"], record["priority"]) == (app_id, "alert", "5")
            payload = json.loads(record["payload"])
            problems = _errors(spec.schema("ApnsMessagePayload"), payload)
            assert not problems, f"{policy}: {payload!r} does not match ApnsMessagePayload: {problems}"
            assert payload["aps"]["alert"] == {"title": "Herald", "body": "Something new"}, (
                "always the app's generic alert"
            )
            assert text[:8] not in record["payload"] and sender["name"] not in record["payload"]
            herald = payload["herald"]
            assert (herald["message_id"], herald["conversation_id"], herald["policy"]) == (
                receipt["id"],
                conversation,
                policy,
            )
            assert payload["aps"]["thread-id"] == conversation
            if policy == "none":
                assert "sealed" not in herald
            else:
                plaintext = open_envelope(
                    herald["sealed"],
                    receive_key(device_key, activation),
                    activation["key_id"],
                    0x01,
                    receipt["id"],
                    activation["device_id"],
                )
                opened = parse_plaintext(plaintext)
                assert (opened["type"], opened["sender_id"], opened["sender_name"]) == (
                    0x01,
                    sender["id"],
                    sender["name"],
                )
                if policy == "sender_only":
                    assert (opened["text"], opened["flags"] & 1) == ("", 0)
                elif text == long_text:
                    assert opened["flags"] & 1 == 1 and long_text.startswith(opened["text"]) and opened["text"]
                else:
                    assert (opened["text"], opened["flags"] & 1) == (text, 0)
            # Whatever the push carried, the whole message is there by id.
            fetched = relay.call("GET", f"/v1/messages/{receipt['id']}", 200, token=activation["device_credential"])
            assert fetched["text"] == text

        call = {"to": user, "from": sender, "call_id": unique("call"), "media": "video"}
        receipt = relay.call("POST", "/v1/calls", 202, call, key)
        (push,) = receipt["pushes"]
        assert relay.wait_final(push["push_id"])["state"] == "delivered"
        (record,) = [r for r in relay.inspection(phone["voip_token"]) if r["apns_id"] == push["push_id"]]
        assert (record["topic"], record["push_type"], record["priority"]) == (app_id + ".voip", "voip", "10")
        payload = json.loads(record["payload"])
        problems = _errors(spec.schema("ApnsCallPayload"), payload)
        assert not problems, f"{payload!r} does not match ApnsCallPayload: {problems}"
        assert payload["herald"]["call_id"] == call["call_id"]
        opened = parse_plaintext(
            open_envelope(
                payload["herald"]["sealed"],
                receive_key(device_key, activation),
                activation["key_id"],
                0x02,
                call["call_id"],
                activation["device_id"],
            )
        )
        assert (opened["type"], opened["flags"] & 1, opened["caller_id"], opened["caller_name"]) == (
            0x02,
            1,
            sender["id"],
            sender["name"],
        )


def test_missed_call_alert_matches_the_spec(relay: Relay, spec: Spec):
    """A call nobody answers within its ttl: missed, and a priority-5 alert sealed as kind 3."""
    key = relay.api_key
    app_id = unique("com.example.missed")
    relay.call("PUT", f"/v1/apps/{app_id}", 200, {"team_id": relay.default_team()}, key)
    phone = relay.new_sandbox_device(app_id)
    user = unique("user")
    activation, device_key = relay.activate(
        user, app=app_id, messaging_token=phone["messaging_token"], voip_token=phone["voip_token"]
    )
    sender = {"id": unique("agent"), "name": "Grace Hopper"}
    call_id = unique("call")
    relay.call("POST", "/v1/calls", 202, {"to": user, "from": sender, "call_id": call_id, "ttl": 1}, key)
    eventually(lambda: relay.call("GET", f"/v1/calls/{call_id}", 200, token=key)["state"] == "missed",
               DELIVERY_TIMEOUT, what="the call missed")  # fmt: skip
    records = eventually(lambda: [r for r in relay.inspection(phone["messaging_token"]) if r["status"] == 200],
                         DELIVERY_TIMEOUT, 0.05, "the missed-call alert")  # fmt: skip
    (record,) = records
    assert (record["topic"], record["push_type"], record["priority"]) == (app_id, "alert", "5")
    payload = json.loads(record["payload"])
    problems = _errors(spec.schema("ApnsMissedCallPayload"), payload)
    assert not problems, f"{payload!r} does not match ApnsMissedCallPayload: {problems}"
    assert sender["name"] not in record["payload"]
    assert payload["herald"]["call_id"] == call_id and payload["aps"]["thread-id"] == "call:" + call_id
    opened = parse_plaintext(
        open_envelope(
            payload["herald"]["sealed"],
            receive_key(device_key, activation),
            activation["key_id"],
            0x03,
            call_id,
            activation["device_id"],
        )
    )
    assert (opened["type"], opened["call_id"], opened["caller_id"], opened["caller_name"]) == (
        0x03,
        call_id,
        sender["id"],
        sender["name"],
    )
    listed = relay.call("GET", f"/v1/pushes?user={urllib.parse.quote(user)}", 200, token=key)["pushes"]
    assert sorted(p["kind"] for p in listed) == ["call", "missed_call"]


def test_android_missed_call_matches_the_spec(relay: Relay, spec: Spec):
    """On Android the missed-call alert is FCM data at NORMAL, sealed as kind 3."""
    key = relay.api_key
    phone = relay.new_sandbox_device(platform="android")
    user = unique("missed-android")
    activation, device_key = relay.activate(user, platform="android", messaging_token=phone["messaging_token"])
    sender = {"id": unique("agent"), "name": "Ada Lovelace"}
    call_id = unique("call")
    relay.call("POST", "/v1/calls", 202, {"to": user, "from": sender, "call_id": call_id, "ttl": 1}, key)
    records = eventually(
        lambda: [r for r in relay.fcm_inspection(phone["messaging_token"]) if r["data"]["kind"] == "missed_call"],
        DELIVERY_TIMEOUT, 0.05, "the missed-call alert",
    )  # fmt: skip
    (record,) = records
    assert record["priority"] == "NORMAL"
    data = record["data"]
    problems = _errors(spec.schema("FcmMissedCallData"), data)
    assert not problems, f"{data!r} does not match FcmMissedCallData: {problems}"
    assert sender["name"] not in json.dumps(record)
    opened = parse_plaintext(
        open_envelope(
            data["sealed"], receive_key(device_key, activation), activation["key_id"], 0x03, call_id, activation["device_id"]
        )
    )
    assert (opened["type"], opened["call_id"], opened["caller_name"]) == (0x03, call_id, sender["name"])
    assert relay.call("GET", f"/v1/calls/{call_id}", 200, token=key)["state"] == "missed"


def test_fcm_payloads_match_the_spec(relay: Relay, spec: Spec):
    key = relay.api_key
    team = relay.default_team()
    long_text = "Ünïcödé " * 700  # well over FCM's 4096 bytes of data: cut in the push
    for policy in ("full", "sender_only", "none"):
        app_id = unique(f"com.example.android-{policy.replace('_', '-')}")
        relay.call("PUT", f"/v1/apps/{app_id}", 200, {"team_id": team, "content_policy": policy}, key)
        phone = relay.new_sandbox_device(app_id, platform="android")
        assert phone.get("voip_token") is None
        user = unique("user")
        activation, device_key = relay.activate(
            user, app=app_id, platform="android", messaging_token=phone["messaging_token"]
        )
        sender = {"id": unique("agent"), "name": "Grace Hopper"}
        for text in ("Meet at 10?", long_text):
            conversation = unique("conv")
            body = {"to": user, "from": sender, "conversation": conversation, "text": text}
            receipt = relay.call("POST", "/v1/messages", 202, body, key)
            (push,) = receipt["pushes"]
            status = relay.wait_final(push["push_id"])
            assert (status["state"], status["priority"]) == ("delivered", 5)
            (record,) = [r for r in relay.fcm_inspection(phone["messaging_token"]) if r["data"]["message_id"] == receipt["id"]]
            assert record["priority"] == "HIGH"
            assert 86_000 <= int(record["ttl"].rstrip("s")) <= 86_400
            data = record["data"]
            assert sum(len(k.encode()) + len(v.encode()) for k, v in data.items()) <= 4096
            problems = _errors(spec.schema("FcmMessageData"), data)
            assert not problems, f"{policy}: {data!r} does not match FcmMessageData: {problems}"
            assert text[:8] not in json.dumps(data) and sender["name"] not in json.dumps(data)
            assert (data["conversation_id"], data["policy"]) == (conversation, policy)
            if policy == "none":
                assert "sealed" not in data
                continue
            opened = parse_plaintext(
                open_envelope(
                    data["sealed"],
                    receive_key(device_key, activation),
                    activation["key_id"],
                    0x01,
                    receipt["id"],
                    activation["device_id"],
                )
            )
            assert (opened["sender_id"], opened["sender_name"]) == (sender["id"], sender["name"])
            if policy == "sender_only":
                assert opened["text"] == ""
            elif text == long_text:
                assert opened["flags"] & 1 == 1 and long_text.startswith(opened["text"]) and opened["text"]
            else:
                assert (opened["text"], opened["flags"] & 1) == (text, 0)

        call = {"to": user, "from": sender, "call_id": unique("call"), "media": "audio"}
        receipt = relay.call("POST", "/v1/calls", 202, call, key)
        (push,) = receipt["pushes"]
        assert relay.wait_final(push["push_id"])["state"] == "delivered"
        (record,) = [r for r in relay.fcm_inspection(phone["messaging_token"]) if r["data"]["kind"] == "call"]
        assert record["priority"] == "HIGH" and 0 < int(record["ttl"].rstrip("s")) <= 30
        problems = _errors(spec.schema("FcmCallData"), record["data"])
        assert not problems, f"{record['data']!r} does not match FcmCallData: {problems}"
        opened = parse_plaintext(
            open_envelope(
                record["data"]["sealed"],
                receive_key(device_key, activation),
                activation["key_id"],
                0x02,
                call["call_id"],
                activation["device_id"],
            )
        )
        assert (opened["type"], opened["caller_id"], opened["caller_name"]) == (0x02, sender["id"], sender["name"])


def test_fcm_callback_payload_matches_the_spec(relay: Relay, spec: Spec):
    """A callback to an Android device: a HIGH data message with the dialog sealed (kind 0x04)."""
    key = relay.api_key
    phone = relay.new_sandbox_device(platform="android")
    user = unique("cb-android")
    activation, device_key = relay.activate(user, platform="android", messaging_token=phone["messaging_token"])
    made = relay.call("POST", "/v1/callbacks", 201, {"user_id": user, "service_id": "svc-android"}, key)
    _wait_callback(relay, made["callback_id"], "pushed", 1)
    records = eventually(
        lambda: [r for r in relay.fcm_inspection(phone["messaging_token"]) if r["data"]["kind"] == "callback"],
        DELIVERY_TIMEOUT, 0.05, "the callback push at the sandbox's FCM",
    )  # fmt: skip
    (record,) = records
    assert record["priority"] == "HIGH"
    data = record["data"]
    problems = _errors(spec.schema("FcmCallbackData"), data)
    assert not problems, f"{data!r} does not match FcmCallbackData: {problems}"
    assert (data["callback_id"], data["push"]) == (made["callback_id"], "1")
    assert "svc-android" not in json.dumps(data)
    sealed = base64.urlsafe_b64decode(data["sealed"] + "=" * (-len(data["sealed"]) % 4))
    fields = b"".join(struct.pack(">H", len(v.encode())) + v.encode() for v in (made["callback_id"], activation["device_id"]))
    plaintext = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        sealed[33:], b"HRLD\x01" + sealed[1:9] + b"\x04" + fields + struct.pack(">H", 1), sealed[9:33],
        receive_key(device_key, activation),
    )
    assert plaintext[0] == 0x04 and b"svc-android" in plaintext


def test_dead_fcm_tokens_are_reported(relay: Relay):
    key = relay.api_key
    phone = relay.new_sandbox_device(platform="android")
    user = unique("user")
    activation, _ = relay.activate(user, platform="android", messaging_token=phone["messaging_token"])
    relay.sandbox("POST", f"/devices/{phone['device_id']}/uninstall")
    message = {"to": user, "from": {"id": "agent", "name": "Ada"}, "conversation": "c", "text": "hi"}
    (push,) = relay.call("POST", "/v1/messages", 202, message, key)["pushes"]
    status = relay.wait_final(push["push_id"])
    assert (status["state"], status["reason"]) == ("token_dead", "UNREGISTERED")
    device = relay.call("GET", f"/v1/devices/{activation['device_id']}", 200, token=key)
    assert "messaging_token" not in device and device["token_dead_reason"] == "UNREGISTERED"
    after = relay.call("POST", "/v1/messages", 202, message, key)
    assert after["skipped"] == [{"device_id": activation["device_id"], "reason": "token_dead: UNREGISTERED"}]


def test_dead_tokens_are_reported(relay: Relay):
    key = relay.api_key
    phone = relay.new_sandbox_device()
    user = unique("user")
    activation, _ = relay.activate(user, messaging_token=phone["messaging_token"], voip_token=phone["voip_token"])
    device_id = activation["device_id"]
    relay.sandbox("POST", f"/devices/{phone['device_id']}/uninstall")

    message = {"to": user, "from": {"id": "agent", "name": "Ada"}, "conversation": "c", "text": "hi"}
    (push,) = relay.call("POST", "/v1/messages", 202, message, key)["pushes"]
    status = relay.wait_final(push["push_id"])
    assert (status["state"], status["reason"]) == ("token_dead", "Unregistered")
    assert status["history"][-1] == {"at": status["history"][-1]["at"], "state": "token_dead", "reason": "Unregistered"}
    device = relay.call("GET", f"/v1/devices/{device_id}", 200, token=key)
    assert "messaging_token" not in device and device["token_dead_reason"] == "Unregistered"
    after = relay.call("POST", "/v1/messages", 202, message, key)
    assert after["skipped"] == [{"device_id": device_id, "reason": "token_dead: Unregistered"}]

    (push,) = relay.call(
        "POST", "/v1/calls", 202, {"to": user, "from": message["from"], "call_id": unique("call")}, key
    )["pushes"]
    assert relay.wait_final(push["push_id"])["state"] == "token_dead"
    device = relay.call("GET", f"/v1/devices/{device_id}", 200, token=key)
    assert "voip_token" not in device and device["token_dead_reason"] == "Unregistered"
    calls = relay.call("POST", "/v1/calls", 202, {"to": user, "from": message["from"], "call_id": unique("call")}, key)
    assert calls["skipped"] == [{"device_id": device_id, "reason": "token_dead: Unregistered"}]

    fresh = relay.new_sandbox_device()
    revived = relay.call(
        "PUT",
        f"/v1/devices/{device_id}/tokens",
        200,
        {"messaging_token": fresh["messaging_token"]},
        activation["device_credential"],
    )
    assert "token_dead_reason" not in revived and revived["messaging_token"] == fresh["messaging_token"]
    health = relay.call("GET", "/health", 200)
    assert health["outbox_token_dead"] >= 2


def test_fleet_fields_apps_keys_and_device_environments(relay: Relay):
    """An app names its APNs key, FCM account and default environment; a device its APNs
    environment, which decides the host; a token sent to the other environment fails its push
    (BadDeviceToken) and is kept. `herald serve` in sandbox mode has one key and one account,
    both named `default`, and the sandbox plays both environments."""
    key = relay.api_key
    app_id = unique("com.example.fleet")
    team = "FLEETTEAM1"
    fleet = {"team_id": team, "apns_key": "default", "fcm_account": "default", "apns_environment": "production"}
    made = relay.call("PUT", f"/v1/apps/{app_id}", 200, fleet, key)
    assert {k: made[k] for k in fleet} == fleet, made
    listed = relay.call("GET", "/v1/apps", 200, token=key)["apps"]
    assert next(a for a in listed if a["id"] == app_id)["apns_environment"] == "production"
    inherited, _ = relay.activate(unique("fleet-user"), app=app_id, messaging_token=os.urandom(32).hex())
    shown = relay.call("GET", f"/v1/devices/{inherited['device_id']}", 200, token=key)
    assert shown["apns_environment"] == "production", "a device naming none takes its app's"
    refused = relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "apns_key": "team-b"}, key,
        field_name="apns_key", schema_rejects=False,
    )
    assert "default" in refused["reason"], refused
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "fcm_account": "other"}, key,
        field_name="fcm_account", schema_rejects=False,
    )
    relay.call(
        "PUT", f"/v1/apps/{app_id}", 400, {"team_id": team, "apns_environment": "staging"}, key,
        field_name="apns_environment",
    )

    # A production build's device of DEFAULT_APP (whose own environment is the default, development).
    production = relay.new_sandbox_device(apns_environment="production")
    assert production["apns_environment"] == "production"
    user = unique("fleet-user")
    activation, _ = relay.activate(
        user, messaging_token=production["messaging_token"], voip_token=production["voip_token"],
        apns_environment="production",
    )
    shown = relay.call("GET", f"/v1/devices/{activation['device_id']}", 200, token=key)
    assert shown["apns_environment"] == "production"
    listed = relay.call("GET", f"/v1/users/{user}/devices", 200, token=key)["devices"]
    assert listed[0]["apns_environment"] == "production"
    message = {"to": user, "from": {"id": "agent", "name": "Ada"}, "conversation": "c", "text": "hi"}
    (push,) = relay.call("POST", "/v1/messages", 202, message, key)["pushes"]
    assert relay.wait_final(push["push_id"])["state"] == "delivered"

    # A debug build's device left to the app's default: development.
    development = relay.new_sandbox_device()
    plain, _ = relay.activate(unique("fleet-user"), messaging_token=development["messaging_token"])
    assert relay.call("GET", f"/v1/devices/{plain['device_id']}", 200, token=key)["apns_environment"] == "development"

    # A debug build's token said to be a production one: APNs' production host does not know it.
    mislabelled = relay.new_sandbox_device()
    wrong_user = unique("fleet-user")
    wrong, _ = relay.activate(wrong_user, messaging_token=mislabelled["messaging_token"], apns_environment="production")
    (push,) = relay.call("POST", "/v1/messages", 202, message | {"to": wrong_user}, key)["pushes"]
    status = relay.wait_final(push["push_id"])
    assert status["state"] == "failed" and status["reason"].startswith("BadDeviceToken: APNs' production"), status
    assert "kept the token" in status["explanation"], status
    kept = relay.call("GET", f"/v1/devices/{wrong['device_id']}", 200, token=key)
    assert kept["messaging_token"] == mislabelled["messaging_token"] and "token_dead_reason" not in kept

    # Android devices have no APNs environment.
    android = relay.new_sandbox_device(platform="android")
    relay.call(
        "POST", "/v1/activations", 400,
        {"user_id": unique("fleet-user"), "app": DEFAULT_APP, "platform": "android",
         "public_key": b64(bytes(PrivateKey.generate().public_key)), "messaging_token": android["messaging_token"],
         "apns_environment": "development"},
        key, field_name="apns_environment",
    )


def test_queue_order_and_now_or_never(relay: Relay):
    """docs/relay.md, "Queue order" and "Push options": a customer_wait app's push keeps the
    customer's wait (`waiting_since`, its own time when none is given); a queue_time app's has
    none; expiration 0 is now or never; a wait in the future or in seconds is refused."""
    key = relay.api_key
    team = "QUEUETEAM1"
    waiting_app = unique("com.example.wait")
    made = relay.call("PUT", f"/v1/apps/{waiting_app}", 200, {"team_id": team, "queue_order": "customer_wait"}, key)
    assert made["queue_order"] == "customer_wait", made
    fifo_app = unique("com.example.fifo")
    assert relay.call("PUT", f"/v1/apps/{fifo_app}", 200, {"team_id": team}, key)["queue_order"] == "queue_time"
    waiting_user, fifo_user = unique("wait-user"), unique("fifo-user")
    relay.activate(waiting_user, app=waiting_app, messaging_token=os.urandom(32).hex())
    relay.activate(fifo_user, app=fifo_app, messaging_token=os.urandom(32).hex())
    message = {"to": waiting_user, "from": {"id": "agent", "name": "Ada"}, "conversation": "c", "text": "hi"}

    since = int(time.time() * 1000) - 300_000
    (push,) = relay.call("POST", "/v1/messages", 202, message | {"waiting_since": since}, key)["pushes"]
    status = relay.call("GET", f"/v1/pushes/{push['push_id']}", 200, token=key)
    assert status["waiting_since"] == since and status["now_or_never"] is False, status
    (push,) = relay.call("POST", "/v1/messages", 202, message | {"expiration": 0}, key)["pushes"]
    status = relay.call("GET", f"/v1/pushes/{push['push_id']}", 200, token=key)
    assert status["now_or_never"] is True and status["waiting_since"] == status["created_at"], status
    assert status["expires_at"] == status["created_at"] + 10_000, status
    (push,) = relay.call(
        "POST", "/v1/messages", 202, message | {"to": fifo_user, "waiting_since": since}, key
    )["pushes"]
    assert "waiting_since" not in relay.call("GET", f"/v1/pushes/{push['push_id']}", 200, token=key)

    now = int(time.time() * 1000)
    future = relay.call(
        "POST", "/v1/messages", 400, message | {"waiting_since": now + 600_000}, key,
        field_name="waiting_since", schema_rejects=False,
    )
    assert "in the future" in future["reason"], future
    seconds = relay.call(
        "POST", "/v1/messages", 400, message | {"waiting_since": now // 1000}, key,
        field_name="waiting_since", schema_rejects=False,
    )
    assert "28 days" in seconds["reason"], seconds
    relay.call("POST", "/v1/messages", 400, message | {"waiting_since": "yesterday"}, key, field_name="waiting_since")


def exercise_notification_permission(relay: Relay) -> None:
    """A device reports its notification permission; while `denied` its message alerts are
    skipped (`notifications_denied`, in the receipt and the push listing) and calls still ring
    it; the device views show it as `notifications`; bad bodies are 400, other callers 403."""
    key = relay.api_key
    user = unique("perm-user")
    phone = relay.new_sandbox_device()
    denied, _ = relay.activate(user, messaging_token=phone["messaging_token"], voip_token=phone["voip_token"])
    other_phone = relay.new_sandbox_device()
    other, _ = relay.activate(user, messaging_token=other_phone["messaging_token"])
    path = f"/v1/devices/{denied['device_id']}/notifications"
    credential = denied["device_credential"]
    assert relay.call("GET", f"/v1/devices/{denied['device_id']}", 200, token=key)["notifications"] == "granted"

    answer = relay.call("PUT", path, 200, {"permission": "denied"}, credential)
    assert answer["device_id"] == denied["device_id"] and answer["permission"] == "denied", answer
    relay.call("PUT", path, 401, {"permission": "denied"})
    relay.call("PUT", path, 403, {"permission": "granted"}, key)
    relay.call("PUT", path, 403, {"permission": "granted"}, other["device_credential"])
    relay.call("PUT", path, 400, {"permission": "maybe"}, credential, field_name="permission")
    relay.call("PUT", path, 400, {}, credential, field_name="permission")
    relay.call("PUT", path, 400, {"permission": True}, credential, field_name="permission")
    relay.call("PUT", path, 413, raw=b" " * (MAX_BODY + 1), token=credential, field_name="body")
    assert relay.call("GET", f"/v1/devices/{denied['device_id']}", 200, token=key)["notifications"] == "denied"
    listed = relay.call("GET", f"/v1/users/{user}/devices", 200, token=key)["devices"]
    shown = {d["device_id"]: d["notifications"] for d in listed}
    assert shown == {denied["device_id"]: "denied", other["device_id"]: "granted"}, listed

    message = {"to": user, "from": {"id": "agent", "name": "Ada"}, "conversation": "c", "text": "hi"}
    receipt = relay.call("POST", "/v1/messages", 202, message, key)
    assert [p["device_id"] for p in receipt["pushes"]] == [other["device_id"]], receipt
    assert receipt["skipped"] == [{"device_id": denied["device_id"], "reason": "notifications_denied"}], receipt
    pushes = relay.call("GET", f"/v1/pushes?device={denied['device_id']}", 200, token=key)["pushes"]
    assert [(p["state"], p["reason"]) for p in pushes] == [("skipped", "notifications_denied")], pushes
    assert relay.call("GET", f"/v1/pushes/{pushes[0]['push_id']}", 200, token=key)["state"] == "skipped"
    call = {"to": user, "from": {"id": "agent", "name": "Ada"}, "call_id": unique("perm-call")}
    rings = relay.call("POST", "/v1/calls", 202, call, key)
    assert denied["device_id"] in [p["device_id"] for p in rings["pushes"]], rings

    assert relay.call("PUT", path, 200, {"permission": "granted"}, credential)["permission"] == "granted"
    again = relay.call("POST", "/v1/messages", 202, message, key)
    assert sorted(p["device_id"] for p in again["pushes"]) == sorted([denied["device_id"], other["device_id"]])


@pytest.mark.parametrize(
    "lengths",
    [b"Content-Length: 2\r\nContent-Length: 2\r\n", b"Content-Length: 2\r\nContent-Length: 3\r\n", b"Content-Length: 2, 2\r\n"],
)
def test_conflicting_content_length_is_400_then_closed(relay: Relay, spec: Spec, lengths: bytes):
    """RFC 9112 §6.3: two Content-Length headers, equal or not, or a list in one, are answered 400
    with the usual error body, and the connection is closed (reading to the end proves it: a
    connection left open would time out instead)."""
    parsed = urllib.parse.urlsplit(relay.url)
    with socket.create_connection((parsed.hostname, parsed.port), timeout=HTTP_TIMEOUT) as connection:
        connection.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer "
            + relay.api_key.encode()
            + b"\r\n"
            + lengths
            + b"\r\n{}"
        )
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), received[:300]
    error = json.loads(body)
    assert error["error"] == "invalid_field" and error["field"] == "content-length", error
    assert not _errors(spec.schema("Error"), error)


def test_sigterm_stops_the_relay(relay: Relay):
    assert relay.process.poll() is None, "herald serve died during the tests (see its stderr)"
    relay.process.send_signal(signal.SIGTERM)
    try:
        code = relay.process.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"herald serve did not exit within {EXIT_TIMEOUT}s of SIGTERM")
    assert code == 0, f"herald serve exited with {code} after SIGTERM"
