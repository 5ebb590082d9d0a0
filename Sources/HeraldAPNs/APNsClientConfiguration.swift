import HeraldAPNsCore
public import NIOCore

/// How the provider reaches APNs and how hard it tries.
public struct APNsClientConfiguration: Sendable {
    /// Apple's production endpoint.
    public static let production = "https://api.push.apple.com"
    /// Apple's development endpoint.
    public static let development = "https://api.sandbox.push.apple.com"

    /// The host to connect to.
    public var host: String
    /// The port (Apple: 443 or 2197).
    public var port: Int
    /// The name checked against the server's certificate; nil skips SNI and name checks for IP
    /// literals.
    public var serverHostname: String?
    /// Extra CA certificate (PEM file) to trust, for the local sandbox. Nil trusts the system's.
    public var caCertificatePath: String?
    /// Connections kept open; each carries many concurrent streams.
    public var connections: Int = 2
    /// The most streams used per connection, even if the server allows more.
    public var maximumStreamsPerConnection: Int = 1000
    /// Requests that may wait for a free stream before new ones are refused with `queueFull`.
    public var maxQueuedRequests: Int = 10_000
    /// How long one attempt (waiting for a stream included) may take.
    public var requestTimeout: TimeAmount = .seconds(10)
    /// How long making a connection may take.
    public var connectTimeout: TimeAmount = .seconds(10)
    /// A connection idle this long is PINGed; one that stays silent another interval is closed.
    public var pingInterval: TimeAmount = .seconds(60)
    /// Attempts per push (the first included) for retryable answers.
    public var maximumAttempts: Int = 5
    /// The first retry waits up to this long (full jitter); each further one doubles it.
    public var retryBaseDelay: Duration = .milliseconds(100)
    /// No retry waits longer than this.
    public var retryMaximumDelay: Duration = .seconds(10)
    /// Reconnection backoff, the same way.
    public var reconnectBaseDelay: Duration = .milliseconds(100)
    public var reconnectMaximumDelay: Duration = .seconds(30)

    /// A configuration for `url` (`https://host[:port]`).
    public init(url: String) throws(APNsClientError) {
        guard url.hasPrefix("https://") else {
            throw .invalidNotification("the APNs URL must start with https:// (got \(url))")
        }
        var rest = Substring(url.dropFirst("https://".count))
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        var host = String(rest)
        var port = 443
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":"), let parsed = Int(after.dropFirst()) { port = parsed }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let parsed = Int(rest[rest.index(after: colon)...]) else {
                throw .invalidNotification("the port in \(url) is not a number")
            }
            host = String(rest[..<colon])
            port = parsed
        }
        guard !host.isEmpty, (1...65_535).contains(port) else {
            throw .invalidNotification("\(url) is not an https URL with a host and a valid port")
        }
        self.host = host
        self.port = port
        let isIPLiteral = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        serverHostname = isIPLiteral ? nil : host
    }
}
