extension Recipient: ColumnsDecodable {
    /// The columns `init(columns:)` reads: the device's (alias `d`), then its presence's (alias
    /// `p`) and its live session's (alias `l`), both outer-joined.
    package static let columns = """
        \(DeviceRecord.columns), p.conversation, p.state, p.updated_at, p.expires_at,
            l.node_id, l.session_id, l.conversation, l.expires_at
        """

    package init(columns: inout some StoreColumns) throws {
        let device = try DeviceRecord(columns: &columns)
        let presence = try PresenceRecord(deviceID: device.id, userID: device.userID, joined: &columns)
        let node = try columns.optionalText()
        let session = try columns.optionalText()
        let liveConversation = try columns.optionalText()
        let liveUntil = try columns.optionalInteger()
        var liveSession: LiveSessionRecord?
        if let node, let session, let liveUntil {
            liveSession = LiveSessionRecord(
                deviceID: device.id,
                nodeID: node,
                sessionID: session,
                conversation: liveConversation,
                expiresAt: liveUntil
            )
        }
        self.init(device: device, presence: presence, liveSession: liveSession)
    }
}
