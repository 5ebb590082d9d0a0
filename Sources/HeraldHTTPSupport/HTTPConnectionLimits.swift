/// How long one HTTP/1 connection may take over a request head, how long it may sit idle, and how
/// many connections one listener holds at once. Every Herald listener (relay, provider, sandbox
/// control and FCM) takes one; see `HTTPServerBuilder.guardedHTTP1(limits:)`.
public struct HTTPConnectionLimits: Sendable, Hashable {
    /// A request's head (request line and headers) must be complete this long after it started:
    /// after the connection opened, or after the first byte of a later request on a kept-alive
    /// connection. Past it the connection gets 408 and is closed (10 s: a real client sends a
    /// head in one packet; a slowloris client drips it).
    public var headerReadTimeout: Duration = .seconds(10)
    /// A connection with no request in progress is closed after this long (60 s: long enough for
    /// a client to reuse it for the next request, short enough that idle sockets do not pile up).
    public var idleTimeout: Duration = .seconds(60)
    /// Connections open at once; one more is answered 503 and closed at once (512: half the usual
    /// soft limit of 1,024 open files, leaving the rest to the database, the push networks'
    /// connections and the outgoing HTTP clients; raise it together with `ulimit -n`).
    public var maxConnections: Int = 512

    public init() {}

    public init(headerReadTimeout: Duration, idleTimeout: Duration, maxConnections: Int) {
        self.headerReadTimeout = headerReadTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }

    /// What is wrong with these limits, for a person; nil when they are usable.
    public var problem: String? {
        if !(Duration.milliseconds(10)...Duration.seconds(3600)).contains(headerReadTimeout) {
            return "the header read timeout must be between 0.01 and 3600 seconds"
        }
        if !(Duration.milliseconds(10)...Duration.seconds(86_400)).contains(idleTimeout) {
            return "the idle timeout must be between 0.01 and 86400 seconds"
        }
        if !(1...1_000_000).contains(maxConnections) {
            return "the connection cap must be between 1 and 1000000"
        }
        return nil
    }
}
