public import HeraldRelayAPI

/// Broadcasts: one message per member, each as `send(message:app:)` makes it (a member without a
/// device held or answered `refused`, `member(message:app:)`).
extension RelayIngest {
    /// Sends one message to every member of a group: over the live channel where a member's app
    /// is on screen in the conversation, by push otherwise, one sealed push per device.
    ///
    /// - Parameter app: as for a message: only this app's devices, and its own idempotency keys.
    public func broadcast(_ request: BroadcastRequest, app: String? = nil) async throws(RelayError) -> BroadcastReceipt
    {
        guard !request.to.isEmpty, request.to.count <= 1000 else {
            throw .invalidField("to", "must list 1 to 1000 users")
        }
        for (index, user) in request.to.enumerated() {
            try context.configuration.check(user, "to[\(index)]", pattern: .identifier)
        }
        if let key = request.idempotencyKey {
            try context.configuration.check(key, "idempotency_key", pattern: .identifier)
        }
        var seen = Set<String>()
        var members: [BroadcastReceipt.Member] = []
        for user in request.to where seen.insert(user).inserted {
            let receipt = try await member(
                message: MessageRequest(
                    to: user,
                    from: request.from,
                    conversation: request.conversation,
                    text: request.text,
                    idempotencyKey: request.idempotencyKey.map { "broadcast:\($0):\(user)" },
                    options: request.options
                ),
                app: app
            )
            members.append(.init(user: user, receipt: receipt))
        }
        return BroadcastReceipt(members: members)
    }
}
