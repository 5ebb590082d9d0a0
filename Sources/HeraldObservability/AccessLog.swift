public import Hummingbird
public import Logging
import Synchronization

/// The HTTP request a task is handling: its request id, and the fields its routes add to its
/// access line. `HTTPObservabilityMiddleware` makes one per request and binds it to `current` while
/// the request is handled, so every log line written meanwhile, however deep in the relay, can
/// carry `request_id` (through `metadataProvider`) without a logger being handed down.
///
/// A route adds a field to its request's access line through its context:
///
/// ```swift
/// router.post("messages") { request, context in
///     let receipt = try await relay.ingest.send(message: body)
///     context.accessLog["message"] = .string(receipt.id)
///     …
/// }
/// ```
///
/// Values keep their type in JSON logs: `.stringConvertible(42)` is the number 42, `.string("42")`
/// the string "42". The middleware's own fields (`request_id`, `method`, `route`, `status`,
/// `duration_ms`, `bytes`) cannot be replaced. Nothing secret or written by an end user (a bearer
/// token, a message's text, a name) belongs here: the access log is kept and shipped as it is.
public final class AccessLog: Sendable {
    /// The request the current task is handling, `nil` outside one (and in tasks a request did not
    /// start).
    @TaskLocal public static var current: AccessLog?

    /// The request's id: the client's `x-request-id` when it is a usable one, else one made here.
    /// It is answered in the `x-request-id` response header.
    public let requestID: String
    private let fields = Mutex<Logger.Metadata>([:])

    /// - Parameter requestID: the request's id, as `requestID(honouring:)` chose it.
    public init(requestID: String) {
        self.requestID = requestID
    }

    /// A field of the request's access line; setting `nil` removes one set before.
    public subscript(key: String) -> Logger.MetadataValue? {
        get { fields.withLock { $0[key] } }
        set { fields.withLock { $0[key] = newValue } }
    }

    /// Every field routes added, for the access line.
    public var added: Logger.Metadata { fields.withLock { $0 } }

    /// Adds `request_id` to every record logged while a request is handled (and in the tasks it
    /// starts). The process's logging bootstrap installs it (`LogFormat.bootstrap`).
    public static let metadataProvider = Logger.MetadataProvider {
        guard let current else { return [:] }
        return ["request_id": .string(current.requestID)]
    }

    /// The request and response header that carries the id: `x-request-id`.
    public static let headerName = "x-request-id"
    static let header = HTTPFields.Element.Name(headerName)!

    /// The longest client id kept; a longer one is replaced, not cut (a cut id would match nothing
    /// in the client's own logs).
    public static let maximumIDLength = 128

    /// The client's id when it is 1 to `maximumIDLength` characters of letters, digits and
    /// `- _ . : / + =` (a UUID, a trace id, a base64 token); else a new one, 32 hex digits. Any
    /// other character (spaces, quotes, control characters, a comma of two joined headers) could
    /// forge or split a log line, so such an id is not kept.
    public static func requestID(honouring given: String?) -> String {
        if let given, isUsable(given) { return given }
        return makeID()
    }

    static func isUsable(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maximumIDLength else { return false }
        return id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "/"),
                UInt8(ascii: "+"), UInt8(ascii: "="):
                true
            default: false
            }
        }
    }

    /// 128 random bits as 32 lowercase hex digits.
    static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<2 {
            var word = generator.next() as UInt64
            for _ in 0..<16 {
                bytes.append(digits[Int(word & 0xF)])
                word >>= 4
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension RequestContext {
    /// The access line of the request being handled: set a field on it to have the line carry it
    /// (`context.accessLog["api_key"] = .string(keyID)`). Outside `HTTPObservabilityMiddleware`
    /// (a router without it, a test) it is a record nobody writes.
    public var accessLog: AccessLog {
        AccessLog.current ?? AccessLog(requestID: "")
    }
}
