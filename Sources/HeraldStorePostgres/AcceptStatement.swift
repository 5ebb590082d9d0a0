import HeraldStore
import NIOCore
import PostgresNIO

/// An ingest as one prepared statement: the idempotency key, the message, the pushes and their
/// payloads, each a data-modifying CTE, all written only if the key was new; its one row says
/// whether it wrote. One round trip, atomic without BEGIN and COMMIT.
///
/// Its shape is the same for every ingest (a message or none, one push or fifty: the pushes go as
/// one array per column), so each connection parses and plans it once; before, the statement was
/// built per ingest and PostgreSQL planned it every time.
///
/// Of two ingests with one key, the second's `ON CONFLICT DO NOTHING` waits for the first to
/// commit and then inserts nothing: it writes nothing else and answers false.
struct AcceptStatement: PostgresPreparedStatement {
    typealias Row = Bool

    static let sql = """
        WITH k AS (
            INSERT INTO ingests (idempotency_key, receipt, created_at)
            SELECT $1::text, $2::bytea, $3::bigint WHERE $1::text IS NOT NULL
            ON CONFLICT (idempotency_key) DO NOTHING RETURNING 1),
        go AS (SELECT ($1::text IS NULL OR EXISTS (SELECT 1 FROM k)) AS new),
        m AS (
            INSERT INTO messages (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at)
            SELECT $4::text, $5::text, $6::text, $7::bytea, $8::bytea, $9::bigint, $10::bigint
            WHERE $4::text IS NOT NULL AND (SELECT new FROM go)),
        o AS (
            INSERT INTO outbox
                (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority, apns_id,
                 fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at,
                 updated_at)
            SELECT * FROM unnest(
                $11::text[], $12::text[], $13::text[], $14::text[], $15::bigint[], $16::text[], $17::text[],
                $18::text[], $19::bigint[], $20::text[], $21::text[], $22::text[], $23::bigint[], $24::bigint[],
                $25::bigint[], $26::text[], $27::text[], $28::bigint[], $29::bigint[])
            WHERE (SELECT new FROM go)),
        p AS (
            INSERT INTO outbox_payloads (push_id, payload)
            SELECT * FROM unnest($11::text[], $30::text[]) WHERE (SELECT new FROM go))
        SELECT new FROM go
        """

    let ingest: Ingest

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 30)
        let now = ingest.pushes.first?.createdAt ?? ingest.message?.createdAt ?? 0
        bindings.append(ingest.idempotencyKey)
        bindings.append(ingest.idempotencyKey.map { _ in ByteBuffer(ingest.receipt) })
        bindings.append(now)
        let message = ingest.message
        bindings.append(message?.id)
        bindings.append(message?.userID)
        bindings.append(message?.conversation)
        bindings.append(message.map { ByteBuffer($0.sealedSender) })
        bindings.append(message.map { ByteBuffer($0.sealedText) })
        bindings.append(message?.createdAt)
        bindings.append(message?.expiresAt)

        let pushes = ingest.pushes
        let payloads = pushes.map { StoredPayload($0.payload) }
        bindings.append(pushes.map(\.pushID))
        bindings.append(pushes.map(\.deviceID))
        bindings.append(pushes.map(\.kind.rawValue))
        bindings.append(pushes.map(\.subjectID))
        bindings.append(pushes.map { Int64($0.priority) })
        bindings.append(pushes.map(\.network.rawValue))
        bindings.append(payloads.map(\.topic))
        bindings.append(NullableArray(payloads.map(\.pushType)))
        bindings.append(NullableArray(payloads.map { $0.apnsPriority.map { Int64($0) } }))
        bindings.append(NullableArray(payloads.map(\.apnsID)))
        bindings.append(NullableArray(payloads.map(\.fcmPriority)))
        bindings.append(NullableArray(pushes.map(\.collapseID)))
        bindings.append(pushes.map { Int64($0.attempts) })
        bindings.append(pushes.map(\.nextAttemptAt))
        bindings.append(pushes.map(\.expiresAt))
        bindings.append(pushes.map(\.state.rawValue))
        bindings.append(NullableArray(pushes.map(\.lastReason)))
        bindings.append(pushes.map(\.createdAt))
        bindings.append(pushes.map(\.updatedAt))
        bindings.append(payloads.map(\.body))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self) }
}
