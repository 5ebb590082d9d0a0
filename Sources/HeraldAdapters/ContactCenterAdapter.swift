import Crypto
import Foundation
import HeraldEncoding
import HeraldHTTPSupport
import HeraldMacros
public import HeraldRelayAPI

/// How a contact-center platform proves a webhook is its own.
public enum WebhookAuthentication: Sendable, Hashable {
    /// `authorization: Bearer <secret>`.
    case sharedSecret(String)
    /// `x-herald-signature: sha256=<hex of HMAC-SHA256(secret, raw body)>`.
    case hmacSHA256(String)

    /// Checks a request's headers and raw body, in constant time.
    public func verify(authorization: String?, signature: String?, body: [UInt8]) -> Bool {
        switch self {
        case .sharedSecret(let secret):
            return Bearer.matches(authorization, secret: Array(secret.utf8))
        case .hmacSHA256(let secret):
            guard let signature, signature.hasPrefix("sha256=") else { return false }
            let expected = Self.hex(
                Array(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(secret.utf8))))
            )
            return ConstantTime.equal(Array(signature.dropFirst(7).lowercased().utf8), Array(expected.utf8))
        }
    }

    /// The signature header value for `body` (for senders and tests).
    public static func signature(secret: String, body: [UInt8]) -> String {
        "sha256="
            + hex(Array(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(secret.utf8)))))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// What a webhook event became.
public enum AdapterDecision: Sendable, Hashable {
    /// An agent wrote to the customer: this message goes to the relay.
    case message(MessageRequest)
    /// Not for the customer's phone (customer → agent, bot, system, typing, transfer …).
    case ignored(reason: String)
}

/// Why an event could not be read; the webhook answers 400 and nothing is processed.
public struct AdapterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field at fault (a dotted path), or `body`.
    public let field: String
    public let detail: String

    public init(field: String, _ detail: String) {
        self.field = field
        self.detail = detail
    }

    public var description: String { "'\(field)' \(detail)" }
}

/// A contact-center event source: reads one webhook body and decides.
public protocol ContactCenterAdapter: Sendable {
    /// `genesys`, `cxone`: the path segment and the metrics label.
    var name: String { get }
    var authentication: WebhookAuthentication { get }
    /// Reads the whole event first: an event that cannot be read is an error, never half-used.
    func decide(_ body: [UInt8]) throws(AdapterError) -> AdapterDecision
}

/// A contact-center platform's event rules: which webhook events become messages, and how.
/// `PlatformAdapter` gives them the settings every adapter has.
public protocol ContactCenterEvents: Sendable {
    /// `genesys`, `cxone`: the path segment and the metrics label.
    static var name: String { get }
    /// Reads the whole event first: an event that cannot be read is an error, never half-used.
    /// A message is addressed to the platform's customer id; the adapter maps it to a user.
    static func decide(_ body: [UInt8]) throws(AdapterError) -> AdapterDecision
}

extension ContactCenterEvents {
    /// Why an event of this `direction` is ignored; nil when it is `outbound` (agent to customer).
    static func ignoredDirection(_ direction: String?) -> AdapterDecision? {
        guard direction != "outbound" else { return nil }
        return .ignored(reason: direction == "inbound" ? "inbound (customer to agent)" : "no direction")
    }

    /// An agent's message to a customer: from the agent (`Agent` when the platform gives no
    /// name), with the platform's message id as its idempotency key, so a webhook delivered twice
    /// makes one push.
    static func agentMessage(
        _ messageID: String,
        to customer: String,
        from agent: (id: String, name: String?),
        in conversation: String,
        text: String
    ) -> AdapterDecision {
        var message = MessageRequest(
            to: customer,
            from: Party(id: agent.id, name: agent.name ?? "Agent"),
            conversation: conversation,
            text: text
        )
        message.idempotencyKey = name + ":" + messageID
        return .message(message)
    }
}

/// The adapter for one platform: how its webhooks prove themselves, how its customers map to
/// users, and the platform's event rules.
public struct PlatformAdapter<Events: ContactCenterEvents>: ContactCenterAdapter {
    public var name: String { Events.name }
    public let authentication: WebhookAuthentication
    public let customers: CustomerMapping

    public init(authentication: WebhookAuthentication, customers: CustomerMapping = CustomerMapping()) {
        self.authentication = authentication
        self.customers = customers
    }

    public func decide(_ body: [UInt8]) throws(AdapterError) -> AdapterDecision {
        let decision = try Events.decide(body)
        guard case .message(var message) = decision else { return decision }
        message.to = customers.user(for: message.to)
        return .message(message)
    }
}

/// Maps the platform's customer to a Herald user: an explicit table first, else the customer's
/// id itself, with an optional prefix.
@MemberwiseInit
public struct CustomerMapping: Sendable, Hashable, Codable {
    public var users: [String: String] = [:]
    public var prefix: String = ""

    public func user(for customer: String) -> String {
        users[customer] ?? prefix + customer
    }
}

/// Small readers over decoded JSON that name the field at fault.
struct JSONFields {
    let object: [String: Any]
    let path: String

    init(_ object: [String: Any], path: String = "") {
        self.object = object
        self.path = path
    }

    static func parse(_ body: [UInt8]) throws(AdapterError) -> JSONFields {
        guard !body.isEmpty else { throw AdapterError(field: "body", "is empty") }
        // Bounded before Foundation builds anything from it (`JSONLimits.request`).
        do throws(JSONCheckError) {
            try JSONCheck.check(body, limits: .request)
        } catch {
            throw AdapterError(field: error.path.isEmpty ? "body" : error.path, error.reason)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw AdapterError(field: "body", "is not a JSON object")
        }
        return JSONFields(object)
    }

    func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    func string(_ key: String) throws(AdapterError) -> String {
        guard let value = object[key] else { throw AdapterError(field: name(key), "is missing") }
        guard let text = value as? String else { throw AdapterError(field: name(key), "must be a string") }
        return text
    }

    func optionalString(_ key: String) throws(AdapterError) -> String? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw AdapterError(field: name(key), "must be a string") }
        return text
    }

    func object(_ key: String) throws(AdapterError) -> JSONFields {
        guard let value = object[key] else { throw AdapterError(field: name(key), "is missing") }
        guard let nested = value as? [String: Any] else { throw AdapterError(field: name(key), "must be an object") }
        return JSONFields(nested, path: name(key))
    }

    func optionalObject(_ key: String) throws(AdapterError) -> JSONFields? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let nested = value as? [String: Any] else { throw AdapterError(field: name(key), "must be an object") }
        return JSONFields(nested, path: name(key))
    }
}
