import HeraldPush
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func pushes(matching query: PushQuery) async throws -> PushPage {
        let limit = min(max(query.limit, PushQuery.limits.lowerBound), PushQuery.limits.upperBound)
        let rows = try await rows("list pushes", Self.listingQuery(query, limit: limit))
        let pushes: [PushSummary]
        do {
            pushes = try rows.map(Self.summary(_:))
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.corrupt.with(detail: "list pushes: \(error)")
        }
        if pushes.count > limit {
            return PushPage(pushes: Array(pushes.prefix(limit)), next: pushes[limit - 1].cursor)
        }
        return PushPage(pushes: pushes, next: nil)
    }

    /// As on SQLite: one statement for any combination of conditions, one row more than a page
    /// to know whether another follows, in the order of `outbox_by_device` and `outbox_by_age`
    /// (v4). Not prepared: PostgreSQL plans it with the values bound, so a condition left out
    /// costs nothing.
    static func listingQuery(_ query: PushQuery, limit: Int) -> PostgresQuery {
        var conditions: [String] = []
        var bindings = PostgresBindings(capacity: 7)
        func next() -> String { "$\(bindings.count + 1)" }
        if let user = query.userID {
            conditions.append("d.user_id = \(next())")
            bindings.append(user)
        }
        if let device = query.deviceID {
            conditions.append("o.device_id = \(next())")
            bindings.append(device)
        }
        if let state = query.state {
            conditions.append("o.state = \(next())")
            bindings.append(state.rawValue)
        }
        if let since = query.since {
            conditions.append("o.created_at >= \(next())")
            bindings.append(since)
        }
        if let after = query.after {
            let time = next()
            bindings.append(after.createdAt)
            conditions.append("(o.created_at, o.push_id) < (\(time), \(next()))")
            bindings.append(after.pushID)
        }
        let limitPlaceholder = next()
        bindings.append(Int64(limit + 1))
        let sql = """
            SELECT o.push_id, o.device_id, d.app_id, o.network, o.kind, o.state, o.attempts, o.last_reason,
                o.apns_id, o.created_at, o.updated_at, o.expires_at
            FROM outbox o LEFT JOIN devices d ON d.id = o.device_id
            \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY o.created_at DESC, o.push_id DESC LIMIT \(limitPlaceholder)
            """
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    private static func summary(_ row: PostgresRow) throws -> PushSummary {
        var columns = Columns(row)
        let pushID: String = try columns.next()
        let deviceID: String = try columns.next()
        let appID: String? = try columns.next()
        let networkText: String = try columns.next()
        let kindText: String = try columns.next()
        let stateText: String = try columns.next()
        let attempts: Int64 = try columns.next()
        let lastReason: String? = try columns.next()
        let apnsID: String? = try columns.next()
        let createdAt: Int64 = try columns.next()
        let updatedAt: Int64 = try columns.next()
        let expiresAt: Int64 = try columns.next()
        guard let network = PushNetwork(rawValue: networkText), let kind = OutboxKind(rawValue: kindText),
            let state = PushState(rawValue: stateText)
        else { throw StoreError.corrupt.with(detail: "push \(pushID) has an unknown network, kind or state") }
        return PushSummary(
            pushID: pushID,
            deviceID: deviceID,
            appID: appID,
            network: network,
            kind: kind,
            state: state,
            attempts: Int(attempts),
            lastReason: lastReason,
            apnsID: apnsID,
            createdAt: createdAt,
            updatedAt: updatedAt,
            expiresAt: expiresAt
        )
    }
}
