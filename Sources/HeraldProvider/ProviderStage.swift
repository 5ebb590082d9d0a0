import Foundation
public import HeraldAPNs
import HeraldAPNsCore
public import HeraldFCM
import HeraldFCMCore
public import HeraldPush
import NIOCore

/// The provider stage's senders, one per push network, behind one entry point: `herald provider`
/// serves it over HTTP, and the relay calls it in-process.
public struct ProviderStage: Sendable {
    /// The APNs client; nil when no Apple key is configured.
    public let apns: APNsClient?
    /// The FCM sender; nil when no service account is configured.
    public let fcm: FCMClient?

    public init(apns: APNsClient?, fcm: FCMClient? = nil) {
        self.apns = apns
        self.fcm = fcm
    }

    /// Sends every push through its network (both at once) and answers one outcome per push, in order.
    public func send(_ pushes: [Push]) async -> [PushOutcome] {
        var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
        var apnsPushes: [(index: Int, push: Push, payload: APNsPayload)] = []
        var fcmPushes: [(index: Int, push: Push, payload: FCMPayload)] = []
        for (index, push) in pushes.enumerated() {
            switch push.payload {
            case .apns(let payload): apnsPushes.append((index, push, payload))
            case .fcm(let payload): fcmPushes.append((index, push, payload))
            }
        }
        async let apnsOutcomes = sendAPNs(apnsPushes.map { ($0.push, $0.payload) })
        async let fcmOutcomes = sendFCM(fcmPushes.map { ($0.push, $0.payload) })
        for (item, outcome) in zip(apnsPushes, await apnsOutcomes) { outcomes[item.index] = outcome }
        for (item, outcome) in zip(fcmPushes, await fcmOutcomes) { outcomes[item.index] = outcome }
        return outcomes.map { $0! }
    }

    /// Hands the APNs pushes to the client as one batch (the client checks each; a refused one is
    /// checked again here only to say why).
    private func sendAPNs(_ pushes: [(Push, APNsPayload)]) async -> [PushOutcome] {
        guard !pushes.isEmpty else { return [] }
        guard let apns else {
            let outcome = PushOutcome.failed(
                reason: "APNs is not configured on this provider (no Apple key)",
                status: 503
            )
            return Array(repeating: outcome, count: pushes.count)
        }
        let notifications = pushes.map { push, payload in
            APNsNotification(
                deviceToken: push.token,
                topic: payload.topic,
                pushType: payload.type,
                priority: payload.priority,
                expiration: push.expiration,
                collapseID: push.collapseID,
                apnsID: payload.apnsID,
                payload: ByteBuffer(string: payload.json)
            )
        }
        let answers = await apns.send(batch: notifications)
        return zip(notifications, answers).map { notification, answer in
            if case .failed(nil, 400) = answer {
                do throws(APNsClientError) {
                    try notification.validate()
                } catch {
                    return .failed(reason: error.message, status: 400)
                }
            }
            return PushOutcome(answer)
        }
    }

    /// Hands the FCM pushes to the sender as data messages.
    private func sendFCM(_ pushes: [(Push, FCMPayload)]) async -> [PushOutcome] {
        guard !pushes.isEmpty else { return [] }
        guard let fcm else {
            let outcome = PushOutcome.failed(
                reason: "FCM is not configured on this provider (no service account)",
                status: 503
            )
            return Array(repeating: outcome, count: pushes.count)
        }
        let now = Int64(Date().timeIntervalSince1970)
        let messages = pushes.map { push, payload in
            FCMPush(
                token: push.token,
                data: payload.data,
                priority: payload.priority,
                // FCM's own default when none is given: four weeks.
                expiration: push.expiration ?? now + FCMMessage.maximumTTLSeconds,
                collapseKey: push.collapseID
            )
        }
        return await fcm.send(batch: messages).map(PushOutcome.init)
    }
}

extension ProviderStage: PushSender {}

extension PushOutcome {
    /// What the APNs client made of a push.
    init(_ result: APNsResult) {
        switch result {
        case .delivered(_, let uniqueID): self = .delivered(receipt: uniqueID)
        case .tokenDead(let reason, let timestamp): self = .tokenDead(reason: reason.rawValue, since: timestamp)
        case .failed(let reason, let status):
            self = .failed(reason: reason?.rawValue ?? "InvalidNotification", status: status)
        case .retryLater(let reason, let after): self = .retryLater(reason: reason, after: after)
        case .unreachable(let reason): self = .unreachable(reason: reason)
        case .expired: self = .expired
        }
    }

    /// What the FCM sender made of a message.
    init(_ result: FCMResult) {
        switch result {
        case .delivered(let name): self = .delivered(receipt: name)
        case .tokenDead(let code): self = .tokenDead(reason: code.rawValue, since: nil)
        case .failed(let code, let status, let message):
            self = .failed(reason: code.map { "\($0.rawValue): \(message)" } ?? message, status: status)
        case .retryLater(let reason, let after): self = .retryLater(reason: reason, after: after)
        case .unreachable(let reason): self = .unreachable(reason: reason)
        case .expired: self = .expired
        }
    }
}
