import HeraldPush

/// An outbox row as an engine reads it, before its payload's body (kept in `outbox_payloads`) is
/// joined to it: the stored texts unchecked until `entry(body:)`, so that a claim can order and
/// look up what it took before it builds the entries.
package struct OutboxRow: Sendable, ColumnsDecodable {
    /// The columns `init(columns:)` reads, in its order.
    package static let columnNames = [
        "push_id", "device_id", "kind", "subject_id", "priority", "network", "topic", "push_type", "apns_priority",
        "apns_id", "fcm_priority", "collapse_id", "attempts", "next_attempt_at", "expires_at", "state", "last_reason",
        "created_at", "updated_at", "waiting_since", "now_or_never",
        "trace_context",
    ]
    /// `columnNames` as a select list.
    package static let columns = columnNames.joined(separator: ", ")

    package var pushID: String
    package var deviceID: String
    package var kind: String
    package var subjectID: String
    package var priority: Int
    package var network: String
    package var topic: String
    package var pushType: String?
    package var apnsPriority: Int?
    package var apnsID: String?
    package var fcmPriority: String?
    package var collapseID: String?
    package var attempts: Int
    package var nextAttemptAt: Int64
    package var expiresAt: Int64
    package var state: String
    package var lastReason: String?
    package var createdAt: Int64
    package var updatedAt: Int64
    package var waitingSince: Int64?
    package var nowOrNever: Bool
    package var traceContext: String?

    /// Where the claim's order puts it among pushes of its priority.
    package var queuedSince: Int64 { waitingSince ?? createdAt }

    /// Reads `columnNames`.
    package init(columns: inout some StoreColumns) throws {
        pushID = try columns.text()
        deviceID = try columns.text()
        kind = try columns.text()
        subjectID = try columns.text()
        priority = try columns.int()
        network = try columns.text()
        topic = try columns.text()
        pushType = try columns.optionalText()
        apnsPriority = try columns.optionalInteger().map { Int($0) }
        apnsID = try columns.optionalText()
        fcmPriority = try columns.optionalText()
        collapseID = try columns.optionalText()
        attempts = try columns.int()
        nextAttemptAt = try columns.integer()
        expiresAt = try columns.integer()
        state = try columns.text()
        lastReason = try columns.optionalText()
        createdAt = try columns.integer()
        updatedAt = try columns.integer()
        waitingSince = try columns.optionalInteger()
        nowOrNever = try columns.boolean()
        traceContext = try columns.optionalText()
    }

    /// The entry, with its payload's body (APNs' JSON, or FCM's data as a JSON object of strings).
    package func entry(body: String) throws(StoreError) -> OutboxEntry {
        guard let kind = OutboxKind(rawValue: kind), let state = PushState(rawValue: state) else {
            throw StoreError.corrupt.with(detail: "push \(pushID) has an unknown kind or state")
        }
        return OutboxEntry(
            pushID: pushID,
            deviceID: deviceID,
            kind: kind,
            subjectID: subjectID,
            priority: priority,
            payload: try payload(body: body),
            collapseID: collapseID,
            attempts: attempts,
            nextAttemptAt: nextAttemptAt,
            expiresAt: expiresAt,
            state: state,
            lastReason: lastReason,
            createdAt: createdAt,
            updatedAt: updatedAt,
            waitingSince: waitingSince,
            nowOrNever: nowOrNever,
            traceParent: traceContext
        )
    }

    private func payload(body: String) throws(StoreError) -> Push.Payload {
        guard let network = PushNetwork(rawValue: network) else {
            throw StoreError.corrupt.with(detail: "push \(pushID) has an unknown network \(network)")
        }
        return try StoredPayload(
            network: network,
            topic: topic,
            pushType: pushType,
            apnsPriority: apnsPriority,
            apnsID: apnsID,
            fcmPriority: fcmPriority,
            body: body
        ).payload(pushID: pushID)
    }
}
