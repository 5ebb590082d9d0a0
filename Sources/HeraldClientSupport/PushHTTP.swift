public import AsyncHTTPClient
public import Foundation
public import NIOCore
public import NIOHTTP1
import NIOSSL

/// A network's answer to one request, read whole.
public struct HTTPAnswer: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data

    /// `Retry-After`, as seconds or as an HTTP date.
    public var retryAfter: Duration? { headers.first(name: "retry-after").flatMap(Self.retryAfter) }

    /// `Retry-After` as seconds or as an HTTP date; nil when it is neither.
    public static func retryAfter(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .seconds(max(0, Int64(date.timeIntervalSinceNow.rounded(.up))))
    }
}

/// No answer came: either no connection could be made (the network is unreachable, the request
/// never left) or the exchange broke after it did.
public struct PushTransportError: Error, Sendable, CustomStringConvertible {
    /// Whether no connection could be made at all (refused, timed out, TLS handshake failed).
    public let isUnreachable: Bool
    public let detail: String

    public var description: String { detail }
}

extension HTTPClient {
    /// The HTTP client a push sender posts with: HTTP/2 where the server offers it, the sandbox's
    /// CA instead of the system roots when given, and connections that fail at once.
    public static func pushSender(caCertificatePath: String?, group: any EventLoopGroup) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caCertificatePath { tls.trustRoots = .file(caCertificatePath) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10))
        // A connection that cannot be made fails the request at once (`unreachable`) instead of
        // holding it through the client's own reconnect backoff: the relay then holds the
        // network's pushes and probes every 250 ms, so its return is noticed at once.
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
    }

    /// Sends `request` and reads the answer's body (at most `limit` bytes). With `metrics`, the
    /// request is counted as sent, in flight and timed.
    public func answer(
        to request: HTTPClientRequest,
        timeout: Duration,
        limit: Int,
        metrics: PushClientMetrics? = nil
    ) async throws(PushTransportError) -> HTTPAnswer {
        metrics?.sent.increment()
        metrics?.inFlight.increment()
        defer { metrics?.inFlight.decrement() }
        let started = ContinuousClock.now
        do {
            let response = try await execute(request, timeout: TimeAmount(timeout))
            let body = try await response.body.collect(upTo: limit)
            metrics?.latency.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
            return HTTPAnswer(
                status: Int(response.status.code),
                headers: response.headers,
                body: Data(body.readableBytesView)
            )
        } catch {
            throw PushTransportError(isUnreachable: ConnectFailure.matches(error), detail: "\(error)")
        }
    }
}

/// `application/x-www-form-urlencoded`, as OAuth 2.0 token requests are sent.
public enum FormEncoding {
    /// The fields, in order, as a form body.
    public static func body(_ fields: KeyValuePairs<String, String>) -> String {
        fields.map { encode($0.key) + "=" + encode($0.value) }.joined(separator: "&")
    }

    /// RFC 3986's unreserved ASCII characters stay, the rest is percent-encoded
    /// (`CharacterSet.alphanumerics` would also keep non-ASCII letters).
    public static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}

extension HTTPClientRequest {
    /// `POST url` with a JSON body, authorized by an OAuth 2.0 access token.
    public static func bearerJSON(url: String, accessToken: String, body: Data) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer " + accessToken)
        request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        request.body = .bytes(ByteBuffer(bytes: body))
        return request
    }
}
