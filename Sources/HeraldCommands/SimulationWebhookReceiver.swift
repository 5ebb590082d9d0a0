import Foundation
import HeraldEncoding
import HeraldRelay
import HeraldServer
import Hummingbird
import Logging
import ServiceLifecycle

/// The backend's end of a simulation's webhook: a loopback listener that checks each event's
/// signature as a contact center would and answers 204, so the simulated relay delivers its events
/// for real instead of queueing them for nobody.
struct SimulationWebhookReceiver: Sendable {
    /// The app's webhook, pointing here.
    let settings: WebhookSettings

    /// Runs `body` with a receiver listening on a free loopback port; stops it afterwards.
    static func with<T: Sendable>(
        logger: Logger,
        _ body: (SimulationWebhookReceiver) async throws -> T
    ) async throws -> T {
        let secret = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let router = Router()
        router.post("/herald-events") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            let timestamp = request.headers[.init("Herald-Timestamp")!].flatMap { Int64($0) } ?? 0
            let signature = request.headers[.init("Herald-Signature")!] ?? ""
            // A wrong signature is refused as a real receiver would: the relay retries it.
            guard
                WebhookSignature.isValid(
                    signature,
                    secret: Array(secret.utf8),
                    timestamp: timestamp,
                    body: Array(buffer: body)
                ), request.headers[.init("Herald-Event-Id")!] != nil
            else { return .unauthorized }
            // A receiver bounds what it parses as every Herald listener does: an event is one JSON
            // object within the request limits.
            guard (try? JSONCheck.check(Array(buffer: body), limits: .request)) != nil else { return .badRequest }
            return .noContent
        }
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in ports.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        return try await HeraldServer.withServices([app], logger: logger) {
            var bound = ports.stream.makeAsyncIterator()
            let port = await bound.next() ?? 0
            return try await body(
                SimulationWebhookReceiver(
                    settings: WebhookSettings(url: "http://127.0.0.1:\(port)/herald-events", secret: secret)
                )
            )
        }
    }
}
