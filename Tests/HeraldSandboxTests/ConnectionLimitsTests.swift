import HeraldHTTPSupport
import HeraldSimulation
import HeraldTestSupport
import Testing

/// The sandbox's listeners under hostile HTTP, over real sockets (#14, items 3 and 4): the
/// control API as the relay's port, the FCM listener (TLS from the first byte) by its cap and
/// idle timeout.
@Suite(.timeLimit(.minutes(1)))
struct SandboxConnectionLimitsTests {
    static func limits(
        headerRead: Duration = .seconds(30),
        idle: Duration = .seconds(30),
        connections: Int = 512
    ) -> SandboxHarness.Setup {
        SandboxHarness.Setup { configuration in
            configuration.http = HTTPConnectionLimits(
                headerReadTimeout: headerRead,
                idleTimeout: idle,
                maxConnections: connections
            )
        }
    }

    @Test("control API: half a header block gets 408 and is closed once the header timeout passes")
    func controlSlowHead() async throws {
        try await SandboxHarness.with(Self.limits(headerRead: .milliseconds(300))) { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.endpoints.controlPort)
            try await connection.send("GET /sandbox/inspection HTTP/1.1\r\nhost: sand")
            let answer = try await connection.answer()
            #expect(answer.status == 408)
            #expect(answer.json?["error"] as? String == "request_timeout")
            _ = try await connection.closedByServer()
        }
    }

    @Test("control API: two Content-Length headers get 400 naming the header, then the connection is closed")
    func controlConflictingContentLength() async throws {
        try await SandboxHarness.with { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.endpoints.controlPort)
            try await connection.send(
                "POST /sandbox/devices HTTP/1.1\r\nhost: sand\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}"
            )
            let answer = try await connection.answer()
            #expect(answer.status == 400)
            #expect(answer.json?["field"] as? String == "content-length")
            _ = try await connection.closedByServer()
        }
    }

    @Test("control API: one connection over the cap gets 503 and is closed")
    func controlCap() async throws {
        try await SandboxHarness.with(Self.limits(connections: 1)) { harness in
            let held = try await RawHTTPConnection.connect(port: harness.endpoints.controlPort)
            try await held.send("GET /sandbox/inspection HTTP/1.1\r\nhost: sand\r\n\r\n")
            #expect(try await held.answer().status == 200)
            let refused = try await RawHTTPConnection.connect(port: harness.endpoints.controlPort)
            #expect(try await refused.answer().status == 503)
            _ = try await refused.closedByServer()
            await held.close()
        }
    }

    @Test("FCM listener: one connection over the cap is closed at once (no answer: it speaks TLS)")
    func fcmCap() async throws {
        try await SandboxHarness.with(Self.limits(connections: 1)) { harness in
            let first = try await RawHTTPConnection.connect(port: harness.endpoints.fcmPort)
            let second = try await RawHTTPConnection.connect(port: harness.endpoints.fcmPort)
            // Each connection is counted on its own event loop, so either may be the one refused.
            let refused = try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, connection) in [first, second].enumerated() {
                    group.addTask {
                        _ = try await connection.closedByServer()
                        return index
                    }
                }
                defer { group.cancelAll() }
                return try await group.next()
            }
            #expect(refused != nil)
            await first.close()
            await second.close()
        }
    }

    @Test("FCM listener: a connection that never completes a TLS handshake is closed after the header timeout")
    func fcmSlowHandshake() async throws {
        try await SandboxHarness.with(Self.limits(headerRead: .milliseconds(300))) { harness in
            let connection = try await RawHTTPConnection.connect(port: harness.endpoints.fcmPort)
            _ = try await connection.closedByServer()
        }
    }
}
