import HeraldDomain

/// Why the client could not get an answer from APNs for a push.
public struct APNsClientError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case invalidNotification
        case timeout
        case queueFull
        case connectionLost
        case notProcessed
        case shutdown
        case connectFailed
        case signing
    }

    /// The kind and the words; equality and hashing look at the kind only.
    private let kind: ErrorKind<Code>
    /// A sentence for logs and operators; never contains payloads or tokens.
    public var message: String { kind.text }

    private init(_ code: Code, _ message: String) { kind = ErrorKind(code, message) }

    public var description: String { message }

    /// The push would be refused by APNs for its shape; not sent.
    public static func invalidNotification(_ detail: String) -> Self { Self(.invalidNotification, detail) }
    /// No answer within the request timeout (waiting for a connection included).
    public static let timeout = Self(.timeout, "APNs did not answer within the request timeout")
    /// Every connection is at its stream limit and the wait queue is full: back off.
    public static let queueFull = Self(.queueFull, "the APNs request queue is full")
    /// The connection closed before the answer came; APNs may or may not have the push.
    public static let connectionLost = Self(.connectionLost, "the connection to APNs was lost before the answer")
    /// APNs said (GOAWAY or REFUSED_STREAM) that it did not process the request: safe to resend.
    public static let notProcessed = Self(.notProcessed, "APNs did not process the request (GOAWAY or refused stream)")
    /// The client is shutting down.
    public static let shutdown = Self(.shutdown, "the APNs client is shutting down")
    /// No connection to APNs could be made.
    public static func connectFailed(_ detail: String) -> Self {
        Self(.connectFailed, "cannot connect to APNs: \(detail)")
    }
    /// The provider token could not be signed.
    public static func signing(_ detail: String) -> Self { Self(.signing, "cannot sign the provider token: \(detail)") }

    /// Whether no connection to APNs could be made: APNs is unreachable, not this push at fault.
    public var isUnreachable: Bool { kind.code == .connectFailed }

    /// Whether sending again (same apns-id) is the right reaction.
    public var isRetryable: Bool {
        switch kind.code {
        case .timeout, .queueFull, .connectionLost, .notProcessed, .connectFailed: true
        case .invalidNotification, .shutdown, .signing: false
        }
    }
}
