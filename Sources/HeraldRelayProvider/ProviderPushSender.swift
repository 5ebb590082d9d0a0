public import AsyncHTTPClient
import Foundation
public import HeraldAPNs
import HeraldAPNsCore
public import HeraldProvider
public import HeraldRelay
public import Logging
public import NIOCore
import NIOHTTP1

/// The provider stage inside the relay's process: pushes go straight to the APNs client and the
/// FCM sender, with the same checks and answers as a remote `herald provider`.
public struct InProcessPushSender: PushSender {
    private let stage: ProviderStage

    public init(stage: ProviderStage) {
        self.stage = stage
    }

    /// APNs only.
    public init(client: APNsClient) {
        self.init(stage: ProviderStage(apns: client))
    }

    public func send(_ pushes: [OutgoingPush]) async -> [PushOutcome] {
        await stage.send(pushes.map(ProviderPush.init)).map(PushOutcome.init)
    }
}

/// A remote `herald provider`: pushes go as batches to `POST /v1/push/batch` with the bearer secret.
///
/// When the provider cannot be reached or answers something other than a batch result, every push
/// of the batch is `retryLater`: the outbox keeps it and the dispatcher tries again.
public struct RemotePushSender: PushSender {
    private let url: String
    private let secret: String
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let logger: Logger

    /// - Parameters:
    ///   - url: the provider's base URL (`http://127.0.0.1:2199`).
    public init(url: String, secret: String, client: HTTPClient, timeout: TimeAmount = .seconds(30), logger: Logger) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.secret = secret
        self.client = client
        self.timeout = timeout
        self.logger = logger
    }

    public func send(_ pushes: [OutgoingPush]) async -> [PushOutcome] {
        var outcomes: [PushOutcome] = []
        outcomes.reserveCapacity(pushes.count)
        var start = 0
        while start < pushes.count {
            let end = min(start + ProviderHTTPService.maximumBatch, pushes.count)
            outcomes += await sendBatch(Array(pushes[start..<end]))
            start = end
        }
        return outcomes
    }

    private func sendBatch(_ pushes: [OutgoingPush]) async -> [PushOutcome] {
        do {
            var request = HTTPClientRequest(url: url + "/v1/push/batch")
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer " + secret)
            request.headers.add(name: "content-type", value: "application/json")
            let body = try JSONEncoder().encode(ProviderBatch(pushes: pushes.map(ProviderPush.init)))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: 64 * 1024 * 1024)
            guard response.status == .ok else {
                logger.error("the provider refused a batch", metadata: ["status": "\(response.status.code)"])
                return Array(
                    repeating: .retryLater(reason: "provider answered \(response.status.code)"),
                    count: pushes.count
                )
            }
            let result = try JSONDecoder().decode(ProviderBatchResult.self, from: Data(bytes.readableBytesView))
            guard result.results.count == pushes.count else {
                return Array(repeating: .retryLater(reason: "provider answered a short batch"), count: pushes.count)
            }
            return result.results.map(PushOutcome.init)
        } catch {
            logger.warning("cannot reach the provider", metadata: ["error": "\(error)"])
            return Array(repeating: .retryLater(reason: "provider unreachable"), count: pushes.count)
        }
    }
}

extension ProviderPush {
    init(_ push: OutgoingPush) {
        let fcm = push.network == .fcm
        self.init(
            id: push.pushID,
            network: fcm ? .fcm : .apns,
            deviceToken: push.deviceToken,
            topic: push.topic,
            pushType: fcm ? nil : APNsPushType(rawValue: push.pushType) ?? .alert,
            priority: push.priority,
            expiration: push.expiration,
            collapseID: push.collapseID,
            apnsID: push.apnsID,
            payload: push.payload
        )
    }
}

extension PushOutcome {
    init(_ result: ProviderPushResult) {
        let reason = result.reason ?? "unknown"
        switch result.outcome {
        case "delivered": self = .delivered
        case "token_dead": self = .tokenDead(reason: reason)
        case "failed": self = .failed(reason: result.status.map { "\(reason) (\($0))" } ?? reason)
        case "expired": self = .expired
        default: self = .retryLater(reason: reason, after: result.retryAfter.map { .seconds($0) })
        }
    }
}
