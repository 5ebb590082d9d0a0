import GRDB
import HeraldPush
public import HeraldStore

extension SQLiteStore {
    public func pushes(matching query: PushQuery) async throws -> PushPage {
        let limit = min(max(query.limit, PushQuery.limits.lowerBound), PushQuery.limits.upperBound)
        return try await read { db in
            let (sql, arguments) = Self.listingSQL(query, limit: limit)
            let pushes = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { row in
                try Self.summary(row)
            }
            if pushes.count > limit {
                return PushPage(pushes: Array(pushes.prefix(limit)), next: pushes[limit - 1].cursor)
            }
            return PushPage(pushes: pushes, next: nil)
        }
    }

    /// One statement for any combination of conditions; one row more than a page, to know whether
    /// another follows. The order matches `outbox_by_device` and `outbox_by_age` (v12), so a
    /// page reads its rows from an index instead of sorting the outbox.
    static func listingSQL(_ query: PushQuery, limit: Int) -> (String, [any DatabaseValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let user = query.userID {
            conditions.append("d.user_id = ?")
            arguments.append(user)
        }
        if let device = query.deviceID {
            conditions.append("o.device_id = ?")
            arguments.append(device)
        }
        if let state = query.state {
            conditions.append("o.state = ?")
            arguments.append(state.rawValue)
        }
        if let since = query.since {
            conditions.append("o.created_at >= ?")
            arguments.append(since)
        }
        if let after = query.after {
            conditions.append("(o.created_at, o.push_id) < (?, ?)")
            arguments += [after.createdAt, after.pushID] as [any DatabaseValueConvertible]
        }
        arguments.append(limit + 1)
        let sql = """
            SELECT o.push_id, o.device_id, d.app_id, o.network, o.kind, o.state, o.attempts, o.last_reason,
                o.apns_id, o.created_at, o.updated_at, o.expires_at
            FROM outbox o LEFT JOIN devices d ON d.id = o.device_id
            \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY o.created_at DESC, o.push_id DESC LIMIT ?
            """
        return (sql, arguments)
    }

    private static func summary(_ row: Row) throws -> PushSummary {
        let pushID: String = row[0]
        guard let network = PushNetwork(rawValue: row[3]), let kind = OutboxKind(rawValue: row[4]),
            let state = PushState(rawValue: row[5])
        else { throw StoreError.corrupt.with(detail: "push \(pushID) has an unknown network, kind or state") }
        return PushSummary(
            pushID: pushID,
            deviceID: row[1],
            appID: row[2],
            network: network,
            kind: kind,
            state: state,
            attempts: row[6],
            lastReason: row[7],
            apnsID: row[8],
            createdAt: row[9],
            updatedAt: row[10],
            expiresAt: row[11]
        )
    }
}
