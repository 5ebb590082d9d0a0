import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCrypto
import HeraldDomain
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

extension BenchCommand {
    /// `herald bench relay`: messages over HTTP/1.1 keep-alive into a running `herald serve` whose
    /// pushes go to the sandbox.
    struct Relay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "relay",
            abstract: "Post messages to a running `herald serve` (sandbox mode) and report throughput and latency.",
            discussion: """
                Registers --users devices with the sandbox and activates them at the relay (plus \
                --extra-devices that get no messages, to fill the store), then posts --messages \
                messages, round robin over the users, from --connections HTTP/1.1 keep-alive \
                connections; --rate paces the posts (0: as fast as the relay answers). With several \
                --relay nodes of one cluster (one PostgreSQL database), the connections and the \
                activations are spread round robin over them. Reports \
                accepted messages/s, pushes/s reaching the sandbox (until the relay recorded the \
                last one delivered), and, for a sample of pushes, the time from the ingest call to \
                the relay's record that APNs (the sandbox) accepted it. Prints one JSON line.
                """
        )

        @Option(
            name: .customLong("relay"),
            help: ArgumentHelp(
                "A relay node's base URL (http://host:port); repeat it or give a comma list for the nodes of one cluster.",
                valueName: "url"
            )
        )
        var relayValues: [String] = []

        @Option(help: "The sandbox's control URL.")
        var sandbox: String = "http://127.0.0.1:2198"

        @Option(name: .customLong("api-key-file"), help: "The relay's API key file.")
        var apiKeyFile: String = "keys/api.key"

        @Option(help: "The app's bundle id, registered with the relay and the sandbox.")
        var bundle: String = "com.example.herald"

        @Option(help: "Users (one device each) that receive messages.")
        var users: Int = 10_000

        @Option(name: .customLong("extra-devices"), help: "More devices to activate (no messages), to fill the store.")
        var extraDevices: Int = 0

        @Option(help: "Messages to post.")
        var messages: Int = 100_000

        @Option(help: "HTTP/1.1 keep-alive connections (one request in flight on each).")
        var connections: Int = 32

        @Option(help: "Messages per second to aim for; 0 posts as fast as the relay answers.")
        var rate: Int = 0

        @Option(name: .customLong("sample-every"), help: "Measure ingest-to-acceptance for one message in N.")
        var sampleEvery: Int = 20

        @Option(help: "A label for this run in the JSON line.")
        var label: String = ""

        func validate() throws {
            guard users > 0, messages > 0, connections > 0, sampleEvery > 0, extraDevices >= 0, rate >= 0 else {
                throw ValidationError("counts must be positive")
            }
            _ = try BenchRelayNode.parse(relayValues)
        }

        func run() async throws {
            guard let keyText = try? String(contentsOfFile: apiKeyFile, encoding: .utf8) else {
                throw ValidationError("cannot read \(apiKeyFile) (start `herald serve` first)")
            }
            let apiKey = keyText.trimmingCharacters(in: .whitespacesAndNewlines)
            var configuration = HTTPClient.Configuration()
            configuration.httpVersion = .http1Only
            configuration.connectionPool = .init(
                idleTimeout: .seconds(60),
                concurrentHTTP1ConnectionsPerHostSoftLimit: connections
            )
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                try await bench(http: http, apiKey: apiKey)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }

        private func bench(http: HTTPClient, apiKey: String) async throws {
            let client = BenchHTTP(http: http, apiKey: apiKey)
            let nodes = try BenchRelayNode.parse(relayValues)
            // The nodes of one cluster share one outbox, and /health counts the outbox (the whole
            // database), so one node's count is the cluster's: summing over the nodes would count
            // each push once per node.
            let health = nodes[0].url + "/health"
            let startBaseline = try await client.json(.GET, health)
            let deliveredBefore = startBaseline["outbox_delivered"] as? Int ?? 0

            let setupStarted = ContinuousClock.now
            try await activateAll(on: nodes, client: client)
            let setupSeconds = Double((ContinuousClock.now - setupStarted).nanoseconds) / 1e9

            // The load.
            let started = ContinuousClock.now
            let startedWall = WallClock().now()
            let results = try await postAll(to: nodes, authorization: "Bearer " + apiKey, started: started)
            let ingestSeconds = Double((ContinuousClock.now - started).nanoseconds) / 1e9
            let accepted = results.reduce(0) { $0 + $1.accepted }
            let refused = results.reduce(0) { $0 + $1.refused }
            let pushes = results.reduce(0) { $0 + $1.pushes }

            let (delivered, deliveredAt) = try await waitForDeliveries(
                pushes,
                health: health,
                deliveredBefore: deliveredBefore,
                client: client
            )
            let pushSeconds = Double((deliveredAt - started).nanoseconds) / 1e9
            let latencies = try await toSandboxLatencies(of: results, nodes: nodes, client: client)
            let ingest = results.flatMap(\.ingestNanoseconds).sorted()
            func quantile<T: BinaryInteger>(_ values: [T], _ q: Double) -> Double {
                values.isEmpty ? 0 : Double(values[min(values.count - 1, Int(Double(values.count) * q))])
            }
            var acceptedPerRelay = Array(repeating: 0, count: nodes.count)
            for result in results { acceptedPerRelay[result.node] += result.accepted }
            let line: [String: any Sendable] = [
                "label": label, "relays": nodes.count, "accepted_per_relay": acceptedPerRelay, "users": users,
                "devices_activated": users + extraDevices,
                "setup_seconds": (setupSeconds * 10).rounded() / 10, "messages": messages, "accepted": accepted,
                "refused": refused, "rate_target": rate, "connections": connections,
                "accepted_per_second": (Double(accepted) / ingestSeconds).rounded(),
                "pushes": pushes, "pushes_delivered": delivered,
                "pushes_per_second": (Double(delivered) / pushSeconds).rounded(),
                "ingest_p50_ms": (quantile(ingest, 0.5) / 1e4).rounded() / 100,
                "ingest_p99_ms": (quantile(ingest, 0.99) / 1e4).rounded() / 100,
                "to_sandbox_samples": latencies.count,
                "to_sandbox_p50_ms": quantile(latencies, 0.5), "to_sandbox_p99_ms": quantile(latencies, 0.99),
                "started_at": startedWall,
            ]
            let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        }

        /// Devices: one per user, then the extras, activated in parallel, round robin over the nodes.
        private func activateAll(on nodes: [BenchRelayNode], client: BenchHTTP) async throws {
            let total = users + extraDevices
            let next = BenchCounter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<min(connections, 32) {
                    group.addTask {
                        while true {
                            let index = next.take()
                            if index >= total { return }
                            try await activate(index: index, relay: nodes[index % nodes.count].url, client: client)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }

        /// Posts every message, from `connections` keep-alive connections spread over the nodes:
        /// each connection's counts.
        private func postAll(
            to nodes: [BenchRelayNode],
            authorization: String,
            started: ContinuousClock.Instant
        ) async throws -> [WorkerResult] {
            let counter = BenchCounter()
            return try await withThrowingTaskGroup(of: WorkerResult.self) { group in
                for connectionIndex in 0..<connections {
                    group.addTask {
                        try await post(
                            on: nodes[connectionIndex % nodes.count],
                            index: connectionIndex % nodes.count,
                            counter: counter,
                            authorization: authorization,
                            started: started
                        )
                    }
                }
                var all: [WorkerResult] = []
                for try await part in group { all.append(part) }
                return all
            }
        }

        /// One connection's share of the messages: the next message not taken yet, paced by
        /// `rate`, until none is left.
        private func post(
            on node: BenchRelayNode,
            index nodeIndex: Int,
            counter: BenchCounter,
            authorization: String,
            started: ContinuousClock.Instant
        ) async throws -> WorkerResult {
            let host = node.host
            return try await KeepAliveConnection.run(host: host, port: node.port) { connection in
                var result = WorkerResult(node: nodeIndex)
                while true {
                    let index = counter.take()
                    if index >= messages { return result }
                    if rate > 0 {
                        let due = started + .nanoseconds(Int64(Double(index) / Double(rate) * 1e9))
                        if due > ContinuousClock.now { try await Task.sleep(until: due) }
                    }
                    let body =
                        #"{"to":"bench-user-\#(index % users)","from":{"id":"agent-1","name":"Agent One"},"conversation":"conv-\#(index % users)","text":"Message \#(index): your order has shipped and will arrive tomorrow."}"#
                    let sent = ContinuousClock.now
                    let reply = try await connection.post(
                        path: "/v1/messages",
                        host: host,
                        authorization: authorization,
                        body: body
                    )
                    result.ingestNanoseconds.append((ContinuousClock.now - sent).nanoseconds)
                    guard reply.status == 202 else {
                        result.refused += 1
                        continue
                    }
                    result.accepted += 1
                    let object =
                        (try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any]
                    let pushes = object?["pushes"] as? [[String: Any]] ?? []
                    result.pushes += pushes.count
                    if index % sampleEvery == 0, let id = pushes.first?["push_id"] as? String {
                        result.samples.append(id)
                    }
                }
            }
        }

        /// Waits until the relay recorded every push delivered (or a deadline): how many it
        /// recorded, and when it was last asked.
        private func waitForDeliveries(
            _ pushes: Int,
            health: String,
            deliveredBefore: Int,
            client: BenchHTTP
        ) async throws -> (Int, ContinuousClock.Instant) {
            var deliveredAt = ContinuousClock.now
            let deadline = ContinuousClock.now + .seconds(120)
            var delivered = 0
            while ContinuousClock.now < deadline {
                let counts = try await client.json(.GET, health)
                delivered = (counts["outbox_delivered"] as? Int ?? 0) - deliveredBefore
                deliveredAt = ContinuousClock.now
                if delivered >= pushes { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            return (delivered, deliveredAt)
        }

        /// Ingest to acceptance, from the relay's own record of each sampled push, sorted.
        private func toSandboxLatencies(
            of results: [WorkerResult],
            nodes: [BenchRelayNode],
            client: BenchHTTP
        ) async throws -> [Int64] {
            var latencies: [Int64] = []
            // Asked of any node: each answers for the pushes the others took.
            for (index, id) in results.flatMap(\.samples).enumerated() {
                let node = nodes[index % nodes.count]
                let status = try await client.json(.GET, node.url + "/v1/pushes/" + id, auth: true)
                guard let created = status["created_at"] as? Int64,
                    let history = status["history"] as? [[String: Any]],
                    let done = history.first(where: { $0["state"] as? String == "delivered" })?["at"] as? Int64
                else { continue }
                latencies.append(done - created)
            }
            latencies.sort()
            return latencies
        }

        private func activate(index: Int, relay: String, client: BenchHTTP) async throws {
            let device = try await client.json(
                .POST,
                sandbox + "/sandbox/devices",
                body: #"{"bundle_id":"\#(bundle)"}"#
            )
            guard let token = device["messaging_token"] as? String else {
                throw ValidationError("the sandbox did not give a token (is \(bundle) registered?): \(device)")
            }
            let user = index < users ? "bench-user-\(index)" : "bench-idle-\(index)"
            let key = KeyPair.generate().publicKey.base64
            let reply = try await client.post(
                relay + "/v1/activations",
                body:
                    #"{"user_id":"\#(user)","app":"\#(bundle)","platform":"ios","public_key":"\#(key)","messaging_token":"\#(token)"}"#
            )
            guard reply.status == 201 else {
                throw ValidationError("activation answered \(reply.status): \(String(describing: reply.object))")
            }
        }
    }
}

/// One relay node `herald bench relay` posts to.
struct BenchRelayNode: Sendable, Hashable {
    /// The base URL, without a trailing slash.
    var url: String
    var host: String
    var port: Int

    /// The nodes named by the `--relay` values, each one URL or a comma list; none given means
    /// the default `http://127.0.0.1:8080`.
    static func parse(_ values: [String]) throws(ValidationError) -> [BenchRelayNode] {
        let urls = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if urls.isEmpty { return [BenchRelayNode(url: "http://127.0.0.1:8080", host: "127.0.0.1", port: 8080)] }
        var nodes: [BenchRelayNode] = []
        for text in urls {
            // The load generator speaks plain HTTP/1.1 on its own connections: no TLS, no path.
            guard let url = URL(string: text), url.scheme == "http", let host = url.host, !host.isEmpty,
                let port = url.port, url.path.isEmpty || url.path == "/", url.query == nil
            else {
                throw ValidationError("--relay must be http://host:port (got \"\(text)\")")
            }
            let node = BenchRelayNode(url: "http://\(host):\(port)", host: host, port: port)
            guard !nodes.contains(node) else { throw ValidationError("--relay \(node.url) is given twice") }
            nodes.append(node)
        }
        return nodes
    }
}

private struct WorkerResult: Sendable {
    /// The index of the relay node this worker's connection went to.
    var node: Int
    var accepted = 0
    var refused = 0
    var pushes = 0
    var samples: [String] = []
    var ingestNanoseconds: [Int64] = []
}

/// A tiny JSON-over-HTTP helper for the load generator.
private struct BenchHTTP: Sendable {
    let http: HTTPClient
    let apiKey: String

    struct Reply: @unchecked Sendable {
        var status: Int
        var object: [String: Any]
    }

    func post(_ url: String, body: String) async throws -> Reply {
        try await send(.POST, url, body: body, auth: true)
    }

    func json(
        _ method: HTTPMethod,
        _ url: String,
        body: String? = nil,
        auth: Bool = false
    ) async throws -> [String: Any] {
        try await send(method, url, body: body, auth: auth).object
    }

    private func send(_ method: HTTPMethod, _ url: String, body: String?, auth: Bool) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if auth { request.headers.add(name: "authorization", value: "Bearer " + apiKey) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any]
        return Reply(status: Int(response.status.code), object: object ?? [:])
    }
}

/// Hands out 0, 1, 2, … to concurrent workers.
private final class BenchCounter: Sendable {
    private let value = Atomic<Int>(0)

    func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
}

/// One HTTP/1.1 keep-alive connection with one request in flight: the load generator's own
/// client, small enough that the relay, not the generator, is what the benchmark measures.
private struct KeepAliveConnection {
    struct Reply {
        var status: Int
        var body: [UInt8]
    }

    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var pending = ByteBuffer()

    static func run<T: Sendable>(
        host: String,
        port: Int,
        _ body: (inout KeepAliveConnection) async throws -> T
    ) async throws -> T {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var connection = KeepAliveConnection(outbound: outbound, inbound: inbound.makeAsyncIterator())
            return try await body(&connection)
        }
    }

    private init(
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    ) {
        self.outbound = outbound
        self.inbound = inbound
    }

    mutating func post(path: String, host: String, authorization: String, body: String) async throws -> Reply {
        var request = ByteBuffer()
        request.writeString(
            "POST \(path) HTTP/1.1\r\nhost: \(host)\r\nauthorization: \(authorization)\r\n"
                + "content-type: application/json\r\ncontent-length: \(body.utf8.count)\r\n\r\n"
        )
        request.writeString(body)
        try await outbound.write(request)
        return try await readReply()
    }

    /// Reads one response with a content-length body.
    private mutating func readReply() async throws -> Reply {
        while true {
            if let reply = try parse() { return reply }
            guard var more = try await inbound.next() else { throw ValidationError("the relay closed the connection") }
            pending.writeBuffer(&more)
        }
    }

    private mutating func parse() throws -> Reply? {
        let view = pending.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.count >= 12,
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else { throw ValidationError("not an HTTP response") }
        var length = 0
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        let headLength = end.upperBound - view.startIndex
        guard pending.readableBytes >= headLength + length else { return nil }
        pending.moveReaderIndex(forwardBy: headLength)
        let body = pending.readBytes(length: length) ?? []
        pending.discardReadBytes()
        return Reply(status: status, body: body)
    }
}
