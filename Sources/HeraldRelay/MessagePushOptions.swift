import Foundation
import HeraldCrypto
public import HeraldPush
import HeraldRelayAPI
import HeraldStore

/// A message's push options, checked once at ingest (docs/relay.md, "Push options").
///
/// Everything here travels in clear: the priority and expiration are APNs headers and FCM
/// options, the badge, the category and the public data are in the push body next to the sealed
/// envelope. Content the lock screen must not show is never in this type.
public struct MessagePushOptions: Sendable, Hashable {
    /// APNs `apns-priority`. A message push is an alert (it shows an alert and plays a sound), for
    /// which Apple allows both 5 and 10; 1 (and 10 for a background push) is never used for one.
    public var priority: APNsPriority
    /// Seconds from the push's creation until it is dropped; 0 is "now or never". Nil: the
    /// app's `message_ttl`.
    public var expiration: Int64?
    /// APNs `aps.badge`; FCM data `badge`.
    public var badge: Int?
    /// APNs `aps.category`; FCM data `category` (a push tag such as `chat.newagentmessage`).
    public var category: String?
    /// Custom data in clear: APNs top-level keys, FCM data keys; counted in the payload budget.
    public var publicData: [String: String]
    /// The request named a priority; otherwise each app's `message_priority` applies.
    public var priorityRequested = false
    /// When the customer began waiting for this message (milliseconds since the epoch, never
    /// after the ingest): the queue order of an app that orders by the customer's wait.
    public var waitingSince: Int64?

    public init(
        priority: APNsPriority = .conserve,
        expiration: Int64? = nil,
        badge: Int? = nil,
        category: String? = nil,
        publicData: [String: String] = [:]
    ) {
        self.priority = priority
        self.expiration = expiration
        self.badge = badge
        self.category = category
        self.publicData = publicData
    }

    /// The keys Herald itself uses in an APNs body or an FCM data message: a custom key may not
    /// be one of these.
    public static let reservedKeys: Set<String> = [
        "aps", "herald", "v", "kind", "message_id", "conversation_id", "call_id", "policy", "sealed", "badge",
        "category", "from", "notification", "message_type", "collapse_key",
    ]

    /// The longest expiration: FCM's 28 days.
    public static let maximumExpiration: Int64 = 2_419_200

    /// The most custom keys one message carries.
    public static let maximumDataKeys = 32

    /// How far in the future a `waiting_since` may lie (the backend's clock may run ahead of the
    /// relay's); it counts as now.
    public static let waitingSinceSkew: Int64 = 60_000

    /// The longest wait a `waiting_since` may give: 28 days. An older time is most likely seconds
    /// given for milliseconds.
    public static let maximumWait: Int64 = 28 * 24 * 60 * 60 * 1000
}

extension RelayContext {
    /// The push options of a message request, or a 400 naming the field that is wrong.
    func pushOptions(_ message: MessageRequest) throws(RelayError) -> MessagePushOptions {
        let request = message.options
        var options = MessagePushOptions()
        options.priorityRequested = request.priority != nil
        if let priority = request.priority {
            // 10 is allowed: a message push always shows an alert. 1 is a background priority.
            guard let value = APNsPriority(rawValue: priority), value != .low else {
                throw .invalidField("priority", "must be 5 or 10 (a message push is an alert)")
            }
            options.priority = value
        }
        if let expiration = request.expiration {
            guard expiration >= 0 else {
                throw .invalidField("expiration", "is in the past: give seconds from now, 0 for now or never")
            }
            guard expiration <= MessagePushOptions.maximumExpiration else {
                throw .invalidField("expiration", "must be at most \(MessagePushOptions.maximumExpiration) seconds")
            }
            options.expiration = expiration
        }
        if let since = message.waitingSince {
            options.waitingSince = try waitingSince(since, "waiting_since", now: clock.now())
        }
        if let badge = request.badge {
            guard (0...99_999).contains(badge) else { throw .invalidField("badge", "must be 0 to 99999") }
            options.badge = badge
        }
        if let category = request.category {
            try configuration.check(category, "category", pattern: .identifier)
            options.category = category
        }
        if let data = request.publicData {
            guard data.count <= MessagePushOptions.maximumDataKeys else {
                throw .invalidField("public_data", "must have at most \(MessagePushOptions.maximumDataKeys) keys")
            }
            for (key, value) in data.sorted(by: { $0.key < $1.key }) {
                try configuration.checkText(key, "public_data")
                // Values are any text: the budget bounds them (checked when the push is built).
                guard value.utf8.count <= PayloadBudget.fcmData.bodyLimit else {
                    throw .invalidField("public_data", "value of '\(key)' is longer than the push can carry")
                }
                if MessagePushOptions.reservedKeys.contains(key) || key.hasPrefix("google.")
                    || key.hasPrefix("gcm.")
                {
                    throw .invalidField("public_data", "key '\(key)' is one Herald or the push network uses")
                }
            }
            options.publicData = data
        }
        return options
    }

    /// A customer's wait start checked against the relay's clock: at most
    /// `waitingSinceSkew` ahead (then taken as now), at most `maximumWait` back.
    func waitingSince(_ since: Int64, _ field: String, now: Int64) throws(RelayError) -> Int64 {
        guard since <= now + MessagePushOptions.waitingSinceSkew else {
            throw .invalidField(
                field,
                "is \(since - now) ms in the future: give when the customer began waiting, in milliseconds since the epoch"
            )
        }
        guard since >= now - MessagePushOptions.maximumWait else {
            throw .invalidField(
                field,
                "is more than 28 days ago: give milliseconds since the epoch (not seconds)"
            )
        }
        return min(since, now)
    }

    /// The sealed title and data of a message request, checked; a 400 naming the field otherwise.
    func sealedExtras(_ request: MessagePushFields) throws(RelayError) -> (title: String?, data: [String: String]?) {
        if let title = request.title { try configuration.checkText(title, "title") }
        if let data = request.data {
            guard data.count <= MessagePushOptions.maximumDataKeys else {
                throw .invalidField("data", "must have at most \(MessagePushOptions.maximumDataKeys) keys")
            }
            for (key, value) in data.sorted(by: { $0.key < $1.key }) {
                try configuration.checkText(key, "data")
                guard value.utf8.count <= PayloadBudget.fcmData.bodyLimit else {
                    throw .invalidField("data", "value of '\(key)' is longer than the push can carry")
                }
            }
        }
        return (request.title, request.data)
    }
}

/// A message's push options as kept with it, sealed with the master key and bound to the message
/// id, for a push made after the message was accepted (a live delivery not acknowledged): that
/// push carries exactly what a direct push would have. The title and data are private, so the
/// whole is sealed, never stored in the clear.
struct StoredPushOptions: Codable, Hashable {
    /// Set only when the request named one (otherwise the app's `message_priority` applies).
    var priority: Int?
    var expiration: Int64?
    var badge: Int?
    var category: String?
    var publicData: [String: String]?
    var title: String?
    var data: [String: String]?

    init(_ options: MessagePushOptions, title: String?, data: [String: String]?) {
        priority = options.priorityRequested ? options.priority.rawValue : nil
        expiration = options.expiration
        badge = options.badge
        category = options.category
        publicData = options.publicData.isEmpty ? nil : options.publicData
        self.title = title
        self.data = data
    }

    /// Whether the request named none of them: nothing to keep.
    var isEmpty: Bool {
        self == StoredPushOptions(MessagePushOptions(), title: nil, data: nil)
    }

    /// The options for the push.
    var options: MessagePushOptions {
        var options = MessagePushOptions(
            expiration: expiration,
            badge: badge,
            category: category,
            publicData: publicData ?? [:]
        )
        if let priority, let value = APNsPriority(rawValue: priority) {
            options.priority = value
            options.priorityRequested = true
        }
        return options
    }
}

extension RelayContext {
    static func pushOptionsContext(_ messageID: String) -> String { "herald-message-push-options:" + messageID }

    /// A message's push options sealed at rest, or `nil` when it named none.
    func sealPushOptions(_ stored: StoredPushOptions, messageID: String) -> [UInt8]? {
        guard !stored.isEmpty else { return nil }
        // Plain strings and numbers: encoding cannot fail.
        let json = (try? JSONEncoder().encode(stored)) ?? Data()
        return masterKey.seal(SecureBytes(copying: Array(json)), context: Self.pushOptionsContext(messageID))
    }

    /// A stored message's push options (none stored: the defaults), or `unavailable` (logged)
    /// when they do not open.
    func openPushOptions(_ message: MessageRecord) throws(RelayError) -> StoredPushOptions {
        guard let sealed = message.sealedPushOptions else {
            return StoredPushOptions(MessagePushOptions(), title: nil, data: nil)
        }
        guard let bytes = try? masterKey.open(sealed, context: Self.pushOptionsContext(message.id)).copyBytes(),
            let stored = try? JSONDecoder().decode(StoredPushOptions.self, from: Data(bytes))
        else {
            logger.error("cannot open a stored message's push options", metadata: ["message": "\(message.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot read this message's push options")
        }
        return stored
    }
}
