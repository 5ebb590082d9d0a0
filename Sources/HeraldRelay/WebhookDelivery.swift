import Crypto
import Foundation
import HeraldMacros
public import HeraldPush

/// An app's webhook as the backend gives it: the receiver's URL and the signing secret, in the
/// clear. The relay checks it and keeps the secret sealed with the master key.
@MemberwiseInit
public struct WebhookSettings: Sendable, Hashable {
    /// An http or https URL with a host.
    public var url: String
    /// At least `minimumSecretBytes` bytes (UTF-8).
    public var secret: String

    /// The shortest secret accepted: 32 bytes, the HMAC-SHA256 key size.
    public static let minimumSecretBytes = 32
}

/// One signed POST to a webhook receiver.
@MemberwiseInit
public struct WebhookRequest: Sendable, Hashable {
    public var url: String
    /// `Content-Type` and the `Herald-*` headers, in order, then `traceparent` for an event of
    /// a traced push (docs/tracing.md).
    public var headers: [WebhookHeader]
    /// The event's JSON body, exactly as signed.
    public var body: [UInt8]

    /// The value of a header, by name (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// One HTTP header.
public struct WebhookHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// How a POST to a receiver ended.
public enum WebhookResponse: Sendable, Hashable {
    /// The receiver answered with this HTTP status.
    case status(Int)
    /// No answer: the connection was refused or broke, or the request timed out (`reason` says).
    case unreachable(String)
}

/// Sends webhook requests: HTTP in production (HeraldWebhookHTTP), scripted in tests.
public protocol WebhookTransport: Sendable {
    /// Posts the request and reports how it ended; never throws (a failure is a response).
    func send(_ request: WebhookRequest) async -> WebhookResponse
}

/// The signature of a webhook request: `v1=` and the hex HMAC-SHA256, keyed with the app's
/// secret, of `"<timestamp>.<body>"` (the timestamp in Unix seconds, as in `Herald-Timestamp`).
public enum WebhookSignature {
    /// The `Herald-Signature` header's value.
    public static func header(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        var signed = Array("\(timestamp).".utf8)
        signed.append(contentsOf: body)
        let code = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret))
        return "v1=" + code.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `header` is a valid signature of `body` at `timestamp` (compared in constant time).
    public static func isValid(_ header: String, secret: [UInt8], timestamp: Int64, body: [UInt8]) -> Bool {
        let expected = Array(Self.header(secret: secret, timestamp: timestamp, body: body).utf8)
        let given = Array(header.utf8)
        guard expected.count == given.count else { return false }
        return zip(expected, given).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// How the webhook dispatcher delivers events.
public struct WebhookDispatcherConfiguration: Sendable {
    /// Who claims (unique per relay node): a node's claims are leased in its name.
    public var owner: String = "local"
    /// How many attempts this node has in flight at once, each of a different ordering key (a
    /// key's next event is not claimed while one of its events is being sent). A receiver that
    /// holds a request open, or never answers, keeps one of them for at most `timeout`; the others
    /// go on, and a slot that frees is filled at once, not when a whole batch is done. At least 1.
    public var concurrency: Int = 32
    /// The most events one claim takes (never more than the free slots of `concurrency`).
    public var batchSize: Int = 32
    /// How long a claim holds before another node may take the event again: longer than
    /// `timeout`, so a slow receiver does not get the event twice at once. A lease shorter than
    /// twice `timeout` is taken as twice `timeout` (`claimLease`).
    public var lease: Duration = .seconds(60)
    /// How long a receiver has to answer one request: the transport gives up then
    /// (`HTTPWebhookTransport` is made with it).
    public var timeout: Duration = .seconds(10)
    /// How long an idle dispatcher waits when nothing wakes it: events other nodes wrote, and
    /// retries coming due, are found by this poll.
    public var idlePoll: Duration = .seconds(1)
    /// The backoff between attempts of one event.
    public var backoff = Backoff(base: .seconds(1), maximum: .seconds(600), jitter: .equal)
    /// How long after its creation an event is still retried; past that it is `failed`. 72 h.
    public var retryWindow: Duration = .seconds(72 * 3600)
    /// Told of each step of the dispatcher's loop, so a test can wait until the loop has looked
    /// again, or has seen a graceful shutdown, instead of sleeping. Nil outside tests.
    package var watch: (@Sendable (WebhookLoopStep) -> Void)?

    public init() {}

    /// The lease each claim takes: `lease`, or twice `timeout` where that is longer, so an attempt
    /// has ended (the transport gave up at `timeout`) and its outcome is recorded well before
    /// another node may take the event again.
    var claimLease: Duration { max(lease, timeout * 2) }

    /// How many events the dispatcher claims when `inFlight` attempts are under way: the free
    /// slots, at most `batchSize`; 0 when every slot is taken.
    func claimLimit(inFlight: Int) -> Int {
        max(0, min(max(1, concurrency) - inFlight, batchSize))
    }
}

/// A step of the webhook dispatcher's loop, as `WebhookDispatcherConfiguration.watch` hears it.
package enum WebhookLoopStep: Sendable, Equatable {
    /// A pass: it claimed what was due, or nothing with every slot taken.
    case passed
    /// A graceful shutdown was seen: no more claims; the attempts in flight are being finished.
    case draining
}
