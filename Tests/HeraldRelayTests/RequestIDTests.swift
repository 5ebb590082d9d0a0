import Foundation
import HeraldObservability
import HeraldRelayAPI
import HeraldServer
import Logging
import Synchronization
import Testing

/// docs/operations.md, "Logs": every request has an id (`x-request-id`, the client's when usable),
/// its access line and every line logged while it is handled carry it as `request_id`, an
/// ingest's access line names its message and push ids, and each push's `push finished` line its
/// push id; numbers are JSON numbers. Through the relay's HTTP listener on loopback, logging as
/// `--log-format json` does.
@Suite("Request ids in the JSON log", .timeLimit(.minutes(2)))
struct RequestIDTests {
    /// The JSON records of a logger, parsed.
    final class Records: Sendable {
        private let lines = Mutex<[String]>([])

        /// A logger writing JSON lines here, with the request id provider the servers install.
        func logger() -> Logger {
            var logger = Logger(label: "herald.test") { label in
                JSONLogHandler(label: label, metadataProvider: AccessLog.metadataProvider) { line in
                    self.lines.withLock { $0.append(line) }
                }
            }
            logger.logLevel = .debug
            return logger
        }

        var text: String { lines.withLock { $0.joined() } }

        func all() throws -> [[String: Any]] {
            try lines.withLock { $0 }.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            }
        }

        /// The records whose metadata has `key` equal to `value`.
        func with(_ key: String, _ value: String) throws -> [[String: Any]] {
            try all().filter { ($0["metadata"] as? [String: Any])?[key] as? String == value }
        }
    }

    @Test("x-request-id: answered, on the access line with the message and push ids; the push's line by its id")
    func requestIDLinksAccessLineAndPushes() async throws {
        let records = Records()
        var setup = RelayHarness.Setup()
        setup.logger = records.logger()
        try await RelayHarness.with(setup) { harness in
            _ = try await harness.phone(user: "u1")
            let text = "Refund 4711 approved for the blue sofa"
            let reply = try await harness.call(
                .POST,
                "/v1/messages",
                body: RelayFlowTests.message(to: "u1", text: text),
                headers: [("x-request-id", "abc123")]
            )
            #expect(reply.status == 202)
            #expect(reply.headers.filter { $0.0 == "x-request-id" }.map(\.1) == ["abc123"])
            let receipt = try reply.decode(IngestReceipt.self)
            let pushID = try #require(receipt.pushes.first).pushID
            _ = try await harness.push(pushID, reaches: .delivered)

            // The access line is written before the answer: there now.
            let lines = try records.with("request_id", "abc123")
            let access = try #require(lines.first { $0["message"] as? String == "request" }, "\(lines)")
            let fields = try #require(access["metadata"] as? [String: Any])
            #expect(fields["route"] as? String == "/v1/messages")
            #expect(fields["message"] as? String == receipt.id)
            #expect(fields["pushes"] as? [String] == [pushID])
            // Typed: numbers, not strings.
            #expect((fields["status"] as? NSNumber)?.intValue == 202 && !(fields["status"] is String))
            #expect(
                (fields["push_count"] as? NSNumber)?.intValue == 1 && (fields["skipped"] as? NSNumber)?.intValue == 0
            )
            #expect(fields["duration_ms"] is NSNumber && fields["bytes"] is NSNumber, "\(fields)")
            #expect(records.text.contains(#""status":202"#))

            // The push's own lines, found by the id the access line gave; the dispatcher sent it
            // outside the request, so it carries no request id of its own.
            let finished = try #require(
                try records.with("push", pushID).first { $0["message"] as? String == "push finished" }
            )
            let outcome = try #require(finished["metadata"] as? [String: Any])
            #expect(outcome["outcome"] as? String == "delivered" && outcome["request_id"] == nil, "\(outcome)")
            #expect(outcome["attempts"] is NSNumber && outcome["latency_ms"] is NSNumber, "\(outcome)")

            #expect(!records.text.contains(text) && !records.text.contains("Dana Agent"))
        }
    }

    @Test("lines logged while a request is handled carry its id; an unusable client id is replaced")
    func requestIDOnEveryLineAndMadeWhenMissing() async throws {
        let records = Records()
        var setup = RelayHarness.Setup()
        setup.logger = records.logger()
        try await RelayHarness.with(setup) { harness in
            // A refusal names its kind on the access line, with the request's id.
            let refused = try await harness.call(
                .POST,
                "/v1/messages",
                body: #"{"to":"u1"}"#,
                headers: [("x-request-id", "req-400")]
            )
            #expect(refused.status == 400)
            let access = try #require(try records.with("request_id", "req-400").first)
            #expect((access["metadata"] as? [String: Any])?["error"] as? String == "invalid_field", "\(access)")

            // The activation's own line ("device activated"), logged by the relay deep inside
            // the request, has the request's id though nobody handed it a logger.
            _ = try await harness.phone(user: "u1")
            let activated = try #require(try records.all().first { $0["message"] as? String == "device activated" })
            let id = try #require((activated["metadata"] as? [String: Any])?["request_id"] as? String)
            let sameRequest = try records.with("request_id", id).map { $0["message"] as? String }
            #expect(sameRequest.contains("request"), "\(sameRequest)")

            // None given, a space, a comma of two joined headers, one too long: a fresh id each.
            var answered: [String] = []
            for given in [nil, "has space", "a,b", String(repeating: "x", count: AccessLog.maximumIDLength + 1)] {
                let reply = try await harness.call(
                    .GET,
                    "/health/live",
                    auth: .none,
                    headers: given.map { [("x-request-id", $0)] } ?? []
                )
                let id = try #require(reply.headers.first { $0.0 == "x-request-id" }?.1)
                #expect(id.count == 32 && id.allSatisfy(\.isHexDigit) && id != given, "\(id)")
                answered.append(id)
            }
            #expect(Set(answered).count == answered.count)
            // The longest id kept, and one of every character allowed.
            for given in [String(repeating: "y", count: AccessLog.maximumIDLength), "Az09-_.:/+="] {
                let reply = try await harness.call(
                    .GET,
                    "/health/live",
                    auth: .none,
                    headers: [("x-request-id", given)]
                )
                #expect(reply.headers.first { $0.0 == "x-request-id" }?.1 == given)
            }
        }
    }
}
