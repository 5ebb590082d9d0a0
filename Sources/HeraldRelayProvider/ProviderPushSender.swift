public import AsyncHTTPClient
import Foundation
import HeraldProviderAPI
public import HeraldPush
public import Logging
public import NIOCore
import NIOHTTP1

/// A remote `herald provider`: pushes go as batches to `POST /v1/push/batch` with the bearer secret.
///
/// When the provider cannot be reached (no answer), every push of the batch is `unreachable`: the
/// dispatcher holds those networks' pushes until the provider answers again. When it answers
/// something other than a batch result, every push is `retryLater`.
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

    public func send(_ pushes: [Push]) async -> [PushOutcome] {
        var outcomes: [PushOutcome] = []
        outcomes.reserveCapacity(pushes.count)
        var start = 0
        while start < pushes.count {
            let end = min(start + ProviderBatch.maximumCount, pushes.count)
            outcomes += await sendBatch(Array(pushes[start..<end]))
            start = end
        }
        return outcomes
    }

    private func sendBatch(_ pushes: [Push]) async -> [PushOutcome] {
        do {
            var request = HTTPClientRequest(url: url + "/v1/push/batch")
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer " + secret)
            request.headers.add(name: "content-type", value: "application/json")
            let body = try JSONEncoder().encode(ProviderBatch(pushes: pushes.map(ProviderPush.init)))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: timeout)
            } catch {
                // No answer from the provider: to the dispatcher, the batch's networks are out of
                // reach (it holds their pushes and probes until the provider answers again).
                logger.warning("cannot reach the provider", metadata: ["error": "\(error)"])
                return Array(repeating: .unreachable(reason: "provider unreachable: \(error)"), count: pushes.count)
            }
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
            return result.results.map(\.pushOutcome)
        } catch {
            logger.warning("cannot reach the provider", metadata: ["error": "\(error)"])
            return Array(repeating: .retryLater(reason: "provider unreachable"), count: pushes.count)
        }
    }
}
