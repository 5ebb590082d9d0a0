import HeraldCrypto
import HeraldPush
import HeraldRelayAPI
import HeraldStore

/// What a phone's receipt writes (docs/receipts.md): the receipt row, and for the stages a
/// backend acts on (`shown`, `failed`, `tapped`) its webhook event, in one transaction; or why it
/// is refused. Pure: the caller reads the push and checks the tag.
struct ReceiptPlanner: Sendable {
    /// The deadlines a receipt cancels or arms.
    var deadlines = DeadlinePlanner(callKitReportWindow: DeadlineConfiguration().callKitReportWindow)

    /// Why a well-formed receipt is refused; each is counted by its raw value
    /// (`herald_relay_receipts_refused_total{reason}`).
    enum Refusal: String, Error, Sendable, Equatable {
        /// No such push, or it was sent to another device: the same answer for both, so a device
        /// learns nothing of other devices' pushes.
        case unknownPush = "unknown_push"
        /// The tag was not made with this device's current session keys for these bytes.
        case badTag = "bad_tag"
    }

    /// The receipt the request describes, checked field by field (a 400 names the field).
    func receipt(_ request: ReceiptRequest) throws(RelayError) -> (DeliveryReceipt, tag: [UInt8]) {
        guard !request.pushID.isEmpty, request.pushID.utf8.count <= 200 else {
            throw .invalidField("push_id", "must be a push id (1 to 200 bytes)")
        }
        guard let keyID = KeyID(hex: request.keyID) else {
            throw .invalidField("key_id", "must be the device's key id: 16 hex characters")
        }
        guard let tag = ByteEncoding.bytes(base64URL: request.tag), tag.count == DeliveryReceipt.tagLength else {
            throw .invalidField("tag", "must be \(DeliveryReceipt.tagLength) bytes in base64url without padding")
        }
        switch (request.stage, request.failure) {
        case (.failed, nil):
            throw .invalidField("failure", "is required when the stage is failed")
        case (.failed, _), (_, nil):
            break
        case (_, .some):
            throw .invalidField("failure", "is only given when the stage is failed")
        }
        let receipt = DeliveryReceipt(
            keyID: keyID,
            pushID: request.pushID,
            stage: request.stage,
            deviceTime: request.deviceTime,
            failure: request.failure
        )
        return (receipt, tag)
    }

    /// The change for `receipt` from `device`, about `push` as read (nil: none), whose tag
    /// `verified` or not, at `now`.
    func record(
        _ receipt: DeliveryReceipt,
        device: DeviceRecord,
        push: OutboxEntry?,
        app: AppRecord?,
        verified: Bool,
        now: Int64
    ) -> Result<Planned<PushReceipt>, Refusal> {
        guard let push, push.deviceID == device.id else { return .failure(.unknownPush) }
        guard verified else { return .failure(.badTag) }
        let stored = PushReceipt(
            pushID: push.pushID,
            stage: receipt.stage,
            deviceTime: receipt.deviceTime,
            receivedAt: now,
            failure: receipt.failure
        )
        var events: [WebhookEvent] = []
        if let app, let type = Self.eventType[receipt.stage] {
            events = WebhookEvent.reporting(
                app: app,
                type,
                orderingKey: "push:" + push.pushID,
                data: ReceiptEventData(stored, device: device),
                at: now
            )
            // Delivered in the push's trace, when it has one (docs/tracing.md).
            for index in events.indices { events[index].traceParent = push.traceParent }
        }
        var effects: [RelayEffect] = [
            .count(.receipts(receipt.stage, app: device.appID, network: push.network), 1)
        ]
        if receipt.stage == .shown {
            effects.append(.observeShown(app: device.appID, network: push.network, after: now - push.createdAt))
        }
        if !events.isEmpty { effects.append(.wakeWebhooks) }
        var writes: [StoreChange] = [.recordReceipt(stored, events: events)]
        if DeadlinePlanner.cancels(receipt.stage) { writes.append(.cancelDeadlines(pushIDs: [push.pushID])) }
        if let armed = deadlines.armed(by: receipt.stage, for: push, at: now) {
            writes.append(.armDeadlines([armed]))
            effects.append(.wakeDeadlines)
        }
        let change = RelayChange(
            writes: writes,
            effectsWhenApplied: effects,
            // Retention deleted the push between the read and the write.
            refusalWhenStale: RelayError.notFound.with(detail: "no push \(push.pushID) sent to this device")
        )
        return .success(
            Planned(
                change: change,
                answer: stored
            )
        )
    }

    /// The event each stage a backend acts on writes; the others write none.
    static let eventType: [ReceiptStage: WebhookEventType] = [
        .shown: .pushShown,
        .failed: .pushFailedOnDevice,
        .tapped: .pushTapped,
    ]
}

/// The data of a `push.shown` / `push.failed_on_device` / `push.tapped` event: the receipt as
/// recorded, with the device and its user; ids and times only, never content.
struct ReceiptEventData: Encodable, Equatable {
    var receipt: PushReceipt
    var deviceID: String
    var userID: String

    init(_ receipt: PushReceipt, device: DeviceRecord) {
        self.receipt = receipt
        deviceID = device.id
        userID = device.userID
    }

    private enum Keys: String, CodingKey {
        case deviceID = "device_id"
        case userID = "user_id"
    }

    /// One flat object: the receipt's keys, then the device's.
    func encode(to encoder: any Encoder) throws {
        try receipt.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(deviceID, forKey: .deviceID)
        try container.encode(userID, forKey: .userID)
    }
}
