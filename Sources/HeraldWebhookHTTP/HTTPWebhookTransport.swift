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

    /// - Parameters:
    ///   - client: the HTTP client; the process-wide shared one when not given.
    ///   - timeout: how long a receiver has to answer.
    public init(client: HTTPClient = .shared, timeout: Duration = .seconds(10)) {
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
