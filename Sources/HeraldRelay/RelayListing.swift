import HeraldEncoding
public import HeraldRelayAPI
import HeraldStore

extension RelayActivation {
    /// The user's devices, oldest activation first, with their tokens' presence and last
    /// heartbeat (never the tokens or keys). A user without devices has an empty list: the relay
    /// knows users only through their devices, so "unknown" and "no device" are one answer.
    public func devices(userID: String) async throws(RelayError) -> UserDevicesView {
        try context.configuration.check(userID, "user_id", pattern: .identifier)
        let recipients = try await context.storing { try await $0.recipients(userID: userID) }
        return UserDevicesView(userID: userID, devices: recipients.map(UserDeviceView.init))
    }
}

extension RelayIngest {
    /// A page of pushes, newest first, filtered as asked; `next` continues it.
    public func pushes(_ request: PushListRequest) async throws(RelayError) -> PushListView {
        if let user = request.user { try context.configuration.check(user, "user", pattern: .identifier) }
        if let device = request.device { try context.configuration.check(device, "device", pattern: .identifier) }
        let limit = request.limit ?? PushListRequest.defaultLimit
        guard PushQuery.limits.contains(limit) else {
            throw .invalidField(
                "limit",
                "must be between \(PushQuery.limits.lowerBound) and \(PushQuery.limits.upperBound)"
            )
        }
        if let since = request.since, since < 0 { throw .invalidField("since", "must not be before 1970") }
        var after: PushCursor?
        if let cursor = request.cursor {
            guard let decoded = PushListCursor.decode(cursor) else {
                throw .invalidField("cursor", "is not a cursor this relay gave (pass a page's 'next' as it is)")
            }
            after = decoded
        }
        let query = PushQuery(
            userID: request.user,
            deviceID: request.device,
            state: request.state,
            since: request.since,
            after: after,
            limit: limit
        )
        let page = try await context.storing { try await $0.pushes(matching: query) }
        return PushListView(pushes: page.pushes.map(PushItemView.init), next: page.next.map(PushListCursor.encode))
    }
}

/// The `next` of a push listing: opaque to clients, so its form may change; today the place in
/// the listing's order (acceptance time and push id) in base64url, behind a version.
enum PushListCursor {
    static let version = "1"

    static func encode(_ cursor: PushCursor) -> String {
        Base64URL.encode(Array("\(version):\(cursor.createdAt):\(cursor.pushID)".utf8))
    }

    /// The place a cursor names; `nil` for anything `encode` did not make.
    static func decode(_ text: String) -> PushCursor? {
        guard text.utf8.count <= 1024, let bytes = Base64URL.decode(Substring(text)),
            let plain = String(validating: bytes, as: UTF8.self)
        else { return nil }
        let parts = plain.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == version, let time = Int64(parts[1]), time >= 0, !parts[2].isEmpty
        else { return nil }
        return PushCursor(createdAt: time, pushID: String(parts[2]))
    }
}
