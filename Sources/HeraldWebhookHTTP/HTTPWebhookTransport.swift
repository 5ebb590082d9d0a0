public import AsyncHTTPClient
import Foundation
public import HeraldRelay
import NIOCore

/// Posts webhook requests over HTTP(S) with AsyncHTTPClient: the transport `herald serve` and
/// `herald relay` deliver events with.
///
/// A 2xx status is the receiver's acceptance; any other status, and a connection that cannot be
/// made or times out, is reported for the dispatcher to retry. Redirects are not followed: a
/// receiver that moved is a configuration to fix, not a place to send signed events blindly.
public struct HTTPWebhookTransport: WebhookTransport {
    private let client: HTTPClient
    private let timeout: Duration

    /// The most connections `webhookClient` opens to one host: the dispatcher's default
    /// `concurrency`, twice over.
    public static let connectionsPerHost = 64

    /// The client webhook requests go through unless another is given: one per process, never
    /// shut down (as `HTTPClient.shared`), but set for webhooks rather than for browsing:
    /// - a connection the receiver refuses fails the attempt at once. The dispatcher retries with
    ///   its own backoff, and the event shows `pending` with its `next_attempt_at` meanwhile; the
    ///   shared client kept retrying the connection until the request's deadline, so each attempt
    ///   at a receiver that was down stayed `sending` for the whole `timeout`.
    /// - up to `connectionsPerHost` connections to one host (AsyncHTTPClient's default is 8): an
    ///   app's events all go to one host, and requests it holds open must not make the others
    ///   queue for a connection.
    /// - redirects are not followed, and answers are not decompressed (they are read and dropped).
    public static let webhookClient: HTTPClient = {
        var pool = HTTPClient.Configuration.ConnectionPool()
        pool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        pool.retryConnectionEstablishment = false
        let configuration = HTTPClient.Configuration(
            tlsConfiguration: nil,
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: .seconds(10), read: .seconds(30)),
            connectionPool: pool,
            proxy: nil,
            ignoreUncleanSSLShutdown: false,
            decompression: .disabled
        )
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// - Parameters:
    ///   - client: the HTTP client; `webhookClient` when not given.
    ///   - timeout: how long a receiver has to answer (the connection included).
    public init(client: HTTPClient = HTTPWebhookTransport.webhookClient, timeout: Duration = .seconds(10)) {
        self.client = client
        self.timeout = timeout
    }

    public func send(_ request: WebhookRequest) async -> WebhookResponse {
        var http = HTTPClientRequest(url: request.url)
        http.method = .POST
        for header in request.headers { http.headers.add(name: header.name, value: header.value) }
        http.headers.add(name: "User-Agent", value: "Herald-Webhooks/1")
        http.body = .bytes(ByteBuffer(bytes: request.body))
        do {
            let response = try await client.execute(http, timeout: .nanoseconds(timeout.nanosecondsValue))
            // Read (and drop) a little of the answer so the connection can be reused.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return .status(Int(response.status.code))
        } catch {
            return .unreachable(Self.reason(error))
        }
    }

    /// A short reason for a failed request (`connection refused`, `timed out` …), never the URL's
    /// query or any header.
    static func reason(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") || text.contains("readTimeout") {
            return "timed out"
        }
        if text.lowercased().contains("connection refused") || text.contains("ECONNREFUSED") {
            return "connection refused"
        }
        if let client = error as? HTTPClientError { return "HTTP client error: \(client.shortDescription)" }
        return "unreachable: \(String(text.prefix(120)))"
    }
}

extension HTTPClientError {
    fileprivate var shortDescription: String {
        String("\(self)".prefix(120))
    }
}

extension Duration {
    fileprivate var nanosecondsValue: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
