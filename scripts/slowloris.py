#!/usr/bin/env python3
"""Slowloris against a running Herald HTTP port: opens N connections at once, each sending half a
request head, and reports how many were answered 503 at once (over the connection cap), how many
408 (header read timeout), and when the last one was closed by the server.

Usage: python3 scripts/slowloris.py PORT [CONNECTIONS]   (default 1000 connections, 127.0.0.1)
"""

import selectors
import socket
import sys
import time


def main() -> None:
    port = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    selector = selectors.DefaultSelector()
    start = time.monotonic()
    received: dict[socket.socket, bytes] = {}
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port))
        try:
            connection.sendall(b"GET /health HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
        except OSError:
            pass  # refused and closed before the half head was written
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ)
        received[connection] = b""
    statuses: dict[str, int] = {}
    last_close = 0.0
    while received and time.monotonic() - start < 120:
        for key, _ in selector.select(timeout=1):
            connection = key.fileobj
            try:
                chunk = connection.recv(65536)
            except OSError:
                chunk = b""
            if chunk:
                received[connection] += chunk
                continue
            status = received[connection][9:12].decode() or "closed without an answer"
            statuses[status] = statuses.get(status, 0) + 1
            last_close = time.monotonic() - start
            selector.unregister(connection)
            connection.close()
            del received[connection]
    print(f"{count} connections: {dict(sorted(statuses.items()))}, still open after 120 s: {len(received)}")
    print(f"last closed by the server after {last_close:.1f} s")


if __name__ == "__main__":
    main()
