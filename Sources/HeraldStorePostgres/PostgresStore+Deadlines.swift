public import HeraldStore
import Logging
import PostgresNIO

/// Push deadlines (docs/receipts.md, "Deadlines that escalate"), as on SQLite: one row per push and
/// action, claimed by one node when due and settled once.
extension PostgresStore {
    /// `Ingest.deadlines`, inside the caller's transaction (an ingest that is not written writes
    /// none: the caller writes them after its rows).
    static func insert(_ deadlines: [PushDeadline], on connection: PostgresConnection, logger: Logger) async throws {
        for deadline in deadlines {
            try await connection.run(
                """
                INSERT INTO push_deadlines (push_id, action, device_id, due_at)
                VALUES (\(deadline.pushID), \(deadline.action.rawValue), \(deadline.deviceID), \(deadline.dueAt))
                ON CONFLICT (push_id, action) DO NOTHING
                """,
                logger: logger
            )
        }
    }

    /// `StoreChange.cancelDeadlines`, inside the caller's transaction.
    static func cancelDeadlines(_ pushIDs: [String], on connection: PostgresConnection, logger: Logger) async throws {
        guard !pushIDs.isEmpty else { return }
        try await connection.run("DELETE FROM push_deadlines WHERE push_id = ANY(\(pushIDs))", logger: logger)
    }

    /// `StoreChange.settleDeadline`'s removal, inside the caller's transaction: whether `owner`
    /// held the deadline (the caller then writes what it acted with).
    static func settle(
        _ deadline: PushDeadline,
        owner: String,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Bool {
        try await connection.run(
            """
            DELETE FROM push_deadlines
            WHERE push_id = \(deadline.pushID) AND action = \(deadline.action.rawValue) AND owner = \(owner)
            RETURNING 1
            """,
            logger: logger
        ).first != nil
    }

    /// `StoreChange.countUnreportedCall`, inside the caller's transaction.
    static func countUnreportedCall(
        deviceID: String,
        at time: Int64,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        try await connection.run(
            """
            INSERT INTO unreported_calls (device_id, count, last_at) VALUES (\(deviceID), 1, \(time))
            ON CONFLICT (device_id) DO UPDATE
            SET count = unreported_calls.count + 1, last_at = GREATEST(unreported_calls.last_at, EXCLUDED.last_at)
            """,
            logger: logger
        )
    }

    package func claimDueDeadlines(_ lease: StoreWork.Lease) async throws -> [PushDeadline] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        // One statement; SKIP LOCKED leaves a deadline another node is claiming or settling to it.
        return try await rows(
            "claim due push deadlines",
            """
            WITH due AS (
                SELECT push_id, action FROM push_deadlines
                WHERE due_at <= \(now) AND (lease_until IS NULL OR lease_until < \(now) OR owner = \(owner))
                ORDER BY due_at, push_id LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE push_deadlines d SET owner = \(owner), lease_until = \(leaseUntil)
            FROM due WHERE d.push_id = due.push_id AND d.action = due.action
            RETURNING d.push_id, d.device_id, d.action, d.due_at
            """
        ).map { try $0.record(PushDeadline.self) }.sorted { ($0.dueAt, $0.pushID) < ($1.dueAt, $1.pushID) }
    }

    public func nextDeadlineDueTime() async throws -> Int64? {
        let rows = try await rows("read the next push deadline", "SELECT MIN(due_at) FROM push_deadlines")
        do {
            return try rows.first?.decode(Int64?.self) ?? nil
        } catch {
            throw StoreError.corrupt.with(detail: "read the next push deadline: \(error)")
        }
    }

    public func devicesSent(subjectID: String, since: Int64, among deviceIDs: [String]) async throws -> Set<String> {
        guard !deviceIDs.isEmpty else { return [] }
        let rows = try await rows(
            "read a message's devices",
            """
            SELECT DISTINCT device_id FROM outbox
            WHERE device_id = ANY(\(deviceIDs)) AND created_at >= \(since) AND subject_id = \(subjectID)
            """
        )
        do {
            return Set(try rows.map { try $0.decode(String.self) })
        } catch {
            throw StoreError.corrupt.with(detail: "read a message's devices: \(error)")
        }
    }

    public func unreportedCalls(deviceID: String) async throws -> UnreportedCalls? {
        try await rows(
            "read a device's unreported calls",
            "SELECT count, last_at FROM unreported_calls WHERE device_id = \(deviceID)"
        ).first.map { try $0.record(UnreportedCalls.self) }
    }
}
