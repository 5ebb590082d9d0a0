import ArgumentParser
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldServer
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `herald bench`: load generators for Herald's parts.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load generators (see docs/performance.md).",
        subcommands: [Provider.self, Relay.self]
    )
}

extension BenchCommand {
    /// `herald bench provider`: the APNs client at full speed against an APNs (the sandbox).
    struct Provider: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "provider",
            abstract: "Send many pushes through the provider's APNs client and report pushes/s and latency.",
            discussion: "Prints one JSON line, in the form of scripts/bench-aioapns.py, for side-by-side comparison."
        )

        @OptionGroup var apns: APNsOptions

        @Option(help: "The device token to push to.")
        var token: String

        @Option(help: "The bundle id (the topic; VoIP pushes use <bundle>.voip).")
        var bundle: String

        @Option(name: .customLong("push-type"), help: "alert or voip.")
        var pushType: String = "alert"

        @Option(name: .customLong("payload-bytes"), help: "The approximate size of each push's JSON body.")
        var payloadBytes: Int = 500

        @Option(help: "How many pushes to send.")
        var count: Int = 200_000

        @Option(help: "Pushes in flight at once.")
        var concurrency: Int = 400

        @Option(help: "Pushes handed to the client per call (1 for one call per push).")
        var batch: Int = 50

        func validate() throws {
            guard ["alert", "voip"].contains(pushType) else {
                throw ValidationError("--push-type must be alert or voip")
            }
            guard count > 0, concurrency > 0, batch > 0 else {
                throw ValidationError("--count, --concurrency and --batch must be positive")
            }
            guard (100...5_000).contains(payloadBytes) else {
                throw ValidationError("--payload-bytes must be 100 to 5000")
            }
        }

        func run() async throws {
            var logger = Logger(label: "herald.bench")
            logger.logLevel = .error
            let (client, clientServices) = try makeClient(logger: logger)
            let body = ByteBuffer(string: payload())
            let expiration = Int64(Date().timeIntervalSince1970) + 3600
            let concurrency = min(concurrency, count)
            let token = token
            let bundle = bundle

            try await HeraldServer.withServices(clientServices, logger: logger) {
                // A warm-up push opens the connections and raises their stream limits.
                _ = await client.send(.alert(to: token, bundleID: bundle, payload: body))
                let clock = ContinuousClock()
                let started = clock.now
                let batch = min(batch, concurrency)
                let workers = max(1, concurrency / batch)
                let (latencies, failures) = await sendAll(
                    body,
                    expiration: expiration,
                    with: client,
                    workers: workers,
                    batch: batch
                )
                let seconds = Double((clock.now - started).nanoseconds) / 1e9
                let pick = { (q: Double) in
                    Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))]) / 1e6
                }
                let line: [String: any Sendable] = [
                    "client": "herald", "count": count, "ok": count - failures, "failed": failures,
                    "seconds": (seconds * 1000).rounded() / 1000,
                    "pushes_per_second": (Double(count) / seconds).rounded(),
                    "p50_ms": (pick(0.5) * 100).rounded() / 100, "p99_ms": (pick(0.99) * 100).rounded() / 100,
                    "connections": apns.connections ?? 2, "concurrency": workers * batch, "batch": batch,
                    "push_type": pushType,
                ]
                let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            }
        }

        /// The APNs client the options describe.
        /// The one APNs client the bench sends with, and the services it needs running.
        private func makeClient(logger: Logger) throws -> (APNsClient, [any Service]) {
            var resolved = try apns.resolved()
            // One client, at the key's URL: the bench measures one APNs host.
            resolved.urls = [:]
            let clients = try HeraldServerError.validating {
                try ProviderClients.make(
                    apnsKeys: [resolved],
                    fcmAccounts: [],
                    logger: logger,
                    group: MultiThreadedEventLoopGroup.singleton
                )
            }
            guard let client = clients.stage.apns else { throw ValidationError("no APNs client was made") }
            return (client, clients.services)
        }

        /// The push's payload, filled out to about `payloadBytes`.
        private func payload() -> String {
            let filler = String(repeating: "A", count: max(0, payloadBytes - 100))
            return pushType == "voip"
                ? #"{"aps":{},"c":"\#(filler)"}"#
                : #"{"aps":{"alert":{"title":"New message","body":"You have a new message"},"mutable-content":1},"e":"\#(filler)"}"#
        }

        /// Sends `count` pushes from `workers` workers, `batch` at a time: every push's latency
        /// (its batch's), sorted, and how many were not delivered.
        private func sendAll(
            _ body: ByteBuffer,
            expiration: Int64,
            with client: APNsClient,
            workers: Int,
            batch: Int
        ) async -> ([Int64], Int) {
            let count = count
            let voip = pushType == "voip"
            let token = token
            let bundle = bundle
            let clock = ContinuousClock()
            return await withTaskGroup(of: ([Int64], Int).self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        var latencies: [Int64] = []
                        var failures = 0
                        // Worker w sends the batches w, w + workers, w + 2·workers, ...
                        var first = worker * batch
                        while first < count {
                            let size = min(batch, count - first)
                            let pushes: [APNsNotification] = (0..<size).map { _ in
                                voip
                                    ? .voip(to: token, bundleID: bundle, payload: body, expiration: expiration)
                                    : .alert(to: token, bundleID: bundle, payload: body)
                            }
                            let sent = clock.now
                            let results =
                                size == 1 ? [await client.send(pushes[0])] : await client.send(batch: pushes)
                            let elapsed = (clock.now - sent).nanoseconds
                            for result in results {
                                if !result.isDelivered { failures += 1 }
                                latencies.append(elapsed)
                            }
                            first += workers * batch
                        }
                        return (latencies, failures)
                    }
                }
                var all: [Int64] = []
                all.reserveCapacity(count)
                var failures = 0
                for await (part, failed) in group {
                    all += part
                    failures += failed
                }
                return (all.sorted(), failures)
            }
        }
    }
}
