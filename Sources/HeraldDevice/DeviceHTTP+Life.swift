public import HeraldDomain
public import HeraldRelayAPI

/// The app's calls for its life: chats left and rejoined, transcripts, logout, the permission.
extension DeviceHTTP {
    /// `POST /v1/devices/{id}/chats/{conversation}/disconnect`: the app went to the background.
    public func chatDisconnect(
        relay: String,
        deviceID: String,
        conversation: String,
        position: Int,
        credential: String
    ) async throws {
        struct Answer: Decodable {}
        _ = try await call(
            .POST,
            relay + "/v1/devices/\(deviceID)/chats/\(conversation)/disconnect",
            bearer: credential,
            body: ChatDisconnectRequest(transcriptPosition: position),
            expect: 200,
            as: Answer.self,
            failure: DeviceError.relay
        )
    }

    /// `POST /v1/devices/{id}/chats/{conversation}/connect`: the app is back; the events missed.
    public func chatConnect(
        relay: String,
        deviceID: String,
        conversation: String,
        credential: String
    ) async throws -> TranscriptView {
        try await call(
            .POST,
            relay + "/v1/devices/\(deviceID)/chats/\(conversation)/connect",
            bearer: credential,
            body: [String: String](),
            expect: 200,
            as: TranscriptView.self,
            failure: DeviceError.relay
        )
    }

    /// `GET /v1/chats/{conversation}/transcript?after=N`: the resync.
    public func transcript(
        relay: String,
        conversation: String,
        after position: Int,
        credential: String
    ) async throws -> TranscriptView {
        try await call(
            .GET,
            relay + "/v1/chats/\(conversation)/transcript?after=\(position)",
            bearer: credential,
            expect: 200,
            as: TranscriptView.self,
            failure: DeviceError.relay
        )
    }

    /// `DELETE /v1/devices/{id}` with the device's own credential: logout.
    public func logout(relay: String, deviceID: String, credential: String) async throws {
        _ = try await call(
            .DELETE,
            relay + "/v1/devices/\(deviceID)",
            bearer: credential,
            expect: 204,
            as: Empty.self,
            failure: DeviceError.relay
        )
    }

    /// `PUT /v1/devices/{id}/notifications`: whether the user lets the app show notifications.
    public func reportPermission(
        relay: String,
        deviceID: String,
        _ permission: NotificationPermission,
        credential: String
    ) async throws -> NotificationPermissionView {
        try await call(
            .PUT,
            relay + "/v1/devices/\(deviceID)/notifications",
            bearer: credential,
            body: NotificationPermissionRequest(permission: permission),
            expect: 200,
            as: NotificationPermissionView.self,
            failure: DeviceError.relay
        )
    }

    /// `POST /v1/devices/{id}/receipts`: what happened to a push on the phone, tagged with its
    /// session keys (docs/receipts.md). Answers the receipt as the relay recorded it.
    public func sendReceipt(
        relay: String,
        deviceID: String,
        _ receipt: ReceiptRequest,
        credential: String
    ) async throws -> PushReceipt {
        try await call(
            .POST,
            relay + "/v1/devices/\(deviceID)/receipts",
            bearer: credential,
            body: receipt,
            expect: 201,
            as: PushReceipt.self,
            failure: DeviceError.relay
        )
    }
}
