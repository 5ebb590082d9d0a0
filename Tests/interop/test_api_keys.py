"""Per-app API keys, quotas and SIGHUP (issue 32), against the real `herald` binary:

* `herald keys api create` beside a running `herald serve` makes a key the node takes without a
  restart; the key sends to its app, its token is never stored or logged (only its id, in the
  access line), `herald keys api list` shows it without a secret, and `revoke` makes the node
  answer 401 within seconds.
* An app's quota in the configuration file answers 429 with `Retry-After` once spent; SIGHUP
  with a larger quota and `log_level: warning` in the file admits more at once and stops the
  info lines, with no restart, and a configuration that no longer resolves leaves the running one
  (and the node) as it was.

Run: .venv/bin/python -m pytest -q Tests/interop/test_api_keys.py
(HERALD_BIN overrides the binary, default .build/debug/herald).
"""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from test_relay_crash import activate_iphone, call
from test_serve_restart import APP, HERALD, Serve
from waiting import eventually


def keys_api(serve: Serve, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [HERALD, "keys", "api", *argv, "--data", str(serve.directory / "data")],
        capture_output=True, text=True, timeout=60, cwd=serve.directory,
    )  # fmt: skip


def send(serve: Serve, token: str, text: str = "hello") -> tuple[int, object]:
    body = {"to": "alice", "from": {"id": "agent-1", "name": "Dana"}, "conversation": "c-1", "text": text}
    return call(f"{serve.relay}/v1/messages", "POST", body, token=token)



def test_keys_made_and_revoked_beside_a_running_node(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        activate_iphone(serve.control, serve.relay, serve.api_key, APP, "alice")
        refused = keys_api(serve, "create", "--name", "crm", "--app", "com.unknown")
        assert refused.returncode == 64 and "names no registered app: com.unknown" in refused.stderr, refused

        made = keys_api(serve, "create", "--name", "crm", "--app", APP, "--scopes", "send", "--json")
        assert made.returncode == 0, made.stderr
        key = json.loads(made.stdout)
        assert key["app"] == APP and key["scopes"] == ["send"] and key["token"].startswith(f"hk_{key['id']}_")

        # The node reads the stored keys every 2 s: the key works without a restart.
        status, receipt = eventually(lambda: (answer := send(serve, key["token"]))[0] == 202 and answer)
        assert len(receipt["pushes"]) == 1, receipt
        status, refusal = call(f"{serve.relay}/v1/pushes/{receipt['pushes'][0]['push_id']}", token=key["token"])
        assert status == 403 and refusal["reason"] == f"the API key {key['id']} lacks the 'read' scope", refusal

        listed = keys_api(serve, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [k["id"] for k in json.loads(listed.stdout)] == [key["id"]]
        assert key["token"] not in listed.stdout and "token" not in json.loads(listed.stdout)[0]

        revoked = keys_api(serve, "revoke", key["id"])
        assert revoked.returncode == 0 and f"revoked API key {key['id']}" in revoked.stdout, revoked
        again = keys_api(serve, "revoke", key["id"])
        assert again.returncode == 64, again
        status, answer = eventually(lambda: (answer := send(serve, key["token"]))[0] == 401 and answer)
        assert answer["reason"] == f"the API key {key['id']} was revoked", answer

        status, audit = call(f"{serve.relay}/v1/audit", token=serve.api_key)
        assert status == 200, audit
        actions = [(entry["actor"], entry["action"]) for entry in audit["entries"]]
        assert actions[:2] == [("cli", "key.revoked"), ("cli", "key.created")], actions
    finally:
        serve.stop()
    log = serve.log.read_text(errors="replace")
    assert key["token"] not in log and key["token"][len("hk_") + 17 :] not in log
    # The access line names the key by its id.
    assert f"key=key:{key['id']}" in log, log[-3000:]
    database = (tmp_path / "data" / "herald.sqlite").read_bytes()
    assert key["token"].encode() not in database and key["token"][20:].encode() not in database


def test_quotas_answer_429_and_sighup_reloads_them(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    config = tmp_path / "serve.json"
    settings = json.loads(config.read_text())
    try:
        activate_iphone(serve.control, serve.relay, serve.api_key, APP, "alice")
        made = keys_api(serve, "create", "--name", "crm", "--app", APP, "--json")
        token = json.loads(made.stdout)["token"]
        eventually(lambda: send(serve, token)[0] == 202)

        # A quota of 2 at once, and almost no refill: the third message is refused.
        settings["quotas"] = {"apps": {APP: {"messages_per_second": 0.01, "burst": 2}}}
        config.write_text(json.dumps(settings))
        serve.process.send_signal(signal.SIGHUP)
        eventually(lambda: "configuration reloaded" in serve.log.read_text(errors="replace"))
        statuses = [send(serve, token)[0] for _ in range(3)]
        assert statuses == [202, 202, 429], statuses
        request = urllib.request.Request(
            f"{serve.relay}/v1/messages",
            data=json.dumps({"to": "alice", "from": {"id": "a", "name": "A"}, "conversation": "c", "text": "x"}).encode(),
            headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        )
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("the spent quota admitted a message")
        except urllib.error.HTTPError as error:
            refusal = json.loads(error.read())
            assert error.code == 429 and refusal["error"] == "too_many_requests", refusal
            # 0.01 a second: the next message fits in 100 s.
            assert 1 <= int(error.headers["retry-after"]) <= 100, error.headers
        assert f"app {APP}'s message quota is spent" in refusal["reason"], refusal
        # The admin key is not the app's: its messages are not counted.
        assert send(serve, serve.api_key)[0] == 202

        # A configuration that does not resolve: the running quota stays, the node runs on.
        config.write_text(json.dumps({**settings, "quotas": {"apps": {APP: {"messages_per_second": -1}}}}))
        serve.process.send_signal(signal.SIGHUP)
        eventually(lambda: "configuration not reloaded" in serve.log.read_text(errors="replace"))
        assert send(serve, token)[0] == 429
        assert serve.process.poll() is None

        # A larger quota, and the log level raised to warning: both take effect without a restart.
        settings["quotas"] = {"apps": {APP: {"messages_per_second": 1000, "burst": 1000}}}
        settings["log_level"] = "warning"
        config.write_text(json.dumps(settings))
        assert " info " in serve.log.read_text(errors="replace"), "info lines (the access log) before the reload"
        serve.process.send_signal(signal.SIGHUP)
        eventually(lambda: serve.log.read_text(errors="replace").count("configuration reloaded") == 2)
        logged = len(serve.log.read_text(errors="replace"))
        assert [send(serve, token)[0] for _ in range(5)] == [202] * 5
        after = serve.log.read_text(errors="replace")[logged:]
        assert " info " not in after, f"info lines after the reload to warning: {after[:2000]}"
    finally:
        serve.stop()
