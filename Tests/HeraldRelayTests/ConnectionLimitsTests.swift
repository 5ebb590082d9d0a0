import HeraldHTTPSupport
import HeraldSimulation
import HeraldTestSupport
import Testing

/// Hostile HTTP on the relay's port, over real sockets (#14, items 3 and 4): slow heads, idle
/// connections, one connection too many, conflicting `Content-Length`. Each wait has a deadline
/// far above the configured limit and far below the old behaviour (open for minutes, or no answer
/// at all), so it is the limit that ends the connection.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionLimitsTests {
    static func limits(
        headerRead: Duration = .seconds(30),
        idle: Duration = .seconds(30),
        connections: Int = 512
    ) -> RelayHarness.Setup {
        var setup = RelayHarness.Setup()
        setup.http = HTTPConnectionLimits(headerReadTimeout: headerRead, idleTimeout: idle, maxConnections: connections)
        return setup
    }

    @Test("half a header block gets 408 with the JSON error and is closed once the header timeout passes")
    func halfAHeaderBlock() async throws {
        try await RelayHarness.with(Self.limits(headerRead: .milliseconds(300))) { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.port)
            try await connection.send("GET /health HTTP/1.1\r\nhost: relay\r\nx-slow: ")
            let answer = try await connection.answer()
            #expect(answer.status == 408)
            #expect(answer.json?["error"] as? String == "request_timeout")
            #expect(answer.headers["connection"] == "close")
            _ = try await connection.closedByServer()
        }
    }

    @Test("a connection that sends nothing is closed once the header timeout passes")
    func silentConnection() async throws {
        try await RelayHarness.with(Self.limits(headerRead: .milliseconds(300))) { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.port)
            #expect(try await connection.answer().status == 408)
            _ = try await connection.closedByServer()
        }
    }

    @Test("on a kept-alive connection the next request's head is timed from its first byte")
    func slowSecondHead() async throws {
        try await RelayHarness.with(Self.limits(headerRead: .milliseconds(300))) { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.port)
            try await connection.send("GET /health HTTP/1.1\r\nhost: relay\r\n\r\n")
            #expect(try await connection.answer().status == 200)
            try await connection.send("GET /health HTTP/1.1\r\nhost: re")
            #expect(try await connection.answer().status == 408)
            _ = try await connection.closedByServer()
        }
    }

    @Test("a kept-alive connection without a next request is closed after the idle timeout")
    func idleConnection() async throws {
        try await RelayHarness.with(Self.limits(idle: .milliseconds(300))) { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.port)
            try await connection.send("GET /health HTTP/1.1\r\nhost: relay\r\n\r\n")
            #expect(try await connection.answer().status == 200)
            #expect(try await connection.closedByServer().isEmpty)
        }
    }

    @Test("one connection over the cap gets 503 with the JSON error and is closed; a freed place is taken again")
    func connectionCap() async throws {
        try await RelayHarness.with(Self.limits(connections: 2)) { harness in
            var held: [RawHTTPConnection] = []
            for _ in 0..<2 {
                let connection = try await RawHTTPConnection.connect(port: harness.port)
                // Answered: the relay has counted it.
                try await connection.send("GET /health HTTP/1.1\r\nhost: relay\r\n\r\n")
                #expect(try await connection.answer().status == 200)
                held.append(connection)
            }
            let third = try await RawHTTPConnection.connect(port: harness.port)
            // The relay answers a connection over the cap as soon as it opens and closes it: the
            // request may find it closed already (I/O on a closed channel), the answer is there.
            try? await third.send("GET /health HTTP/1.1\r\nhost: relay\r\n\r\n")
            let refused = try await third.answer()
            #expect(refused.status == 503)
            #expect(refused.json?["error"] as? String == "unavailable")
            _ = try await third.closedByServer()

            await held[0].close()
            // The relay frees the place when it sees the close; no signal says when.
            try await eventually("a freed place") {
                let next = try await RawHTTPConnection.connect(port: harness.port)
                var status: Int?
                do {
                    try await next.send("GET /health HTTP/1.1\r\nhost: relay\r\n\r\n")
                    status = try await next.answer().status
                } catch {
                    // Refused and closed before the request was written.
                }
                await next.close()
                return status == 200
            }
            await held[1].close()
        }
    }

    @Test(
        "two Content-Length headers (equal or not) or a list get 400 naming the header, then the connection is closed",
        arguments: [
            "content-length: 2\r\ncontent-length: 2\r\n",
            "content-length: 2\r\ncontent-length: 3\r\n",
            "content-length: 2, 2\r\n",
        ]
    )
    func conflictingContentLength(headers: String) async throws {
        try await RelayHarness.with { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.port)
            try await connection.send(
                "POST /v1/messages HTTP/1.1\r\nhost: relay\r\nauthorization: Bearer \(RelayHarness.apiKey)\r\n"
                    + headers + "\r\n{}"
            )
            let answer = try await connection.answer()
            #expect(answer.status == 400)
            #expect(answer.json?["error"] as? String == "invalid_field")
            #expect(answer.json?["field"] as? String == "content-length")
            #expect(answer.headers["connection"] == "close")
            _ = try await connection.closedByServer()
        }
    }
}
