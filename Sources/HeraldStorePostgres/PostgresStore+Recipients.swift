import Foundation
import HeraldBatching
public import HeraldStore
import PostgresNIO
import Synchronization

/// The recipients this node read last, per user, each with its version: an ingest made from them
/// carries the version, and `accept` writes it only while the version is still the user's
/// (`recipient_versions`, raised by triggers on every change to devices, presence and live
/// channels). So a kept entry is never trusted, only checked: a stale one costs the ingest a
/// fresh read and a second try, never a push to a device that left or a device missed.
///
/// Why: the recipients read was the most frequent statement on PostgreSQL, one per batch of
/// ingests, on every ingest's path; a user's next message mostly finds the recipients unchanged.
/// Users without devices are not kept (no row brings their version).
struct RecipientCache: Sendable {
    /// Users kept at most; past it the cache starts again empty (a bound, not an eviction policy:
    /// a relay with more users writing at once than this reads more often). A user's entry is
    /// about a kilobyte per device (keys, tokens, sealed secrets): some 20 MB at most.
    static let capacity = 20_000

    private var entries: [String: RecipientsSnapshot] = [:]

    func snapshot(userID: String) -> RecipientsSnapshot? { entries[userID] }

    /// Keeps what a read found, unless an entry of a later version is kept already; a user read
    /// without a version (no devices) is not kept.
    mutating func keep(_ found: RecipientsSnapshot, userID: String) {
        guard let version = found.version?.version else {
            entries[userID] = nil
            return
        }
        if let kept = entries[userID]?.version?.version, kept > version { return }
        if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
        entries[userID] = found
    }

    mutating func forget(userID: String) { entries[userID] = nil }
}

extension PostgresStore {
    public func recipients(userID: String) async throws -> [Recipient] {
        try await readRecipients(userID: userID).recipients
    }

    /// From the cache when this node read the user's recipients before, else read (and kept);
    /// either way with the version `accept` checks.
    public func recipientsForIngest(userID: String) async throws -> RecipientsSnapshot {
        if let kept = recipientCache.withLock({ $0.snapshot(userID: userID) }) { return kept }
        return try await readRecipients(userID: userID)
    }

    /// Reads a user's recipients (batched with the reads asked for meanwhile) and keeps them;
    /// a user without devices comes without a version (no row brings it).
    func readRecipients(userID: String) async throws(StoreError) -> RecipientsSnapshot {
        let found = try await batched(
            recipientReads,
            userID,
            "read users' devices",
            Batcher.allOrNothing { [self] asked in
                let users = Array(Set(asked))
                let rows = try await rows("read users' devices", prepared: RecipientsStatement(userIDs: users))
                var found: [String: RecipientsSnapshot] = [:]
                do {
                    for row in rows {
                        var columns = Columns(row)
                        let recipient = try Recipient(columns: &columns)
                        let device = recipient.device
                        let version = RecipientsVersion(userID: device.userID, version: try columns.next())
                        found[device.userID, default: RecipientsSnapshot(recipients: [], version: version)].recipients
                            .append(recipient)
                    }
                } catch {
                    throw StoreError.corrupt.with(detail: "read users' devices: \(error)")
                }
                recipientCache.withLock { cache in
                    for user in users {
                        cache.keep(found[user] ?? RecipientsSnapshot(recipients: [], version: nil), userID: user)
                    }
                }
                return asked.map { found[$0] }
            }
        )
        return found ?? RecipientsSnapshot(recipients: [], version: nil)
    }
}

/// Users' devices with their presence and the live channel a node published for each, and the
/// user's recipients version: every ingest's one read (batched by `PostgresStore.recipientReads`), prepared once
/// per connection. The version is read in the same statement, so it is the version of what the
/// rows show.
///
/// Every join is a lookup by key on its own (`LATERAL`, each kept a subquery by `OFFSET 0`), so
/// the plan is index probes per user and per device whatever the batch's size or the tables'
/// statistics. As a plain `user_id = ANY(…)`, a devices table not analyzed yet (PostgreSQL then
/// guesses 48 devices a user out of 10,000) made larger batches scan every device: 1,858 scans
/// of 10,000 rows in one benchmark run, whose devices were all activated within the minute before
/// autovacuum first looked.
///
/// Why the users come as a JSON array: PostgreSQL sees the length of a `text[]` parameter when it
/// plans for the bound values, and then always found a plan for two users cheaper than one for
/// any count, so it planned every call anew (0.25 ms of planning for 0.08 ms of execution, 3.7 s
/// of the database's CPU in a three-node benchmark run). The length of a JSON array is not seen,
/// so after its first five calls a connection keeps one plan; the plan's shape being fixed by
/// the lookups above, that plan is the one a fresh table would get too.
struct RecipientsStatement: RowsStatement {
    static let sql = """
        SELECT \(Recipient.columns),
            COALESCE((SELECT version FROM recipient_versions r WHERE r.user_id = u.user_id), 0)
        FROM jsonb_array_elements_text($1::jsonb) AS u(user_id)
            CROSS JOIN LATERAL (SELECT * FROM devices WHERE devices.user_id = u.user_id OFFSET 0) d
            LEFT JOIN LATERAL (SELECT * FROM presence WHERE presence.device_id = d.id OFFSET 0) p ON true
            LEFT JOIN LATERAL (SELECT * FROM live_sessions WHERE live_sessions.device_id = d.id OFFSET 0) l ON true
        ORDER BY d.created_at, d.id
        """

    var userIDs: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(try Self.jsonArray(userIDs))
        return bindings
    }

    /// `strings` as a JSON array of strings.
    static func jsonArray(_ strings: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(strings), as: UTF8.self)
    }
}
