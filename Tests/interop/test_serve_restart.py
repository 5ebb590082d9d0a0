"""`herald serve` restarted on the same data directory: devices activated before still get pushes.

The in-process sandbox keeps the devices and tokens it issued in DATA/sandbox-devices.json, so
after a restart it still accepts the tokens the relay holds. Without that file (deleted here on
purpose) the tokens are unknown to it: the push ends `token_dead`, and the push's status says in
words what that means.

Run: python3 -m pytest -q Tests/interop/test_serve_restart.py   (HERALD_BIN overrides the binary)
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import nacl.public

from waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
HERALD = os.path.abspath(os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald")))
APP = "com.example.herald"


class Serve:
    """One `herald serve` on loopback ports it picks, on the given data and keys directories."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        config = directory / "serve.json"
        config.write_text(json.dumps({"port": 0, "sandbox": {"apns_port": 0, "fcm_port": 0, "control_port": 0}}))
        self.log = directory / f"serve-{time.monotonic_ns()}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        self.process = subprocess.Popen(
            [HERALD, "serve", "--config", str(config), "--data", str(directory / "data"),
             "--keys-dir", str(directory / "keys")],
            cwd=directory, env=env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
        )

        def banner():
            text = self.log.read_text(errors="replace")
            relay = re.search(r"relay\s+(http://\S+)/v1", text)
            control = re.search(r"control (http://\S+)/sandbox", text)
            if relay and control:
                return relay.group(1), control.group(1)
            assert self.process.poll() is None, f"herald serve exited:\n{text}"
            return None

        self.relay, self.control = eventually(
            banner, 30, what=lambda: f"the banner:\n{self.log.read_text(errors='replace')}"
        )
        self.api_key = (directory / "keys" / "api.key").read_text().strip()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0, self.log.read_text(errors="replace")

    def call(self, url: str, body: dict | None = None, auth: bool = True) -> dict:
        request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode())
        if auth:
            request.add_header("authorization", f"Bearer {self.api_key}")
        request.add_header("content-type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"{}")

    def phone(self, user: str, platform: str) -> None:
        """A device from the sandbox, activated with the relay."""
        device = self.call(f"{self.control}/sandbox/devices", {"bundle_id": APP, "platform": platform}, auth=False)
        key = nacl.public.PrivateKey.generate()
        activation = {
            "user_id": user, "app": APP, "platform": platform,
            "public_key": base64.b64encode(bytes(key.public_key)).decode(),
            "messaging_token": device["messaging_token"],
        }
        if platform == "ios":
            activation["voip_token"] = device["voip_token"]
        self.call(f"{self.relay}/v1/activations", activation)

    def message(self, user: str) -> str:
        receipt = self.call(f"{self.relay}/v1/messages", {
            "to": user, "from": {"id": "agent-7", "name": "Dana"}, "conversation": "c-1", "text": "after the restart",
        })
        assert len(receipt["pushes"]) == 1, receipt
        return receipt["pushes"][0]["push_id"]

    def settled(self, push_id: str) -> dict:
        last: list = [None]

        def final():
            last[0] = self.call(f"{self.relay}/v1/pushes/{push_id}")
            return last[0] if last[0]["state"] not in ("queued", "sending") else None

        return eventually(final, 20, what=lambda: f"push {push_id} settled (last: {last[0]})")


def test_devices_activated_before_a_restart_get_pushes_after_it(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        serve.phone("alice", "ios")
        serve.phone("carol", "android")
    finally:
        serve.stop()
    assert (tmp_path / "data" / "sandbox-devices.json").exists()

    serve = Serve(tmp_path)
    try:
        for user in ("alice", "carol"):
            status = serve.settled(serve.message(user))
            assert status["state"] == "delivered", (user, status, serve.log.read_text(errors="replace"))
    finally:
        serve.stop()


def test_a_token_the_sandbox_forgot_fails_its_push_and_is_kept(tmp_path: Path) -> None:
    """APNs answers BadDeviceToken both for a token it does not know and for a live token sent to
    the other environment's host, so the push fails and the relay keeps the token (docs/provider.md)."""
    serve = Serve(tmp_path)
    try:
        serve.phone("alice", "ios")
    finally:
        serve.stop()
    (tmp_path / "data" / "sandbox-devices.json").unlink()

    serve = Serve(tmp_path)
    try:
        status = serve.settled(serve.message("alice"))
        assert status["state"] == "failed", status
        assert status["reason"].startswith("BadDeviceToken: APNs' development environment"), status
        assert "kept the token" in status["explanation"], status
    finally:
        serve.stop()
    log = serve.log.read_text(errors="replace")
    assert "APNs refused a device token as BadDeviceToken" in log, log


def test_an_emulated_phone_from_before_a_restart_connects_and_shows_the_message(tmp_path: Path) -> None:
    """`herald device` started again after the restart, with its app-group store: the sandbox
    still knows its device, so it connects (no refused WebSocket upgrade) and gets the push."""

    def device(serve: Serve, log: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [HERALD, "device", "--user", "bob", "--relay", serve.relay, "--sandbox", serve.control,
             "--api-key-file", str(tmp_path / "keys" / "api.key"), "--store", str(tmp_path / "device-bob")],
            cwd=tmp_path, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        )

    def wait_for(log: Path, text: str, process: subprocess.Popen[bytes]) -> None:
        def printed() -> bool:
            if text in log.read_text(errors="replace"):
                return True
            assert process.poll() is None, log.read_text(errors="replace")
            return False

        eventually(printed, 20, what=lambda: f"{text!r} in:\n{log.read_text(errors='replace')}")

    serve = Serve(tmp_path)
    try:
        phone = device(serve, tmp_path / "before.log")
        wait_for(tmp_path / "before.log", "VoIP token received", phone)
        phone.terminate()
        phone.wait(timeout=10)
    finally:
        serve.stop()

    serve = Serve(tmp_path)
    try:
        phone = device(serve, tmp_path / "after.log")
        try:
            wait_for(tmp_path / "after.log", "session 1 started", phone)
            serve.message("bob")
            wait_for(tmp_path / "after.log", "notification shown  “Dana: after the restart”  thread c-1", phone)
        finally:
            phone.terminate()
            phone.wait(timeout=10)
    finally:
        serve.stop()
