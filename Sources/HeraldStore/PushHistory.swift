/// A push's history without a row per step, as both engines keep it: the acceptance and the
/// current state are the outbox row itself; `delivery_log` holds only what would otherwise be
/// lost, each time the push went back to the queue (with the provider's reason).
package struct PushHistory: ColumnsDecodable {
    /// The columns of `outbox` that `init(columns:)` reads, in its order.
    package static let columns = "created_at, state, updated_at, last_reason"
    /// The `delivery_log` columns of one return to the queue, in the order `requeue` reads them.
    package static let requeueColumns = "at, state, reason"

    var createdAt: Int64
    /// Nil for a state this version does not know: then no history is told.
    var state: PushState?
    var updatedAt: Int64
    var lastReason: String?

    package init(columns: inout some StoreColumns) throws {
        createdAt = try columns.integer()
        state = PushState(rawValue: try columns.text())
        updatedAt = try columns.integer()
        lastReason = try columns.optionalText()
    }

    /// One return to the queue of `pushID`, read from `requeueColumns`; nil for a state this
    /// version does not know.
    package static func requeue(of pushID: String, _ columns: inout some StoreColumns) throws -> DeliveryEvent? {
        let at = try columns.integer()
        guard let state = PushState(rawValue: try columns.text()) else { return nil }
        return DeliveryEvent(pushID: pushID, at: at, state: state, reason: try columns.optionalText())
    }

    /// The history of `pushID`: accepted, each return to the queue, and where it is now unless
    /// that is the queue.
    package func events(of pushID: String, requeues: [DeliveryEvent]) -> [DeliveryEvent] {
        guard let state else { return [] }
        var events = [DeliveryEvent(pushID: pushID, at: createdAt, state: .queued, reason: nil)] + requeues
        if state != .queued {
            events.append(DeliveryEvent(pushID: pushID, at: updatedAt, state: state, reason: lastReason))
        }
        return events
    }
}
