import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
import HeraldStore

extension RelayCalls {
    /// One missed-call alert per device of the call that can get a messaging push (iOS: an
    /// `alert` at priority 5 to the messaging token; Android: an FCM data message at `NORMAL`),
    /// with the caller sealed. A device that cannot get one is logged and left out: the call is
    /// still missed, and `GET /v1/calls/{id}` says so. A device without the notification
    /// permission gets it written as skipped (`notifications_denied`).
    func missedAlerts(_ call: CallRecord, at time: Int64) async -> [OutboxEntry] {
        let caller: Party
        do {
            caller = try context.openCaller(call)
        } catch {
            return []
        }
        let content = CallContent(
            callID: call.id,
            callerID: caller.id,
            callerName: caller.name,
            media: CallMedia(rawValue: call.media) ?? .audio,
            startedAt: call.createdAt
        )
        var alerts: [OutboxEntry] = []
        for entry in call.devices {
            do {
                guard let device = try await context.store.device(id: entry.deviceID), context.isPushable(device),
                    device.messagingToken != nil, let app = try await context.app(id: device.appID)
                else { continue }
                let expiresAt = time + app.messageTTL * 1000
                let alert = try context.sealedPush(
                    .missedCall(content),
                    for: device,
                    app: app,
                    at: time,
                    expiresAt: expiresAt
                )
                alerts.append(context.permitted(alert, for: device))
            } catch {
                context.logger.error(
                    "cannot make a missed-call alert",
                    metadata: ["call": "\(call.id)", "device": "\(entry.deviceID)", "error": "\(error)"]
                )
            }
        }
        return alerts
    }
}
