#!/usr/bin/env python3
"""Load generator: aioapns (the well-known asyncio APNs client) on uvloop against `herald sandbox`.

It measures what a Python provider built on aioapns 4.0 achieves against the sandbox, so that
Herald's own provider can be compared with it in the same run (scripts/bench-provider.sh).

    python3 scripts/bench-aioapns.py --apns-url https://127.0.0.1:PORT --ca KEYS/sandbox-ca.pem \
        --key KEYS/AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID --topic com.example.bench \
        --token DEVICE_TOKEN --push-type alert --payload-bytes 500 \
        --count 200000 --connections 2 --concurrency 200

It sends --count pushes with --concurrency of them in flight at any moment (a fixed pool of that
many worker coroutines, each awaiting one `APNs.send_notification` at a time), then prints ONE
JSON line on stdout:

    {"client":"aioapns","aioapns":"4.0","uvloop":"0.23.0","count":N,"ok":n,"failed":n,
     "seconds":s,"pushes_per_second":x,"p50_ms":..,"p99_ms":..,"connections":N,
     "concurrency":N,"push_type":"alert", ...a few extra fields, see `result` below}

Latency of a push = from the call of `send_notification` to its result (or exception). A
result other than 200, or an exception, counts as failed; the first few are printed to stderr,
and a summary (failures by reason, connections opened/lost, GOAWAYs, aioapns' own warnings such
as "Pool is completely busy" or "Could not send notification ... ConnectionClosed", i.e. retries)
is always printed to stderr.

Push shapes: alert = priority 5, push type alert, topic --topic, a JSON body of about
--payload-bytes like {"aps":{"alert":{"title":"New message","body":"..."},"mutable-content":1},
"e":"<base64url filler>"}; voip = priority 10, push type voip, topic <--topic>.voip (".voip" is
appended when missing), --token must then be the device's VoIP token, body
{"type":"call","call_id":"...","caller_name":"...","e":"<filler>"} of about --payload-bytes.
Sizes are those of the bytes aioapns puts on the wire (json.dumps(message, ensure_ascii=False)).

Start the sandbox with `--token-update-interval 0`. aioapns signs its own provider token (JWT)
for every connection it opens (and again every 30 minutes); the sandbox, like APNs, answers
429 TooManyProviderTokenUpdates when one team and key switch tokens within the interval
(20 minutes by default), so with the default every connection after the first would fail.

How aioapns is pointed at the sandbox: aioapns 4.0 takes an `ssl_context` (here: trusting only
--ca, host name verified, ALPN h2), but connects to the host and port named by class attributes
of its protocol class; a small subclass of its development protocol names the sandbox instead.

What aioapns does with connections and streams, and what this script changes (read from
aioapns 4.0's connection.py and common.py, and checked against the sandbox):

* Streams per connection. Each connection has a semaphore of stream slots ("free_channels",
  1000 at first) whose bound follows the server's SETTINGS_MAX_CONCURRENT_STREAMS. The sandbox,
  like APNs ("only one stream until a request with a valid provider token"), sends 1 first and
  1000 right after the first accepted request. aioapns' bound setter raises the bound with
  release() calls made before it stores the new bound, while release() caps the count at the
  stored bound; so when the raise arrives while a request is in flight (always, here) the count
  ends at 1 instead of 999 and the connection keeps 2 streams in flight for good (measured:
  exactly 2 per connection, whatever --concurrency). The subclass does the same bound update
  in the right order (set_slot_bound) and caps the bound at --streams-per-connection (default
  ceil(concurrency / connections), i.e. 100 for "100 per connection").
* Connections. The pool (`max_connections`, set from --connections) hands out the first
  connection that is not "busy" (no free slot) and opens a new one only when all are busy at
  that instant, under a lock that waiting sends pass one per event-loop turn. Under steady load
  that rarely happens: with 4 allowed, 2 were opened and the other 200 sends sat in the lock
  queue for ~17 s. So --connections connections are opened first with the pool's own
  create_connection() (--no-preopen: leave it to the pool). A send that finds every connection
  busy and the pool full sleeps 10 ms and looks again ("Pool is completely busy ... retrying")
  while the others take every freed slot first; such sends can wait for the whole run.
* Warm-up. The measurement starts when every worker has had one result (all sends have made
  it through the pool; with the cap above, each connection then carries its streams). Those
  pushes are extra, reported as warmup_pushes / warmup_seconds; --no-warmup measures from the
  first push. --warmup-timeout (60 s) starts measuring anyway.
* --as-shipped: none of the above (no cap, no correction, no pre-opening, no warm-up): aioapns
  exactly as it comes, pointed at the sandbox. Expect about 2 streams in flight per connection
  and sends starved in the "Pool is completely busy" loop (a long p99).

Everything else (HTTP/2 framing, headers, JWT, response parsing, retries on a lost
connection: --max-connection-attempts, aioapns' default 5) is aioapns' own code. The JSON line
says which mode ran ("aioapns_slots": "corrected" or "as-shipped") and how many connections
were opened ("connections_opened").

Packages: aioapns==4.0 (brings h2, PyJWT, pyOpenSSL) and uvloop (benchmarks only;
--loop asyncio runs without it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import math
import os
import ssl
import sys
import time
from collections import Counter
from importlib import metadata
from urllib.parse import urlsplit

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsDevelopmentClientProtocol
from h2.settings import SettingCodes

FAILURES_SHOWN = 5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--apns-url", required=True, help="https://127.0.0.1:PORT (the sandbox's APNs listener)")
    p.add_argument("--ca", required=True, help="the sandbox CA (KEYS/sandbox-ca.pem), the only trust root")
    p.add_argument("--key", required=True, help="the provider's AuthKey_<KEYID>.p8")
    p.add_argument("--key-id", required=True)
    p.add_argument("--team-id", required=True)
    p.add_argument("--topic", required=True, help="the bundle id; .voip is appended for voip pushes")
    p.add_argument("--token", required=True, help="device token (the VoIP token for --push-type voip)")
    p.add_argument("--push-type", choices=["alert", "voip"], default="alert")
    p.add_argument("--payload-bytes", type=int, default=500, help="approximate JSON body size")
    p.add_argument("--count", type=int, default=10000, help="pushes to send")
    p.add_argument("--connections", type=int, default=1, help="aioapns max_connections")
    p.add_argument("--concurrency", type=int, default=100, help="sends in flight (worker coroutines)")
    p.add_argument(
        "--streams-per-connection",
        type=int,
        default=0,
        help="cap on each connection's stream slots; 0 (default): ceil(concurrency / connections)",
    )
    p.add_argument(
        "--as-shipped",
        action="store_true",
        help="aioapns exactly as shipped: no per-connection stream cap, no slot-count correction "
        "(about 2 streams in flight per connection against the sandbox or APNs)",
    )
    p.add_argument("--max-connection-attempts", type=int, default=5, help="aioapns' retry count (its default: 5)")
    p.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    p.add_argument(
        "--no-warmup",
        dest="warmup",
        action="store_false",
        help="measure from the first push (default: measure from when every worker has had one result)",
    )
    p.add_argument(
        "--no-preopen",
        dest="preopen",
        action="store_false",
        help="let aioapns' pool open connections on demand (default: open --connections of them first)",
    )
    p.add_argument("--warmup-timeout", type=float, default=60.0, help="start measuring after this long anyway (s)")
    p.add_argument("--stall-timeout", type=float, default=30.0, help="give up when nothing completes for this long (s)")
    args = p.parse_args(argv)
    for name in ("count", "connections", "concurrency", "payload_bytes", "max_connection_attempts"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.streams_per_connection < 0:
        p.error("--streams-per-connection must be at least 0")
    if not args.streams_per_connection:
        args.streams_per_connection = math.ceil(args.concurrency / args.connections)
    url = urlsplit(args.apns_url)
    if url.scheme != "https" or not url.hostname or not url.port:
        p.error("--apns-url must look like https://127.0.0.1:PORT")
    args.host, args.port = url.hostname, url.port
    with open(args.key) as f:
        args.key_pem = f.read()
    if args.as_shipped:  # aioapns as it comes: connections on demand, measured from the first push
        args.warmup = args.preopen = False
    if args.push_type == "voip" and not args.topic.endswith(".voip"):
        args.topic += ".voip"
    return args


# --- pointing aioapns at the sandbox -------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.connections_opened = 0
        self.connections_lost = 0
        self.goaways = 0
        self.alpn: Counter = Counter()
        self.settings_seen: Counter = Counter()  # MAX_CONCURRENT_STREAMS values received
        self.log_messages: Counter = Counter()  # aioapns' own INFO+ log lines, by template


def sandbox_protocol_class(host: str, port: int, streams_cap: int | None, stats: Stats):
    """aioapns' development protocol, pointed at the sandbox.

    streams_cap None: aioapns exactly as shipped (only host and port differ). A number: each
    connection's stream slots are capped at it and the slot count is kept right when the server
    raises SETTINGS_MAX_CONCURRENT_STREAMS (see set_slot_bound)."""

    class SandboxProtocol(APNsDevelopmentClientProtocol):
        APNS_SERVER = host  # also the `host` header and the TLS server name verified
        APNS_PORT = port

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if streams_cap is not None:
                # aioapns starts every connection with 1000 slots (until the server's SETTINGS).
                set_slot_bound(self.free_channels, min(self.free_channels.bound, streams_cap))

        def connection_made(self, transport):
            stats.connections_opened += 1
            ssl_object = transport.get_extra_info("ssl_object")
            stats.alpn[ssl_object.selected_alpn_protocol() if ssl_object else None] += 1
            super().connection_made(transport)

        def on_remote_settings_changed(self, changed_settings):
            if streams_cap is None:
                return super().on_remote_settings_changed(changed_settings)
            for setting in changed_settings.values():  # aioapns' own logic, capped and corrected
                if setting.setting == SettingCodes.MAX_CONCURRENT_STREAMS:
                    stats.settings_seen[setting.new_value] += 1
                    set_slot_bound(self.free_channels, min(setting.new_value, streams_cap))

        def on_connection_terminated(self, event):
            stats.goaways += 1
            super().on_connection_terminated(event)

        def connection_lost(self, exc):
            stats.connections_lost += 1
            super().connection_lost(exc)

    return SandboxProtocol


def set_slot_bound(channels, new_bound: int) -> None:
    """What aioapns' DynamicBoundedSemaphore.bound setter means to do, without its slip.

    aioapns 4.0 raises the bound with `release()` calls made *before* it stores the new bound,
    and its release() caps the count at the stored (old) bound. When the bound goes up while
    every slot is taken (value <= 0), which is what happens with APNs and the sandbox (SETTINGS
    MAX_CONCURRENT_STREAMS 1 until a provider token verifies, then 1000, arriving while the
    first request is in flight), the count ends at 1 instead of new_bound - old_bound: the
    connection then keeps 2 streams in flight for good, whatever the server allows. Here the
    bound is stored first, so each release() adds one slot (and wakes one waiter)."""
    old_bound = channels.bound
    if new_bound > old_bound:
        channels._bound_value = new_bound
        for _ in range(new_bound - old_bound):
            channels.release()
    elif new_bound < old_bound:
        channels._value -= old_bound - new_bound
        channels._bound_value = new_bound


def sandbox_ssl_context(ca_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    context.set_alpn_protocols(["h2"])
    return context


class CountingHandler(logging.Handler):
    def __init__(self, stats: Stats) -> None:
        super().__init__(logging.INFO)
        self.stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        self.stats.log_messages[f"{record.levelname}: {record.msg}"] += 1


# --- payloads ------------------------------------------------------------------------------------


def wire_size(message: dict) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode())  # what aioapns sends


def filler(n: int) -> str:
    return base64.urlsafe_b64encode(os.urandom(n)).decode().rstrip("=")[:n] if n > 0 else ""


def make_message(push_type: str, size: int) -> dict:
    if push_type == "alert":
        message = {
            "aps": {
                "alert": {"title": "New message", "body": "You have a new message"},
                "mutable-content": 1,
            },
            "e": "",
        }
    else:
        message = {"type": "call", "call_id": "c-0123456789abcdef", "caller_name": "Ada", "e": ""}
    message["e"] = filler(size - wire_size(message))
    return message


# --- the run -------------------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest rank."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


async def run(args: argparse.Namespace, stats: Stats) -> dict:
    client = APNs(
        key=args.key_pem,
        key_id=args.key_id,
        team_id=args.team_id,
        topic=args.topic,
        use_sandbox=True,
        ssl_context=sandbox_ssl_context(args.ca),
        max_connections=args.connections,
        max_connection_attempts=args.max_connection_attempts,
        err_func=no_error_log,  # failures are counted below instead of logged one by one
    )
    client.pool.protocol_class = sandbox_protocol_class(
        args.host, args.port, None if args.as_shipped else args.streams_per_connection, stats
    )

    message = make_message(args.push_type, args.payload_bytes)
    push_type = PushType.ALERT if args.push_type == "alert" else PushType.VOIP
    priority = 5 if args.push_type == "alert" else 10
    token, topic = args.token, args.topic
    n_workers = min(args.concurrency, args.count)
    perf = time.perf_counter

    latencies: list[float] = []  # measured pushes only
    reasons: Counter = Counter()
    warmup_reasons: Counter = Counter()
    in_flight: list[int] = []  # requests awaiting a response, all connections, sampled each 0.5 s
    shown = 0
    st = {
        "measuring": not args.warmup,
        "started": 0,  # measured pushes handed to aioapns
        "ok": 0,
        "failed": 0,
        "completed": 0,  # every push, warm-up included (for the stall watchdog)
        "warmup_pushes": 0,
        "warmed_workers": 0,
        "t_begin": perf(),
        "t_measure": perf(),
        "cpu_measure": time.process_time(),
        "t_last": None,
    }

    def start_measuring(why: str) -> None:
        st["measuring"] = True
        st["t_measure"] = perf()
        st["cpu_measure"] = time.process_time()
        if args.warmup:
            print(
                f"bench-aioapns: warm-up done ({why}) after {st['warmup_pushes']} pushes, "
                f"{st['t_measure'] - st['t_begin']:.2f} s, {stats.connections_opened} connection(s) open",
                file=sys.stderr,
            )

    def failure(text: str, measured: bool) -> None:
        nonlocal shown
        (reasons if measured else warmup_reasons)[text] += 1
        if measured:
            st["failed"] += 1
        if shown < FAILURES_SHOWN:
            shown += 1
            print(f"bench-aioapns: push failed{'' if measured else ' (warm-up)'}: {text}", file=sys.stderr)

    async def worker() -> None:
        first = True
        while True:
            measured = st["measuring"]
            if measured:
                if st["started"] >= args.count:
                    return
                st["started"] += 1
            else:
                st["warmup_pushes"] += 1
            request = NotificationRequest(
                device_token=token, message=message, priority=priority, push_type=push_type, apns_topic=topic
            )
            started = perf()
            try:
                result = await client.send_notification(request)
                error = None
            except Exception as caught:  # noqa: BLE001 (MaxAttemptsExceeded, h2 errors, ...: all count)
                result, error = None, caught
            finished = perf()
            st["completed"] += 1
            if measured:
                latencies.append(finished - started)
                st["t_last"] = finished
            if error is not None:
                failure(f"exception {type(error).__name__}: {error}".rstrip(": "), measured)
            elif result.status != "200":
                failure(f"status {result.status} {result.description}", measured)
            elif measured:
                st["ok"] += 1
            if first:
                first = False
                st["warmed_workers"] += 1
                if not st["measuring"] and st["warmed_workers"] == n_workers:
                    start_measuring(f"all {n_workers} workers have had a result")

    async def watchdog(workers: list[asyncio.Future]) -> None:
        last, since = -1, time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            if st["measuring"]:
                in_flight.append(sum(len(connection.requests) for connection in client.pool.connections))
            elif perf() - st["t_begin"] > args.warmup_timeout:
                start_measuring(f"--warmup-timeout, {st['warmed_workers']} of {n_workers} workers had a result")
            if st["completed"] != last:
                last, since = st["completed"], time.monotonic()
            elif time.monotonic() - since > args.stall_timeout:
                print(f"bench-aioapns: nothing completed for {args.stall_timeout:g} s; giving up", file=sys.stderr)
                for task in workers:
                    task.cancel()
                return

    if args.preopen:
        # aioapns' pool opens a connection only when every open one is busy at the instant a send
        # asks for one, which under steady load rarely happens after the first one or two; open
        # them here with the pool's own method, as acquire() would.
        for _ in range(args.connections - len(client.pool.connections)):
            client.pool.connections.append(await client.pool.create_connection())

    workers = [asyncio.ensure_future(worker()) for _ in range(n_workers)]
    dog = asyncio.ensure_future(watchdog(workers))
    await asyncio.gather(*workers, return_exceptions=True)
    end = st["t_last"] or perf()
    seconds = end - st["t_measure"]
    cpu = time.process_time() - st["cpu_measure"]
    dog.cancel()
    client.pool.close()
    await asyncio.sleep(0.05)  # let the transports close

    unfinished = args.count - st["ok"] - st["failed"]
    if unfinished:
        reasons["unfinished (stalled)"] += unfinished
        st["failed"] += unfinished
    latencies.sort()
    result = {
        "client": "aioapns",
        "aioapns": metadata.version("aioapns"),
        "uvloop": metadata.version("uvloop") if args.loop == "uvloop" else None,
        "count": args.count,
        "ok": st["ok"],
        "failed": st["failed"],
        "seconds": round(seconds, 3),
        "pushes_per_second": round(st["ok"] / seconds, 1) if seconds > 0 else 0.0,
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 3),
        "connections": args.connections,
        "concurrency": args.concurrency,
        "push_type": args.push_type,
        # extras
        "max_ms": round(latencies[-1] * 1000, 3) if latencies else None,
        "payload_bytes": wire_size(message),
        "streams_per_connection": None if args.as_shipped else args.streams_per_connection,
        "aioapns_slots": "as-shipped" if args.as_shipped else "corrected",
        "connections_opened": stats.connections_opened,
        "warmup_pushes": st["warmup_pushes"],
        "warmup_seconds": round(st["t_measure"] - st["t_begin"], 3),
        "client_cpu_seconds": round(cpu, 2),
        "python": sys.version.split()[0],
    }
    summary = {
        "failures_by_reason": dict(reasons),
        "warmup_failures_by_reason": dict(warmup_reasons),
        "connections_opened": stats.connections_opened,
        "connections_lost": stats.connections_lost,
        "goaways": stats.goaways,
        "alpn": {str(k): v for k, v in stats.alpn.items()},
        "max_concurrent_streams_settings": dict(stats.settings_seen),
        "aioapns_log": dict(stats.log_messages),
        "in_flight_sampled": {
            "mean": round(sum(in_flight) / len(in_flight), 1) if in_flight else None,
            "max": max(in_flight, default=None),
        },
        "client_cpu_percent_of_one_core": round(100 * cpu / seconds, 1) if seconds > 0 else None,
    }
    print(f"bench-aioapns: {json.dumps(summary)}", file=sys.stderr)
    return result


async def no_error_log(request, result) -> None:
    pass


def main() -> int:
    args = parse_args()
    stats = Stats()
    log = logging.getLogger("aioapns")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(CountingHandler(stats))

    if args.loop == "uvloop":
        import uvloop

        result = uvloop.run(run(args, stats))
    else:
        result = asyncio.run(run(args, stats))
    print(json.dumps(result), flush=True)
    return 0 if result["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
