"""What an operator sees of every Herald process that serves HTTP: `/metrics`, `/health/live` and
`/health/ready` (issue #15, part A).

The test drives the real `herald` binary as subprocesses (with the helpers of
Tests/interop/test_relay_crash.py) and talks to them only over the wire:

* `herald sandbox` (APNs and FCM look-alike); its control port serves `/metrics`;
* `herald relay` (SQLite) pointed at a `herald provider` that is not running yet: `/health/live`
  answers 200, `/health/ready` 503 naming the provider;
* `herald provider` starts: the relay's `/health/ready` turns 200; the provider's own
  `/health/live` and `/health/ready` answer 200;
* `/metrics` of the provider, the sandbox and the relay: every series has `# HELP` and `# TYPE`,
  `herald_build_info` is 1, the `process_*` figures are there, and the HTTP requests are counted
  by route pattern (never the raw path);
* the provider stops: the relay's `/health/ready` answers 503 naming it again;
* SIGTERM stops every process with exit status 0.

Run: python3 -m pytest -q Tests/interop/test_observability.py   (HERALD_BIN overrides the binary,
default .build/debug/herald). Python packages: pytest.
"""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request
from pathlib import Path

from test_relay_crash import (  # noqa: F401  (herald and workdir are fixtures)
    call,
    free_port,
    herald,
    stop,
    workdir,
)
from waiting import eventually

TEAM_ID = "TEAM123456"
BUNDLE_ID = "com.example.observability"
STARTUP_TIMEOUT = 45.0  # a debug build on a loaded machine can take a while to bind
READY_TIMEOUT = 20.0
# Label values are quoted and may hold braces (route="/v1/pushes/{id}").
SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+)$')


def scrape(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=15) as response:
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/plain")
        return response.read().decode("utf-8")


def parse(text: str) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """(samples by series, help by family, type by family) of Prometheus text."""
    samples: dict[str, float] = {}
    helps: dict[str, str] = {}
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            helps[name] = help_text
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, f"not Prometheus text: {line!r}"
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples, helps, types


def family(series: str, types: dict[str, str]) -> str:
    name = series.split("{", 1)[0]
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def check_exposition(what: str, text: str, route: str) -> dict[str, float]:
    """Every series documented, build info, process figures, HTTP requests by `route`."""
    samples, helps, types = parse(text)
    undocumented = sorted({family(s, types) for s in samples if not helps.get(family(s, types)) or family(s, types) not in types})
    assert not undocumented, f"{what}: series without # HELP or # TYPE: {undocumented}"
    build = [s for s in samples if s.startswith("herald_build_info{")]
    assert len(build) == 1 and samples[build[0]] == 1, f"{what}: {build}"
    assert 'version="' in build[0] and 'swift="' in build[0], build[0]
    assert samples.get("process_resident_memory_bytes", 0) > 1_000_000, what
    assert samples.get("process_open_fds", 0) > 3, what
    assert "process_cpu_seconds_total" in samples and types["process_cpu_seconds_total"] == "counter", what
    assert abs(samples["process_start_time_seconds"] - time.time()) < 3600, what
    counted = [s for s in samples if s.startswith("herald_http_requests_total{") and f'route="{route}"' in s]
    assert counted, f"{what}: no herald_http_requests_total for {route}: {sorted(samples)}"
    assert types["herald_http_request_duration_seconds"] == "histogram", what
    return samples


def wait_status(url: str, status: int, timeout: float = READY_TIMEOUT) -> object:
    """The body once `url` answers `status` (polled: the relay's readiness has no signal)."""
    last: list = [None]

    def answered():
        last[0] = call(url)
        return last[0] if last[0][0] == status else None

    return eventually(answered, timeout, what=lambda: f"{url} to answer {status} (last: {last[0]})")[1]


def test_every_http_process_serves_metrics_and_health(herald: Path, workdir):
    root, processes = workdir
    keys = root / "keys"
    made = subprocess.run(
        [str(herald), "keys", "apns", "--out", str(keys), "--team-id", TEAM_ID],
        capture_output=True, text=True, timeout=60, cwd=root,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    key_file = sorted(keys.glob("AuthKey_*.p8"))[0]
    # The relay starts before its provider: the secret they share is written first.
    (keys / "provider.secret").write_text("observability-secret-0123456789\n")
    (keys / "provider.secret").chmod(0o600)

    apns_port, control_port, provider_port, relay_port = free_port(), free_port(), free_port(), free_port()
    sandbox = processes.start(
        "sandbox",
        [
            str(herald), "sandbox",
            "--apns-port", str(apns_port),
            "--control-port", str(control_port),
            "--fcm-port", "0",
            "--hms-port", "0",
            "--keys-dir", str(keys),
            "--app", f"{BUNDLE_ID}:{TEAM_ID}",
            "--log-level", "warning",
        ],  # fmt: skip
        cwd=root,
    )
    sandbox.wait_for_line("  control API", STARTUP_TIMEOUT)
    control_url = f"http://127.0.0.1:{control_port}"
    provider_url = f"http://127.0.0.1:{provider_port}"
    relay_url = f"http://127.0.0.1:{relay_port}"

    relay = processes.start(
        "relay",
        [
            str(herald), "relay",
            "--port", str(relay_port),
            "--keys-dir", str(keys),
            "--data", str(root / "data"),
            "--app", f"{BUNDLE_ID}:{TEAM_ID}",
            "--provider-url", provider_url,
            "--provider-secret-file", str(keys / "provider.secret"),
        ],  # fmt: skip
        cwd=root,
    )
    relay.wait_for_line("  relay", STARTUP_TIMEOUT)

    # No provider yet: alive, not ready, and it says why.
    assert call(relay_url + "/health/live") == (200, {"status": "live"})
    status, body = call(relay_url + "/health/ready")
    assert status == 503, body
    assert body["status"] == "not_ready" and any(provider_url in reason for reason in body["reasons"]), body

    provider = processes.start(
        "provider",
        [
            str(herald), "provider",
            "--port", str(provider_port),
            "--apns-key", str(key_file),
            "--apns-team-id", TEAM_ID,
            "--apns-url", f"https://127.0.0.1:{apns_port}",
            "--apns-ca", str(keys / "sandbox-ca.pem"),
            "--secret-file", str(keys / "provider.secret"),
            "--token-cache", str(root / "provider-token"),
        ],  # fmt: skip
        cwd=root,
    )
    provider.wait_for_line("  listening", STARTUP_TIMEOUT)
    assert wait_status(relay_url + "/health/ready", 200) == {"status": "ready", "reasons": []}
    assert call(provider_url + "/health/live") == (200, {"status": "live"})
    assert call(provider_url + "/health/ready") == (200, {"status": "ready", "reasons": []})

    # The relay asked the provider's /health; the provider counts it by route.
    check_exposition("herald provider", scrape(provider_url), "/health")
    assert call(control_url + "/sandbox/health")[0] == 200
    check_exposition("herald sandbox", scrape(control_url), "/sandbox/health")
    assert call(relay_url + "/v1/pushes/not-a-push-123", token=(keys / "api.key").read_text().strip())[0] == 404
    samples = check_exposition("herald relay", scrape(relay_url), "/health/ready")
    assert samples.get("herald_relay_queue_depth") == 0
    assert samples.get("herald_relay_oldest_queued_push_age_seconds") == 0
    assert samples.get("herald_relay_store_up") == 1
    assert samples.get('herald_http_requests_total{method="GET",route="/v1/pushes/{id}",status="404"}') == 1
    assert not any("not-a-push-123" in series for series in samples), "no raw path in a label"

    # The provider goes away: the relay is not ready again, and says why.
    assert stop(provider) == 0, provider.stderr_tail()
    body = wait_status(relay_url + "/health/ready", 503)
    assert any(provider_url in reason for reason in body["reasons"]), body

    for process in (relay, sandbox):
        assert stop(process) == 0, process.stderr_tail()


def test_serve_with_its_sandbox_counts_each_series_once(herald: Path, workdir):
    """`herald serve` runs the sandbox in its own process: the relay's `/metrics` has the
    sandbox's series, and the control port serves none, so a scrape of both ports cannot count
    anything twice."""
    root, processes = workdir
    relay_port, apns_port, fcm_port, control_port = free_port(), free_port(), free_port(), free_port()
    (root / "herald.yaml").write_text(
        f"port: {relay_port}\nkeys_dir: {root / 'keys'}\ndata: {root / 'data'}\n"
        f"sandbox: {{apns_port: {apns_port}, fcm_port: {fcm_port}, control_port: {control_port}}}\n"
    )
    serve = processes.start("serve", [str(herald), "serve", "--config", str(root / "herald.yaml")], cwd=root)
    serve.wait_for_line("  relay", STARTUP_TIMEOUT)
    relay_url, control_url = f"http://127.0.0.1:{relay_port}", f"http://127.0.0.1:{control_port}"
    wait_status(relay_url + "/health/ready", 200)
    assert call(control_url + "/sandbox/health")[0] == 200
    samples = check_exposition("herald serve", scrape(relay_url), "/health/ready")
    # The sandbox's own requests are on the relay's exposition, under the same process.
    assert any('route="/sandbox/health"' in series for series in samples), sorted(samples)
    assert call(control_url + "/metrics")[0] == 404
    assert stop(serve) == 0
