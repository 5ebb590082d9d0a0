import GRDB
public import HeraldStore

/// Push deadlines (docs/receipts.md, "Deadlines that escalate"): one row per push and action,
/// claimed by one owner when due and settled once.
extension SQLiteStore {
    /// `Ingest.deadlines`, inside the caller's transaction, after the ingest's rows.
    static func insert(_ deadlines: [PushDeadline], _ db: Database) throws {
        guard !deadlines.isEmpty else { return }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO push_deadlines (push_id, action, device_id, due_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (push_id, action) DO NOTHING
                """
        )
        for deadline in deadlines {
            try insert.execute(arguments: [
                deadline.pushID, deadline.action.rawValue, deadline.deviceID, deadline.dueAt,
            ])
        }
    }

    /// `StoreChange.cancelDeadlines`, inside the caller's transaction.
    static func cancelDeadlines(_ pushIDs: [String], _ db: Database) throws {
        for pushID in pushIDs {
            try db.execute(sql: "DELETE FROM push_deadlines WHERE push_id = ?", arguments: [pushID])
        }
    }

    /// `StoreChange.settleDeadline`'s removal, inside the caller's transaction: whether `owner`
    /// held the deadline (the caller then writes what it acted with).
    static func settle(_ deadline: PushDeadline, owner: String, _ db: Database) throws -> Bool {
        try db.execute(
            sql: "DELETE FROM push_deadlines WHERE push_id = ? AND action = ? AND owner = ?",
            arguments: [deadline.pushID, deadline.action.rawValue, owner]
        )
        return db.changesCount > 0
    }

    /// `StoreChange.countUnreportedCall`, inside the caller's transaction.
    static func countUnreportedCall(deviceID: String, at time: Int64, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO unreported_calls (device_id, count, last_at) VALUES (?, 1, ?)
                ON CONFLICT (device_id) DO UPDATE
                SET count = count + 1, last_at = MAX(last_at, excluded.last_at)
                """,
            arguments: [deviceID, time]
        )
    }

    package func claimDueDeadlines(_ lease: StoreWork.Lease) async throws -> [PushDeadline] {
        // One statement: the writer is single.
        try await claimRecords(
            """
            UPDATE push_deadlines SET owner = ?, lease_until = ?
            WHERE (push_id, action) IN (
                SELECT push_id, action FROM push_deadlines
                WHERE due_at <= ? AND (lease_until IS NULL OR lease_until < ? OR owner = ?)
                ORDER BY due_at, push_id LIMIT ?)
            RETURNING \(PushDeadline.columns)
            """,
            [lease.owner, lease.until, lease.now, lease.now, lease.owner, lease.limit]
        ) { ($0.dueAt, $0.pushID) < ($1.dueAt, $1.pushID) }
    }

    public func nextDeadlineDueTime() async throws -> Int64? {
        try await read { db in try Int64.fetchOne(db, sql: "SELECT MIN(due_at) FROM push_deadlines") }
    }

    public func devicesSent(subjectID: String, since: Int64, among deviceIDs: [String]) async throws -> Set<String> {
        try await read { db in
            var sent: Set<String> = []
            for deviceID in deviceIDs
            where try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM outbox WHERE device_id = ? AND created_at >= ? AND subject_id = ? LIMIT 1",
                arguments: [deviceID, since, subjectID]
            ) != nil {
                sent.insert(deviceID)
            }
            return sent
        }
    }

    public func unreportedCalls(deviceID: String) async throws -> UnreportedCalls? {
        try await readRecord("SELECT count, last_at FROM unreported_calls WHERE device_id = ?", [deviceID])
    }
}
