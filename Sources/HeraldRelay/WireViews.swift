public import HeraldRelayAPI
public import HeraldStore

// The API's views of the relay's records. The wire types (HeraldRelayAPI) know nothing of the
// store, so that clients (the device, the CLI) read them without it; the relay, which has the
// records, builds the views here.

extension CallView {
    /// A call as its answers show it: the device that answered or declined only under the
    /// state it caused; never the caller.
    public init(_ call: CallRecord) {
        self.init(
            callID: call.id,
            userID: call.userID,
            app: call.appID,
            state: call.state,
            media: call.media,
            answeredBy: call.state == .answered ? call.deviceID : nil,
            declinedBy: call.state == .declined ? call.deviceID : nil,
            reason: call.reason,
            createdAt: call.createdAt,
            expiresAt: call.expiresAt,
            ringingAt: call.ringingAt,
            endedAt: call.endedAt,
            devices: call.devices.map { Device(deviceID: $0.deviceID, report: $0.report, reportedAt: $0.reportedAt) }
        )
    }
}

extension DeviceView {
    /// A device with its tokens, without its keys.
    public init(_ device: DeviceRecord) {
        self.init(
            deviceID: device.id,
            userID: device.userID,
            app: device.appID,
            platform: device.platform,
            messagingToken: device.messagingToken,
            voipToken: device.voipToken,
            keyID: device.keyID,
            tokenDeadReason: device.tokenDeadReason,
            apnsEnvironment: device.apnsEnvironment,
            notifications: device.notificationPermission
        )
    }
}

extension UserDeviceView {
    /// A device as an operator sees it: whether it has tokens, not the tokens.
    public init(_ recipient: Recipient) {
        let device = recipient.device
        self.init(
            deviceID: device.id,
            app: device.appID,
            platform: device.platform,
            keyID: device.keyID,
            activatedAt: device.createdAt,
            updatedAt: device.updatedAt,
            hasMessagingToken: device.messagingToken != nil,
            hasVoIPToken: device.voipToken != nil,
            tokenDeadReason: device.tokenDeadReason,
            presence: recipient.presence.map(Presence.init),
            apnsEnvironment: device.apnsEnvironment,
            notifications: device.notificationPermission
        )
    }
}

extension UserDeviceView.Presence {
    /// A device's last heartbeat.
    public init(_ record: PresenceRecord) {
        self.init(
            state: record.state,
            conversation: record.conversation,
            updatedAt: record.updatedAt,
            expiresAt: record.expiresAt
        )
    }
}

extension PushItemView {
    /// A push as a listing shows it.
    public init(_ push: PushSummary) {
        self.init(
            pushID: push.pushID,
            deviceID: push.deviceID,
            app: push.appID,
            network: push.network,
            kind: push.kind,
            state: push.state,
            attempts: push.attempts,
            reason: push.lastReason,
            apnsID: push.apnsID,
            createdAt: push.createdAt,
            updatedAt: push.updatedAt,
            expiresAt: push.expiresAt
        )
        deviceStage = push.deviceStage
    }
}

extension PushStatusView {
    /// A push's status with its delivery history, oldest first, and the phone's receipts.
    public init(_ entry: OutboxEntry, history: [DeliveryEvent], receipts: [PushReceipt] = []) {
        self.init(
            pushID: entry.pushID,
            deviceID: entry.deviceID,
            kind: entry.kind,
            state: entry.state,
            reason: entry.lastReason,
            attempts: entry.attempts,
            apnsID: entry.apnsID,
            priority: entry.priority,
            createdAt: entry.createdAt,
            updatedAt: entry.updatedAt,
            expiresAt: entry.expiresAt,
            history: history.map { Event(at: $0.at, state: $0.state, reason: $0.reason) },
            waitingSince: entry.waitingSince,
            nowOrNever: entry.nowOrNever,
            receipts: receipts
        )
    }
}
