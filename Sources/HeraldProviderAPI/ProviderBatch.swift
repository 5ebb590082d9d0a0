import Foundation
import HeraldAPNsCore
import HeraldFCMCore
import HeraldMacros
public import HeraldPush

/// One push in a batch sent to `herald provider` (`POST /v1/push/batch`): the wire form of `Push`.
@MemberwiseInit
public struct ProviderPush: Sendable, Codable, Hashable {
    /// The caller's id for this push, echoed in its result.
    public var id: String
    /// `apns` (the default) or `fcm`.
    public var network: PushNetwork = .apns
    /// The APNs device token, or the FCM registration token.
    public var deviceToken: String
    /// The APNs topic; for FCM, the app's package name (informational).
    public var topic: String
    /// Required for APNs; ignored for FCM.
    public var pushType: APNsPushType?
    /// APNs: 10, 5 or 1. FCM: 10 and 5 (user-visible) are `HIGH`, 1 (background) is `NORMAL`.
    public var priority: Int
    /// Seconds since the epoch: `apns-expiration`, or the end of FCM's `android.ttl`.
    public var expiration: Int64?
    /// `apns-collapse-id`, or FCM's `collapse_key`.
    public var collapseID: String?
    /// Kept across retries; made by the provider when absent (APNs only).
    public var apnsID: String?
    /// The APNs JSON body as text; for FCM, the data: a JSON object of strings, as text.
    public var payload: String
    /// APNs: the name of the configured key that signs it; absent: the provider's default key.
    public var apnsKey: String?
    /// APNs: the environment its token belongs to; absent: the key's configured environment.
    public var apnsEnvironment: APNsEnvironment?
    /// FCM: the name of the configured service account that sends it; absent: the default.
    public var fcmAccount: String?
    /// The W3C `traceparent` of the relay's claim span when tracing is on there: the provider's
    /// attempt span joins that trace when its own tracing is on (docs/tracing.md).
    public var traceParent: String?

    /// The wire form of a push.
    public init(_ push: Push) {
        switch push.payload {
        case .apns(let apns):
            self.init(
                id: push.id,
                network: .apns,
                deviceToken: push.token,
                topic: apns.topic,
                pushType: apns.type,
                priority: apns.priority.rawValue,
                expiration: push.expiration,
                collapseID: push.collapseID,
                apnsID: apns.apnsID,
                payload: apns.json,
                apnsKey: apns.key,
                apnsEnvironment: apns.environment,
                traceParent: push.traceParent
            )
        case .fcm(let fcm):
            self.init(
                id: push.id,
                network: .fcm,
                deviceToken: push.token,
                topic: fcm.package,
                pushType: nil,
                priority: fcm.priority == .high ? APNsPriority.immediate.rawValue : APNsPriority.low.rawValue,
                expiration: push.expiration,
                collapseID: push.collapseID,
                payload: Self.text(fcm.data),
                fcmAccount: fcm.account,
                traceParent: push.traceParent
            )
        }
    }

    /// The push this wire form describes, or why the provider refuses it without sending it.
    ///
    /// - Parameter makeAPNsID: makes the `apns-id` of an APNs push that came without one.
    public func push(makeAPNsID: () -> String) -> Result<Push, ProviderPushRefusal> {
        switch network {
        case .apns:
            guard let pushType else { return .failure(ProviderPushRefusal("push_type is required for APNs")) }
            guard let priority = APNsPriority(rawValue: priority) else {
                return .failure(ProviderPushRefusal("BadPriority"))
            }
            let payload = APNsPayload(
                topic: topic,
                type: pushType,
                priority: priority,
                apnsID: apnsID ?? makeAPNsID(),
                json: payload,
                key: apnsKey,
                environment: apnsEnvironment
            )
            return .success(carrying(.apns(payload)))
        case .fcm:
            guard let data = try? JSONDecoder().decode([String: String].self, from: Data(payload.utf8)) else {
                return .failure(ProviderPushRefusal("the payload of an FCM push must be a JSON object of strings"))
            }
            // APNs' 10 and 5 are both shown to the user; 1 is background work.
            let payload = FCMPayload(
                package: topic,
                priority: priority >= 5 ? .high : .normal,
                data: data,
                account: fcmAccount
            )
            return .success(carrying(.fcm(payload)))
        }
    }

    /// The push with this wire form's id, token, expiration, collapse id and trace.
    private func carrying(_ payload: Push.Payload) -> Push {
        Push(
            id: id,
            token: deviceToken,
            payload: payload,
            expiration: expiration,
            collapseID: collapseID,
            traceParent: traceParent
        )
    }

    /// FCM data as the batch API carries it: a JSON object of strings, as text, keys sorted so the
    /// same data is always the same text.
    static func text(_ data: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a dictionary of strings cannot fail.
        return (try? encoder.encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    enum CodingKeys: String, CodingKey {
        case id, network
        case deviceToken = "device_token"
        case topic
        case pushType = "push_type"
        case priority, expiration
        case collapseID = "collapse_id"
        case apnsID = "apns_id"
        case payload
        case apnsKey = "apns_key"
        case apnsEnvironment = "apns_environment"
        case fcmAccount = "fcm_account"
        case traceParent = "trace_parent"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        network = try container.decodeIfPresent(PushNetwork.self, forKey: .network) ?? .apns
        deviceToken = try container.decode(String.self, forKey: .deviceToken)
        topic = try container.decode(String.self, forKey: .topic)
        pushType = try container.decodeIfPresent(APNsPushType.self, forKey: .pushType)
        priority = try container.decode(Int.self, forKey: .priority)
        expiration = try container.decodeIfPresent(Int64.self, forKey: .expiration)
        collapseID = try container.decodeIfPresent(String.self, forKey: .collapseID)
        apnsID = try container.decodeIfPresent(String.self, forKey: .apnsID)
        payload = try container.decode(String.self, forKey: .payload)
        apnsKey = try container.decodeIfPresent(String.self, forKey: .apnsKey)
        apnsEnvironment = try container.decodeIfPresent(APNsEnvironment.self, forKey: .apnsEnvironment)
        fcmAccount = try container.decodeIfPresent(String.self, forKey: .fcmAccount)
        traceParent = try container.decodeIfPresent(String.self, forKey: .traceParent)
    }
}

/// Why the provider refuses a batch's push before sending it (answered as `failed`, status 400).
public struct ProviderPushRefusal: Error, Sendable, Hashable {
    public var reason: String

    public init(_ reason: String) {
        self.reason = reason
    }
}

/// The request body of `POST /v1/push/batch`.
@MemberwiseInit
public struct ProviderBatch: Sendable, Codable {
    /// The most pushes in one batch.
    public static let maximumCount = 1_000

    public var pushes: [ProviderPush]
}

/// What became of one push of a batch: the wire form of `PushOutcome`.
@MemberwiseInit
public struct ProviderPushResult: Sendable, Codable, Hashable {
    /// `delivered`, `token_dead`, `failed`, `retry_later` or `expired`; any other name fails to
    /// decode rather than being taken for one of them.
    public var outcome: PushOutcome.Kind
    public var id: String
    public var apnsID: String?
    public var uniqueID: String?
    /// APNs' reason, or the provider's when the push never reached APNs.
    public var reason: String?
    public var status: Int?
    /// For a dead token (410): when APNs learned it, in milliseconds since the epoch.
    public var timestamp: Int64?
    /// For `retry_later`: seconds the push network asked to wait (FCM's `Retry-After`).
    public var retryAfter: Int64?
    /// For a delivered FCM message: FCM's message name.
    public var name: String?

    /// The wire form of a push's outcome.
    public init(push: Push, outcome: PushOutcome) {
        var apnsID: String?
        if case .apns(let apns) = push.payload { apnsID = apns.apnsID }
        let network = push.network
        switch outcome {
        case .delivered(let receipt):
            self.init(
                outcome: .delivered,
                id: push.id,
                apnsID: apnsID,
                uniqueID: network == .apns ? receipt : nil,
                status: 200,
                name: network == .fcm ? receipt : nil
            )
        case .tokenDead(let reason, let since):
            let status =
                switch network {
                case .apns: APNsReason(rawValue: reason)?.status
                case .fcm: FCMErrorCode(rawValue: reason)?.status
                }
            self.init(
                outcome: .tokenDead,
                id: push.id,
                apnsID: apnsID,
                reason: reason,
                status: status,
                timestamp: since
            )
        case .failed(let reason, let status):
            self.init(outcome: .failed, id: push.id, apnsID: apnsID, reason: reason, status: status)
        case .retryLater(let reason, let after):
            self.init(
                outcome: .retryLater,
                id: push.id,
                apnsID: apnsID,
                reason: reason,
                retryAfter: after.map { $0.components.seconds }
            )
        case .unreachable(let reason):
            self.init(outcome: .unreachable, id: push.id, apnsID: apnsID, reason: reason)
        case .expired:
            self.init(outcome: .expired, id: push.id, apnsID: apnsID)
        }
    }

    /// The outcome this result reports.
    public var pushOutcome: PushOutcome {
        let reason = self.reason ?? "unknown"
        return switch outcome {
        case .delivered: .delivered(receipt: uniqueID ?? name)
        case .tokenDead: .tokenDead(reason: reason, since: timestamp)
        case .failed: .failed(reason: reason, status: status)
        case .retryLater: .retryLater(reason: reason, after: retryAfter.map { .seconds($0) })
        case .unreachable: .unreachable(reason: reason)
        case .expired: .expired
        }
    }

    enum CodingKeys: String, CodingKey {
        case outcome, id
        case apnsID = "apns_id"
        case uniqueID = "unique_id"
        case reason, status, timestamp
        case retryAfter = "retry_after"
        case name
    }
}

/// The answer of `POST /v1/push/batch`: one result per push, in order.
@MemberwiseInit
public struct ProviderBatchResult: Sendable, Codable {
    public var results: [ProviderPushResult]
}
