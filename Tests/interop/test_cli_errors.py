"""The command line's errors: what an operator sees when a subcommand cannot start.

A refusal raised while a subcommand runs (a missing configuration file, a database URL that is
not one) prints one line naming what failed, and exits non-zero, without the root command's usage;
a mistyped option still prints the subcommand's own usage.

Run: python3 -m pytest -q Tests/interop/test_cli_errors.py   (HERALD_BIN overrides the binary)
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
HERALD = os.path.abspath(os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald")))


def run(*arguments: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as directory:
        return subprocess.run(
            [HERALD, *arguments], cwd=directory, capture_output=True, text=True, timeout=60, check=False
        )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["serve", "--config", "/nonexistent/herald.json"], "cannot read the configuration file /nonexistent/herald.json"),
        (["relay", "--config", "/nonexistent/herald.json"], "cannot read the configuration file /nonexistent/herald.json"),
        (["serve", "--database", "mysql://somewhere/db"], "postgres"),
    ],
)
def test_a_refusal_at_start_is_one_line_without_usage(arguments: list[str], message: str) -> None:
    result = run(*arguments)
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: "), result.stderr
    assert message in lines[0], result.stderr
    assert "Usage" not in result.stderr and "Usage" not in result.stdout


def test_a_mistyped_option_shows_the_subcommands_usage() -> None:
    result = run("serve", "--no-such-option")
    assert result.returncode == 64, result
    assert "Unknown option '--no-such-option'" in result.stderr
    assert "Usage: herald serve" in result.stderr


VECTORS = str(ROOT / "docs" / "test-vectors" / "envelope-v1.json")


def test_envelope_open_reads_the_documented_vector_file() -> None:
    result = run("envelope", "open", VECTORS, "--vector", "message-ascii")
    assert result.returncode == 0, result.stderr
    assert '"type":"message"' in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["envelope", "open", VECTORS], "name one with --vector (message-ascii, "),
        (["envelope", "open", VECTORS, "--vector", "nope"], "has no vector 'nope'"),
        (["envelope", "open", str(ROOT / "docs" / "openapi.yaml")], "is not a JSON object"),
        (["envelope", "open", "/nonexistent/vector.json"], "cannot read /nonexistent/vector.json"),
    ],
)
def test_envelope_open_refuses_a_wrong_file_in_one_line(arguments: list[str], message: str) -> None:
    result = run(*arguments)
    assert result.returncode == 64, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "DecodingError" not in result.stderr


def test_envelope_open_names_the_missing_field_of_a_wrong_shaped_entry(tmp_path: Path) -> None:
    entry = tmp_path / "entry.json"
    entry.write_text('{"push_id": "p", "device_id": "d"}')
    result = run("envelope", "open", str(entry))
    assert result.returncode == 64, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'kind' is missing" in lines[0], result.stderr


def test_keys_token_shares_one_token_with_the_provider(tmp_path: Path) -> None:
    """A hand-made token and `herald provider` use one token per key (the sandbox, like APNs,
    refuses a second within 20 minutes): the token is kept in the provider's token file."""

    def herald(*arguments: str) -> str:
        result = subprocess.run([HERALD, *arguments], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    herald("keys", "apns", "--out", "keys", "--key-id", "ABC123DEFG", "--team-id", "TEAM123456")
    token = ["keys", "token", "--key", "keys/AuthKey_ABC123DEFG.p8", "--team-id", "TEAM123456"]
    first = herald(*token)
    assert (tmp_path / "data" / "provider-token").read_text().strip() == first
    assert oct((tmp_path / "data" / "provider-token").stat().st_mode & 0o777) == "0o600"
    assert herald(*token) == first
    # Another team's token is not taken for this one; '' keeps no file.
    assert herald("keys", "token", "--key", "keys/AuthKey_ABC123DEFG.p8", "--team-id", "TEAM999999") != first
    (tmp_path / "data" / "provider-token").unlink()
    herald(*token, "--token-cache", "")
    assert not (tmp_path / "data" / "provider-token").exists()


def run_with_config(
    config: str, *arguments: str, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "herald.yaml").write_text(config)
        return subprocess.run(
            [HERALD, *arguments, "--config", "herald.yaml"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")} | (environment or {}),
        )


PRODUCTION_WITHOUT_KEY = "apns:\n  key_id: ABC123DEFG\n  team_id: ABCDE12345\n  environment: production\n"


@pytest.mark.parametrize(
    ("config", "environment", "message"),
    [
        # The key file is not set (HERALD_APNS_KEY missing from a manual run): never the sandbox.
        (PRODUCTION_WITHOUT_KEY, {}, "apns names 'key_id' but no key file"),
        ("fcm:\n  url: https://fcm.example.com\n", {}, "fcm names 'url' but no service account"),
        # A CXone secret too short, given in sandbox mode: one line, no crash.
        ("adapters:\n  cxone:\n    secret: short\n", {}, "the cxone adapter's secret must be at least 16 characters"),
        ("", {"HERALD_GENESYS_SECRET": "short"}, "the genesys adapter's secret must be at least 16 characters"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "relay", "check"])
def test_a_configuration_that_cannot_be_meant_is_refused_in_one_line(
    command: str, config: str, environment: dict[str, str], message: str
) -> None:
    result = run_with_config(config, command, environment=environment)
    assert result.returncode == 64, result
    if command == "check":
        lines = result.stdout.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("FAIL configuration ") and message in lines[0], result
    else:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("Error: ") and message in lines[0], result.stderr
    assert "Fatal error" not in result.stderr


def test_a_port_in_use_is_named_with_its_listener() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = f"port: {port}\nsandbox: {{apns_port: 0, fcm_port: 0, control_port: 0}}\n"
        result = run_with_config(config, "serve")
    assert result.returncode != 0, result
    last = result.stderr.strip().splitlines()[-1]
    assert last == f"Error: the relay cannot listen on 127.0.0.1:{port}: the port is in use (another process holds it)", (
        result.stderr
    )


def test_serve_starts_with_relative_directories() -> None:
    """`--data data --keys-dir keys` (relative, no slash) start as absolute ones do: Foundation's
    deletingLastPathComponent trapped on such a path."""
    import signal
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "herald.yaml").write_text("sandbox: {apns_port: 0, fcm_port: 0, control_port: 0}\n")
        serve = subprocess.Popen(
            [HERALD, "serve", "--config", "herald.yaml", "--data", "data", "--keys-dir", "keys", "--port", str(port)],
            cwd=directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            def answered() -> str | None:
                if serve.poll() is not None:
                    return "exited"
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=2) as answer:
                        return "ready" if answer.status == 200 else None
                except OSError:
                    return None

            outcome = eventually(answered, 45, 0.2, "herald serve ready")
            assert outcome == "ready", serve.stderr.read()
            assert (Path(directory) / "data" / "herald.sqlite").is_file()
            assert (Path(directory) / "keys" / "api.key").is_file()
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
