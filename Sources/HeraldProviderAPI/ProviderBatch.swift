import Foundation
import HeraldAPNsCore
import HeraldEncoding
import HeraldFCMCore
import HeraldMacros
public import HeraldPush

/// One push in a batch sent to `herald provider` (`POST /v1/push/batch`): the wire form of `Push`.
@MemberwiseInit
public struct ProviderPush: Sendable, Codable, Hashable {
    /// The caller's id for this push, echoed in its result.
    public var id: String
    /// `apns` (the default), `fcm`, `webpush` or `hms`.
    public var network: PushNetwork = .apns
    /// The APNs device token, the FCM registration token, the Web Push subscription's endpoint,
    /// or the Push Kit token.
    public var deviceToken: String
    /// The APNs topic; for FCM and Push Kit, the app's package name (informational); for Web
    /// Push, the app's id (whose VAPID key signs, unless `vapid_key` names one).
    public var topic: String
    /// Required for APNs; ignored for the others.
    public var pushType: APNsPushType?
    /// APNs: 10, 5 or 1. FCM and Push Kit: 10 and 5 (user-visible) are `HIGH`, 1 (background)
    /// `NORMAL`. Web Push's `Urgency`: 10 `high`, 5 `normal`, 1 `low`.
    public var priority: Int
    /// Seconds since the epoch: `apns-expiration`, or the end of FCM's `android.ttl`.
    public var expiration: Int64?
    /// `apns-collapse-id`, or FCM's `collapse_key`.
    public var collapseID: String?
    /// Kept across retries; made by the provider when absent (APNs only).
    public var apnsID: String?
    /// The APNs JSON body as text; for FCM and Push Kit, the data: a JSON object of strings, as
    /// text; for Web Push, the plaintext the provider encrypts for the subscription.
    public var payload: String
    /// APNs: the name of the configured key that signs it; absent: the provider's default key.
    public var apnsKey: String?
    /// APNs: the environment its token belongs to; absent: the key's configured environment.
    public var apnsEnvironment: APNsEnvironment?
    /// FCM: the name of the configured service account that sends it; absent: the default.
    public var fcmAccount: String?
    /// Web Push: the subscription's keys, base64url (required).
    public var webPushKeys: WebPushKeysWire?
    /// Web Push: the name of the configured VAPID key that signs; absent: the app's, else the
    /// default.
    public var vapidKey: String?
    /// Push Kit: the name of the configured Huawei app that sends it; absent: the default.
    public var hmsAccount: String?
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
                payload: DataFields.json(fcm.data),
                fcmAccount: fcm.account,
                traceParent: push.traceParent
            )
        case .webPush(let webPush):
            self.init(
                id: push.id,
                network: .webPush,
                deviceToken: push.token,
                topic: webPush.app,
                pushType: nil,
                priority: Self.priority(of: webPush.urgency),
                expiration: push.expiration,
                collapseID: push.collapseID,
                payload: webPush.json,
                webPushKeys: webPush.keys.map(WebPushKeysWire.init),
                vapidKey: webPush.vapidKey,
                traceParent: push.traceParent
            )
        case .hms(let hms):
            self.init(
                id: push.id,
                network: .hms,
                deviceToken: push.token,
                topic: hms.package,
                pushType: nil,
                priority: hms.urgency == .high ? APNsPriority.immediate.rawValue : APNsPriority.low.rawValue,
                expiration: push.expiration,
                collapseID: push.collapseID,
                payload: DataFields.json(hms.data),
                hmsAccount: hms.account,
                traceParent: push.traceParent
            )
        }
    }

    /// Web Push's `Urgency` as the batch API's priority.
    private static func priority(of urgency: WebPushUrgency) -> Int {
        switch urgency {
        case .high: 10
        case .normal: 5
        case .low, .veryLow: 1
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
            guard let data = DataFields.fields(payload) else {
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
        case .webPush:
            guard let keys = webPushKeys?.keys else {
                return .failure(
                    ProviderPushRefusal("a Web Push push needs web_push_keys: p256dh (65 bytes) and auth (16)")
                )
            }
            let urgency: WebPushUrgency = priority >= 10 ? .high : priority >= 5 ? .normal : .low
            let payload = WebPushPayload(app: topic, urgency: urgency, json: payload, keys: keys, vapidKey: vapidKey)
            return .success(carrying(.webPush(payload)))
        case .hms:
            guard let data = DataFields.fields(payload) else {
                return .failure(ProviderPushRefusal("the payload of a Push Kit push must be a JSON object of strings"))
            }
            let payload = HMSPayload(
                package: topic,
                urgency: priority >= 5 ? .high : .normal,
                data: data,
                account: hmsAccount
            )
            return .success(carrying(.hms(payload)))
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
        case webPushKeys = "web_push_keys"
        case vapidKey = "vapid_key"
        case hmsAccount = "hms_account"
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
        webPushKeys = try container.decodeIfPresent(WebPushKeysWire.self, forKey: .webPushKeys)
        vapidKey = try container.decodeIfPresent(String.self, forKey: .vapidKey)
        hmsAccount = try container.decodeIfPresent(String.self, forKey: .hmsAccount)
        traceParent = try container.decodeIfPresent(String.self, forKey: .traceParent)
    }
}

/// A Web Push subscription's keys on the wire: base64url without padding, as a browser's
/// `PushSubscription.toJSON()` gives them.
public struct WebPushKeysWire: Sendable, Codable, Hashable {
    public var p256dh: String
    public var auth: String

    public init(_ keys: WebPushKeys) {
        p256dh = Base64URL.encode(keys.p256dh)
        auth = Base64URL.encode(keys.auth)
    }

    /// The keys; nil when either is not base64url or has the wrong length.
    public var keys: WebPushKeys? {
        guard let p256dh = Base64URL.decode(p256dh[...]), let auth = Base64URL.decode(auth[...]) else { return nil }
        return WebPushKeys(p256dh: p256dh, auth: auth)
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
    /// For a delivered push on FCM, Push Kit or Web Push: the network's id for it (FCM's message
    /// name, Push Kit's request id, a Web Push service's message `Location`).
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
                name: network == .apns ? nil : receipt
            )
        case .tokenDead(let reason, let since):
            let status: Int? =
                switch network {
                case .apns: APNsReason(rawValue: reason)?.status
                case .fcm: FCMErrorCode(rawValue: reason)?.status
                // A Web Push service's 404 or 410, and Push Kit's result code, are in the reason.
                case .webPush, .hms: nil
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
