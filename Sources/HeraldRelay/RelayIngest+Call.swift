import HeraldCrypto
import HeraldPush
public import HeraldRelayAPI
import HeraldStore

extension RelayIngest {
    /// Accepts a call: one VoIP push (priority 10, `<bundle>.voip`, short expiration) per iOS
    /// device of the user with a VoIP token. The same call id never rings twice.
    ///
    /// - Parameter app: only this app's devices ring (an app's API key); every app's when `nil`.
    public func send(call request: CallRequest, app: String? = nil) async throws(RelayError) -> IngestReceipt {
        let media = try checkCall(request)
        let time = context.clock.now()
        let devices = try await context.storing { try await $0.recipients(userID: request.to) }
            .map(\.device).filter { app == nil || $0.appID == app }
        let content = CallContent(
            callID: request.callID,
            callerID: request.from.id,
            callerName: request.from.name,
            media: media,
            startedAt: time
        )
        var pushes: [OutboxEntry] = []
        var deadlines: [PushDeadline] = []
        var sendable: [ClaimedPush] = []
        var receipt = IngestReceipt(id: request.callID, pushes: [], skipped: [])
        var callApp: AppRecord?
        let apps = try await apps(of: devices)
        for (device, route) in zip(devices, planner.callRoutes(devices, apps: apps)) {
            guard case .push(let app) = route else {
                if case .skip(let reason) = route { receipt.skipped.append(.init(deviceID: device.id, reason: reason)) }
                continue
            }
            let push = try callPush(content, to: device, app: app, ttl: request.ttl ?? app.callTTL, at: time)
            pushes.append(push)
            deadlines += context.deadlinePlanner.armed(push, app: app)
            if let push = context.sendable(push, device: device, app: app) { sendable.append(push) }
            receipt.pushes.append(.init(pushID: push.pushID, deviceID: device.id))
            if callApp == nil { callApp = app }
        }
        let call = callRecord(
            request,
            media: media,
            app: callApp,
            // With no device rung, the call is its first device's app's (registered or not).
            appID: callApp?.id ?? devices.first?.appID ?? "",
            receipt,
            at: time
        )
        // Made from a fresh read, so never stale.
        guard
            let outcome = try await commit(
                receipt: receipt,
                key: "call:" + request.callID,
                message: nil,
                pushes: pushes,
                sendable: sendable,
                deadlines: deadlines,
                call: call
            )
        else { throw RelayError.unavailable.with(detail: "the call's recipients changed while it was written") }
        if !outcome.duplicate { context.metrics.calls.increment() }
        return outcome
    }

    /// Checks a call's fields; answers its media (audio when it names none).
    private func checkCall(_ request: CallRequest) throws(RelayError) -> CallMedia {
        try context.configuration.check(request.to, "to", pattern: .identifier)
        try context.configuration.check(request.from.id, "from.id", pattern: .identifier)
        try context.configuration.checkText(request.from.name, "from.name")
        try context.configuration.check(request.callID, "call_id", pattern: .identifier)
        var media = CallMedia.audio
        if let name = request.media {
            guard let named = CallMedia(rawValue: name) else {
                throw .invalidField("media", "must be 'audio' or 'video'")
            }
            media = named
        }
        if let ttl = request.ttl, !(1...86_400).contains(ttl) {
            throw .invalidField("ttl", "must be 1 to 86400 seconds")
        }
        return media
    }

    /// A call's push for one device, sealed for it: a PushKit push on iOS, a high-priority data
    /// message on Android, expiring with the call's time to live (`ttl`, seconds).
    private func callPush(
        _ content: CallContent,
        to device: DeviceRecord,
        app: AppRecord,
        ttl: Int64,
        at time: Int64
    ) throws(RelayError) -> OutboxEntry {
        do {
            return try context.sealedPush(.call(content), for: device, app: app, at: time, expiresAt: time + ttl * 1000)
        } catch let error as RelayError {
            throw error
        } catch {
            throw RelayError.invalidField("from.name", "does not fit in a VoIP push")
        }
    }

    /// The call's record, written with its pushes: it rings until answered, declined, cancelled,
    /// or its time to live passes (then missed).
    private func callRecord(
        _ request: CallRequest,
        media: CallMedia,
        app: AppRecord?,
        appID: String,
        _ receipt: IngestReceipt,
        at time: Int64
    ) -> CallRecord {
        let ttl = request.ttl ?? app?.callTTL ?? AppRecord(id: request.callID, teamID: "").callTTL
        return CallRecord(
            id: request.callID,
            appID: appID,
            userID: request.to,
            media: media.rawValue,
            sealedCaller: context.sealCaller(request.from, callID: request.callID),
            createdAt: time,
            expiresAt: time + ttl * 1000,
            updatedAt: time,
            devices: receipt.pushes.map { CallDeviceRecord(deviceID: $0.deviceID, report: .pushed) }
                .sorted { $0.deviceID < $1.deviceID }
        )
    }
}
