import Foundation
import HeraldEncoding
import HeraldMacros
// The push model's Push Kit payload and urgency are part of the message API here.
@_exported public import HeraldPush

// Push Kit's downlink message API: `POST https://push-api.cloud.huawei.com/v1/{appId}/messages:send`
// with `Authorization: Bearer <app-level access token>` and the body below (the URL, the headers
// and a data message's shape as https://www.wangyeyixia.com/article/1852871.html and
// https://tencentfit.fun/mIwr/Pusher/blob/master/PUSH_NOTIFICATIONS_HMS.md show them).

/// The body of `POST /v1/{appId}/messages:send`: `{"validate_only": false, "message": {...}}`.
@MemberwiseInit
public struct HMSSendRequest: Sendable, Hashable, Codable {
    /// A test send that Huawei checks but does not deliver.
    public var validateOnly: Bool = false
    public var message: HMSMessage

    enum CodingKeys: String, CodingKey {
        case validateOnly = "validate_only"
        case message
    }
}

extension HMSSendRequest {
    /// Reads a request; `validate_only` may be left out (false).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        validateOnly = try container.decodeIfPresent(Bool.self, forKey: .validateOnly) ?? false
        message = try container.decode(HMSMessage.self, forKey: .message)
    }
}

/// A data message to Push Kit tokens with its Android options: what Herald sends. The sealed
/// content travels in `data`, never in a `notification` block Huawei could read.
@MemberwiseInit
public struct HMSMessage: Sendable, Hashable, Codable {
    /// The data message: one string; Herald's is a JSON object of strings.
    public var data: String?
    public var android: AndroidConfig?
    /// The tokens it goes to: 1 to `maximumTokens`.
    public var token: [String]?

    /// The most tokens one request may name (more: 80300010).
    public static let maximumTokens = 1000
    /// The longest `android.ttl` Push Kit keeps a message for an offline device: 15 days.
    public static let maximumTTLSeconds: Int64 = 15 * 24 * 60 * 60
    /// The largest `collapse_key` group; -1 keeps every message.
    public static let collapseGroups = 0...100

    /// `message.android`.
    @MemberwiseInit
    public struct AndroidConfig: Sendable, Hashable, Codable {
        /// `HIGH` wakes the device at once; `NORMAL` waits for its power policy.
        public var urgency: HMSUrgency?
        /// How long Push Kit keeps the message for an offline device (`"86400s"`).
        public var ttl: String?
        /// Messages of the same group (0–100) replace each other while the device is offline;
        /// -1 (or none) keeps them all.
        public var collapseKey: Int?
        /// The scenario Huawei granted high-urgency data messages for (`VOIP`, `IM`…).
        public var category: String?

        enum CodingKeys: String, CodingKey {
            case urgency, ttl, category
            case collapseKey = "collapse_key"
        }
    }

    /// Herald's message to `token`: the payload's data as a JSON object string (keys sorted),
    /// `ttl` what remains of the push's life, and `collapseKey` as its group.
    public init(payload: HMSPayload, token: String, ttlSeconds: Int64, collapseKey: String?, category: String? = nil) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(payload.data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        self.init(
            data: data,
            android: AndroidConfig(
                urgency: payload.urgency,
                ttl: "\(max(0, min(ttlSeconds, Self.maximumTTLSeconds)))s",
                collapseKey: collapseKey.map(Self.collapseGroup(for:)),
                category: category
            ),
            token: [token]
        )
    }

    /// Push Kit groups by a number, Herald by a name: the name's group, the same in every process
    /// (FNV-1a of its UTF-8, modulo 101).
    public static func collapseGroup(for key: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int(hash % UInt64(collapseGroups.count))
    }

    /// The size of `data` as Push Kit counts it: its UTF-8 bytes.
    public var dataBytes: Int { data?.utf8.count ?? 0 }

    /// Checks the message against Push Kit's rules for the fields Herald uses; the error carries
    /// the result code Huawei answers.
    public func validate() throws(HMSValidationError) {
        let tokens = token ?? []
        guard (1...Self.maximumTokens).contains(tokens.count), !tokens.contains(where: \.isEmpty) else {
            throw HMSValidationError(.tooManyTokens, field: "message.token")
        }
        guard let data, !data.isEmpty else {
            throw HMSValidationError(.badMessageStructure, field: "message.data")
        }
        guard dataBytes <= HMSPayload.maxData else {
            throw HMSValidationError(.bodyTooLarge, field: "message.data")
        }
        if let ttl = android?.ttl {
            guard let seconds = DurationText.seconds(ttl), seconds <= Self.maximumTTLSeconds else {
                throw HMSValidationError(.invalidTTL, field: "message.android.ttl")
            }
        }
        if let group = android?.collapseKey, group != -1, !Self.collapseGroups.contains(group) {
            throw HMSValidationError(.badMessageStructure, field: "message.android.collapse_key")
        }
    }
}

/// A message Push Kit would refuse, the result code it answers and the field at fault.
public struct HMSValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: HMSResultCode
    public let field: String

    public init(_ code: HMSResultCode, field: String) {
        self.code = code
        self.field = field
    }

    public var description: String { "\(field): \(code.defaultMessage) (\(code.text))" }
}
