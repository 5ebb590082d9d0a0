import AsyncHTTPClient
import Foundation
import HeraldCrypto
import HeraldObservability
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldServer
import HeraldSimulation
import HeraldStore
import HeraldTestSupport
import Logging
import NIOCore
import ServiceLifecycle
import Testing

@testable import HeraldStorePostgres

/// What an operator sees of a running relay: `/metrics` (every series documented, build and
/// process figures, HTTP requests by route pattern, the queue), the access log, and
/// `/health/live` and `/health/ready`.
@Suite("Observability", .timeLimit(.minutes(2)))
struct ObservabilityTests {
    @Test("APNs request latency is recorded for every push the batch path sends")
    func apnsLatencyFromBatches() async throws {
        try await RelayHarness.with { harness in
            let users = ["u1", "u2", "u3", "u4", "u5"]
            for user in users { _ = try await harness.phone(user: user) }
            var pushIDs: [String] = []
            for user in users {
                let reply = try await harness.call(
                    .POST,
                    "/v1/messages",
                    body: RelayFlowTests.message(to: user, text: "hi")
                )
                pushIDs += try reply.decode(IngestReceipt.self).pushes.map(\.pushID)
            }
            for id in pushIDs { try await harness.push(id, reaches: .delivered) }
            #expect(pushIDs.count == users.count)
            // The dispatcher sends through `APNsClient.send(batch:)`: every request it sent was
            // answered, so each one's latency is in the histogram.
            #expect(harness.metric("herald_apns_sent_total") == Double(users.count))
            #expect(harness.metric("herald_apns_request_duration_seconds_count") == Double(users.count))
        }
    }

    @Test(
        "/metrics: HELP and TYPE for every series, build info, process figures, HTTP requests by route pattern, the queue"
    )
    func metricsExposition() async throws {
        var setup = RelayHarness.Setup()
        setup.servesMetrics = true
        try await RelayHarness.with(setup) { harness in
            _ = try await harness.phone(user: "u1")
            let receipt = try await harness.call(.POST, "/v1/messages", body: RelayAPITests.message)
                .decode(IngestReceipt.self)
            let pushID = try #require(receipt.pushes.first).pushID
            try await harness.push(pushID, reaches: .delivered)
            #expect(try await harness.call(.GET, "/v1/pushes/\(pushID)").status == 200)
            #expect(try await harness.call(.GET, "/v1/no-such-thing/\(pushID)", auth: .none).status == 404)

            // The queue: a push that cannot be sent (APNs unreachable) waits; its age follows the
            // relay's clock.
            harness.sandbox.apnsServer.beUnreachable(for: .seconds(60))
            defer { harness.sandbox.apnsServer.endOutage() }
            let waiting = try await harness.call(.POST, "/v1/messages", body: RelayAPITests.message)
            #expect(waiting.status == 202)
            try await eventually("the relay to hold APNs as unreachable") {
                harness.metric(#"herald_relay_network_up{network="apns"}"#) == 0
            }
            harness.clock.advance(by: .seconds(90))

            let scrape = try await harness.call(.GET, "/metrics", auth: .none)
            #expect(scrape.status == 200)
            let text = scrape.text
            let exposition = Exposition(text)
            #expect(exposition.undocumented.isEmpty, "series without HELP or TYPE: \(exposition.undocumented)")
            #expect(exposition.samples.count > 20)

            #expect(
                exposition.value(#"herald_build_info{version="\#(BuildInfo.version)",swift="\#(BuildInfo.swift)"}"#)
                    == 1
            )
            #expect((exposition.value("process_resident_memory_bytes") ?? 0) > 1_000_000)
            #expect((exposition.value("process_open_fds") ?? 0) > 3)
            #expect((exposition.value("process_max_fds") ?? 0) >= (exposition.value("process_open_fds") ?? 0))
            #expect((exposition.value("process_cpu_seconds_total") ?? 0) > 0)
            let started = try #require(exposition.value("process_start_time_seconds"))
            #expect(abs(started - Date().timeIntervalSince1970) < 24 * 3600)
            #expect(exposition.types["process_cpu_seconds_total"] == "counter")

            // By the route's pattern, never the path with its ids.
            let pushes = #"herald_http_requests_total{method="GET",route="/v1/pushes/{id}",status="200"}"#
            #expect(exposition.value(pushes) == 1)
            #expect(
                exposition.value(#"herald_http_requests_total{method="GET",route="unmatched",status="404"}"#) == 1
            )
            #expect(
                exposition.value(#"herald_http_requests_total{method="POST",route="/v1/messages",status="202"}"#) == 2
            )
            #expect(
                exposition.value(
                    #"herald_http_request_duration_seconds_count{method="GET",route="/v1/pushes/{id}",status="200"}"#
                ) == 1
            )
            #expect(exposition.types["herald_http_request_duration_seconds"] == "histogram")
            #expect(!text.contains(pushID), "no push id in any label")

            // The dispatcher probes the held network now and then (it claims the push to try it),
            // so a scrape may find the push sending for a moment: scrape until it is queued.
            var queued = exposition
            try await eventually("a scrape with the push queued, not claimed by a probe") {
                guard let reply = try? await harness.call(.GET, "/metrics", auth: .none) else { return false }
                queued = Exposition(reply.text)
                return queued.value("herald_relay_queue_depth") == 1
                    && queued.value("herald_relay_pushes_sending") == 0
            }
            #expect(queued.value("herald_relay_store_up") == 1)
            let age = try #require(queued.value("herald_relay_oldest_queued_push_age_seconds"))
            #expect(age >= 90 && age < 120, "\(age)")
        }
    }

    @Test("every metric of the catalog is documented for operators in docs/relay.md")
    func catalogDocumented() throws {
        let docs = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../docs/relay.md"),
            encoding: .utf8
        )
        for entry in MetricCatalog.entries {
            #expect(docs.contains("`\(entry.name)`"), "\(entry.name) is not in docs/relay.md")
            #expect(!entry.help.isEmpty)
        }
    }

    @Test("one access line per request: method, route pattern, status, duration, bytes; no secret, no id")
    func accessLog() async throws {
        let capture = LogCapture()
        var setup = RelayHarness.Setup()
        setup.logger = capture.logger(label: "herald.test")
        try await RelayHarness.with(setup) { harness in
            let phone = try await harness.phone(user: "u1")
            let reply = try await harness.call(.GET, "/v1/devices/\(phone.deviceID)?secret=shh")
            #expect(reply.status == 200)
            func accessLines() -> [Substring] {
                capture.text.split(separator: "\n").filter { $0.hasPrefix("info herald.test request [") }
            }
            try await eventually("the access line") {
                accessLines().contains { $0.contains("/v1/devices/{id}") }
            }
            let line = try #require(accessLines().first { $0.contains("/v1/devices/{id}") })
            for field in [#""method": GET"#, #""status": 200"#, #""duration_ms": "#, #""bytes": "#] {
                #expect(line.contains(field), "\(field) in \(line)")
            }
            #expect(accessLines().count { $0.contains(#""route": /v1/activations"#) } == 1)
            let all = accessLines().joined(separator: "\n")
            #expect(!all.contains(phone.deviceID))
            #expect(!all.contains(RelayHarness.apiKey))
            #expect(!all.contains("shh"))
        }
    }

    @Test("/health/live answers 200; /health/ready 200 with the store answering")
    func healthEndpoints() async throws {
        try await RelayHarness.with { harness in
            let live = try await harness.call(.GET, "/health/live", auth: .none)
            #expect(live.status == 200 && live.json["status"] as? String == "live")
            let ready = try await harness.call(.GET, "/health/ready", auth: .none)
            #expect(ready.status == 200 && ready.json["status"] as? String == "ready", "\(ready.text)")
            let index = try await harness.call(.GET, "/v1", auth: .none)
            #expect(index.json["ready"] as? String == "/health/ready")
            #expect(index.json["live"] as? String == "/health/live")
        }
    }

    @Test("/health/ready turns 503 while PostgreSQL refuses the relay's connections, and 200 once it takes them again")
    func readinessFollowsTheDatabase() async throws {
        let url = try #require(
            ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"],
            "HERALD_TEST_POSTGRES_URL is not set: run through scripts/with-postgres.sh"
        )
        var logger = Logger(label: "test.ready")
        logger.logLevel = .critical
        let base = try PostgresStoreConfiguration(url: url)
        try await PostgresStore.withOpen(configuration: base, logger: logger) { admin in
            let database =
                "herald_ready_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
            try await admin.execute(unsafeSQL: "CREATE DATABASE \(database)")
            var configuration = base
            configuration.database = database
            configuration.poolSize = 2
            configuration.connectTimeout = .seconds(1)
            let store = try await PostgresStore.open(configuration: configuration, logger: logger)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await TestMetrics.isolated { registry in
                    var parts = RelayNode.Parts(
                        store: store,
                        sender: UnansweredSender(),
                        masterKey: MasterKey.generate(),
                        apiKey: RelayHarness.apiKey
                    )
                    parts.metrics = registry
                    let ports = AsyncStream.makeStream(of: Int.self)
                    let node = try RelayNode(parts, logger: logger) { ports.continuation.yield($0) }
                    let group = ServiceGroup(services: [store] + node.services, logger: logger)
                    try await withThrowingTaskGroup(of: Void.self) { tasks in
                        tasks.addTask { try await group.run() }
                        var bound = ports.stream.makeAsyncIterator()
                        let baseURL = "http://127.0.0.1:\(await bound.next() ?? 0)"
                        func get(_ path: String) async throws -> (Int, String) {
                            let response = try await http.execute(
                                HTTPClientRequest(url: baseURL + path),
                                timeout: .seconds(10)
                            )
                            let body = try await response.body.collect(upTo: 1 << 20)
                            return (Int(response.status.code), String(buffer: body))
                        }
                        #expect(try await get("/health/ready").0 == 200)

                        try await admin.execute(unsafeSQL: "ALTER DATABASE \(database) ALLOW_CONNECTIONS false")
                        try await admin.execute(
                            unsafeSQL:
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)'"
                        )
                        // The store's state is PostgreSQL's, with no signal: polled.
                        try await eventually(
                            "/health/ready to answer 503",
                            timeout: .seconds(30),
                            every: .milliseconds(50)
                        ) {
                            try await get("/health/ready").0 == 503
                        }
                        let (status, body) = try await get("/health/ready")
                        #expect(
                            status == 503 && body.contains(#""status":"not_ready""#) && body.contains("store"),
                            "\(body)"
                        )
                        #expect(try await get("/health/live").0 == 200, "the process is alive all along")
                        let metrics = try await get("/metrics").1
                        #expect(TestMetrics.value("herald_relay_store_up", in: metrics) == 0)

                        try await admin.execute(unsafeSQL: "ALTER DATABASE \(database) ALLOW_CONNECTIONS true")
                        try await eventually(
                            "/health/ready to answer 200 again",
                            timeout: .seconds(30),
                            every: .milliseconds(50)
                        ) {
                            try await get("/health/ready").0 == 200
                        }
                        await group.triggerGracefulShutdown()
                        try await tasks.waitForAll()
                    }
                }
            } catch {
                try? await http.shutdown()
                await store.close()
                try? await admin.execute(unsafeSQL: "DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
                throw error
            }
            try await http.shutdown()
            await store.close()
            try? await admin.execute(unsafeSQL: "DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
        }
    }
}

/// A provider that never answers in time: nothing is queued in the readiness test, so it is
/// never asked.
private struct UnansweredSender: PushSender {
    func send(_ pushes: [Push]) async -> [PushOutcome] {
        pushes.map { _ in .retryLater(reason: "not sent in this test") }
    }
}

/// Prometheus text, parsed enough to check it: samples by series, and the families with `# HELP`
/// and `# TYPE`.
struct Exposition {
    var samples: [String: Double] = [:]
    var helps: [String: String] = [:]
    var types: [String: String] = [:]

    init(_ text: String) {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") {
                let rest = line.dropFirst(7)
                let name = rest.prefix { $0 != " " }
                helps[String(name)] = String(rest.dropFirst(name.count + 1))
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                if parts.count == 2 { types[String(parts[0])] = String(parts[1]) }
            } else if !line.hasPrefix("#"), let space = line.lastIndex(of: " ") {
                samples[String(line[..<space])] = Double(line[line.index(after: space)...])
            }
        }
    }

    func value(_ series: String) -> Double? { samples[series] }

    /// The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` are its own.
    func family(of series: String) -> String {
        let name = String(series.prefix { $0 != "{" })
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" { return base }
        }
        return name
    }

    /// Families with a sample and no non-empty `# HELP` or no `# TYPE`.
    var undocumented: Set<String> {
        Set(samples.keys.map(family).filter { (helps[$0] ?? "").isEmpty || types[$0] == nil })
    }
}
