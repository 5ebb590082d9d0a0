import Foundation
public import HeraldAPNs
import HeraldAPNsCore
public import HeraldFCM
import HeraldFCMCore
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

    /// Sends every push through its network (both at once) and answers one result per push, in order.
    public func send(_ pushes: [ProviderPush]) async -> [ProviderPushResult] {
        var results = [ProviderPushResult?](repeating: nil, count: pushes.count)
        var apnsIndexes: [Int] = []
        var fcmIndexes: [Int] = []
        for (index, push) in pushes.enumerated() {
            switch push.network {
            case .apns: apnsIndexes.append(index)
            case .fcm: fcmIndexes.append(index)
            }
        }
        async let apnsResults = sendAPNs(apnsIndexes.map { pushes[$0] })
        async let fcmResults = sendFCM(fcmIndexes.map { pushes[$0] })
        for (index, result) in zip(apnsIndexes, await apnsResults) { results[index] = result }
        for (index, result) in zip(fcmIndexes, await fcmResults) { results[index] = result }
        return results.map { $0! }
    }

    /// Hands the APNs pushes to the client as one batch (the client checks each; a refused one is
    /// checked again here only to say why).
    private func sendAPNs(_ pushes: [ProviderPush]) async -> [ProviderPushResult] {
        guard !pushes.isEmpty else { return [] }
        var results = [ProviderPushResult?](repeating: nil, count: pushes.count)
        var outgoing: [(Int, String, APNsNotification)] = []
        for (index, push) in pushes.enumerated() {
            let apnsID = push.apnsID ?? APNsUUID.random()
            func refuse(_ reason: String, status: Int = 400) {
                results[index] = ProviderPushResult(
                    outcome: "failed",
                    id: push.id,
                    apnsID: apnsID,
                    reason: reason,
                    status: status
                )
            }
            guard apns != nil else {
                refuse("APNs is not configured on this provider (no Apple key)", status: 503)
                continue
            }
            guard let pushType = push.pushType else {
                refuse("push_type is required for APNs")
                continue
            }
            guard let priority = APNsPriority(rawValue: push.priority) else {
                refuse("BadPriority")
                continue
            }
            let notification = APNsNotification(
                deviceToken: push.deviceToken,
                topic: push.topic,
                pushType: pushType,
                priority: priority,
                expiration: push.expiration,
                collapseID: push.collapseID,
                apnsID: apnsID,
                payload: ByteBuffer(string: push.payload)
            )
            outgoing.append((index, apnsID, notification))
        }
        if let apns, !outgoing.isEmpty {
            let answers = await apns.send(batch: outgoing.map(\.2))
            for ((index, apnsID, notification), answer) in zip(outgoing, answers) {
                var result = ProviderPushResult(id: pushes[index].id, apnsID: apnsID, result: answer)
                if case .failed(nil, 400) = answer {
                    do {
                        try notification.validate()
                    } catch {
                        result.reason = error.message
                    }
                }
                results[index] = result
            }
        }
        return results.map { $0! }
    }

    /// Turns each FCM push's data text into a data message and hands the valid ones to the sender.
    private func sendFCM(_ pushes: [ProviderPush]) async -> [ProviderPushResult] {
        guard !pushes.isEmpty else { return [] }
        guard let fcm else {
            return pushes.map {
                ProviderPushResult(
                    outcome: "failed",
                    id: $0.id,
                    reason: "FCM is not configured on this provider (no service account)",
                    status: 503
                )
            }
        }
        var results = [ProviderPushResult?](repeating: nil, count: pushes.count)
        var valid: [(Int, FCMPush)] = []
        let now = Int64(Date().timeIntervalSince1970)
        for (index, push) in pushes.enumerated() {
            guard let data = try? JSONDecoder().decode([String: String].self, from: Data(push.payload.utf8)) else {
                results[index] = ProviderPushResult(
                    outcome: "failed",
                    id: push.id,
                    reason: "the payload of an FCM push must be a JSON object of strings",
                    status: 400
                )
                continue
            }
            valid.append(
                (
                    index,
                    FCMPush(
                        token: push.deviceToken,
                        data: data,
                        // APNs' 10 and 5 are both shown to the user; 1 is background work.
                        priority: push.priority >= 5 ? .high : .normal,
                        // FCM's own default when none is given: four weeks.
                        expiration: push.expiration ?? now + FCMMessage.maximumTTLSeconds,
                        collapseKey: push.collapseID
                    )
                )
            )
        }
        let answers = await fcm.send(batch: valid.map(\.1))
        for ((index, _), answer) in zip(valid, answers) {
            results[index] = ProviderPushResult(id: pushes[index].id, result: answer)
        }
        return results.map { $0! }
    }
}

extension ProviderPushResult {
    /// The wire form of an FCM result.
    public init(id: String, result: FCMResult) {
        switch result {
        case .delivered(let name):
            self.init(outcome: "delivered", id: id, status: 200, name: name)
        case .tokenDead(let code):
            self.init(outcome: "token_dead", id: id, reason: code.rawValue, status: code.status)
        case .failed(let code, let status, let message):
            self.init(
                outcome: "failed",
                id: id,
                reason: code.map { "\($0.rawValue): \(message)" } ?? message,
                status: status
            )
        case .retryLater(let reason, let after):
            self.init(outcome: "retry_later", id: id, reason: reason, retryAfter: after.map { $0.components.seconds })
        case .expired:
            self.init(outcome: "expired", id: id)
        }
    }
}
