public import HeraldStore
import Logging
import NIOCore
import PostgresNIO

extension PostgresStore: StoreImport {
    /// Counted as an export counts: pushes not finished yet (queued or claimed) are pending.
    private static var tallyQuery: PostgresQuery {
        """
        SELECT (SELECT COUNT(*) FROM apps), (SELECT COUNT(*) FROM devices), (SELECT COUNT(*) FROM presence),
            (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM ingests),
            (SELECT COUNT(*) FROM outbox WHERE state IN ('queued', 'sending')), (SELECT COUNT(*) FROM chats),
            (SELECT COUNT(*) FROM transcript_events), (SELECT COUNT(*) FROM chat_disconnects),
            (SELECT COUNT(*) FROM callbacks), (SELECT COUNT(*) FROM calls),
            (SELECT COUNT(*) FROM webhook_events WHERE state IN ('pending', 'sending')),
            (SELECT COUNT(*) FROM api_keys), (SELECT COUNT(*) FROM audit_log), (SELECT COUNT(*) FROM held_messages),
            (SELECT COUNT(*) FROM operators)
        """
    }

    private static func tally(_ rows: [PostgresRow]) throws -> StoreTally {
        guard let row = rows.first else { return StoreTally() }
        var columns = Columns(row)
        var tally = StoreTally()
        for kind in StoreRecordKind.allCases {
            tally[kind] = Int(try columns.next(Int64.self))
        }
        return tally
    }

    public func importTally() async throws -> StoreTally {
        try Self.tally(try await rows("count the records", Self.tallyQuery))
    }

    /// Every table an import writes, locked against other writers (they wait; readers do not)
    /// for the whole import, so a relay node started too early cannot slip a record in between
    /// the emptiness check and the commit.
    private static let tables = """
        apps, devices, presence, messages, ingests, outbox, outbox_payloads, delivery_log, transcript_heads, \
        transcript_events, chat_disconnects, chats, callbacks, callback_history, calls, call_devices, webhook_events, \
        api_keys, audit_log, held_messages, operators
        """

    /// One transaction on a connection of its own, outside the pool: an import takes longer than
    /// the bound every pooled call is held to. Nothing is visible to other sessions before the
    /// commit, and a failure anywhere (the source, the network, a refused row, counts that differ)
    /// rolls everything back: no record is left and the import can be run again.
    public func importAll(from source: any StoreExport, batchSize: Int) async throws -> StoreTally {
        let expected = try await source.exportTally()
        let connection: PostgresConnection
        do {
            connection = try await PostgresMigrations.connect(configuration, logger: logger)
        } catch {
            throw StoreError.unavailable.with(
                detail: "cannot connect to \(configuration): \(PostgresFailure.describe(error))"
            )
        }
        let logger = logger
        do {
            try await connection.run("BEGIN", logger: logger)
            // Relay nodes writing here hold row locks for milliseconds; a lock still held after
            // seconds means a node is busy on this database.
            try await connection.run("SET LOCAL lock_timeout = '3s'", logger: logger)
            do {
                try await connection.run(
                    "LOCK TABLE \(unescaped: Self.tables) IN SHARE ROW EXCLUSIVE MODE",
                    logger: logger
                )
            } catch  where PostgresFailure.sqlState(error) == "55P03" {
                throw StoreError.conflict.with(
                    detail:
                        "other sessions keep writing to the PostgreSQL database: stop the relay nodes using it first"
                )
            }
            try await Self.requireEmpty(connection, logger: logger)
            try await source.export(batchSize: max(1, min(batchSize, 1000))) { records in
                try await Self.insert(records, on: connection, logger: logger)
            }
            try await connection.run(
                """
                INSERT INTO transcript_heads (conversation, last_position)
                SELECT conversation, MAX(position) FROM transcript_events GROUP BY conversation
                """,
                logger: logger
            )
            let written = try Self.tally(try await connection.run(Self.tallyQuery, logger: logger))
            guard written == expected else {
                throw StoreError.conflict.with(
                    detail:
                        "the records written (\(written)) are not those the source holds (\(expected)): nothing was written"
                )
            }
            try await connection.run("COMMIT", logger: logger)
            try? await connection.close()
            announceQueued()
            return written
        } catch {
            _ = try? await connection.run("ROLLBACK", logger: logger)
            try? await connection.close()
            // The database's failures as store errors; the source's as they came.
            if error is PSQLError { throw PostgresFailure.storeError(error, while: "import") }
            throw error
        }
    }

    private static func requireEmpty(_ connection: PostgresConnection, logger: Logger) async throws {
        let held = try tally(try await connection.run(tallyQuery, logger: logger))
        var finished: Int64 = 0
        for row in try await connection.run(
            """
            SELECT (SELECT COUNT(*) FROM outbox WHERE state NOT IN ('queued', 'sending'))
                + (SELECT COUNT(*) FROM webhook_events WHERE state NOT IN ('pending', 'sending'))
            """,
            logger: logger
        ) {
            finished = try row.decode(Int64.self)
        }
        guard held.total == 0, finished == 0 else {
            throw StoreError.conflict.with(
                detail:
                    "the PostgreSQL database already holds Herald data (\(held), finished pushes and webhook events "
                    + "\(finished)): "
                    + "migrate into an empty database or schema"
            )
        }
    }

    /// Writes a batch with one multi-row INSERT per table, tables in the order records refer to
    /// each other.
    private static func insert(_ records: [StoreRecord], on connection: PostgresConnection, logger: Logger) async throws
    {
        var rows = ImportRows()
        for record in records {
            try await rows.add(record, on: connection, logger: logger)
        }
        try await rows.run(on: connection, logger: logger)
    }
}
