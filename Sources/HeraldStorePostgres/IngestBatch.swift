import HeraldStore
import NIOCore
import PostgresNIO

/// A batch of ingests as one prepared statement: the idempotency keys, the messages, the pushes
/// and their payloads (those the accepting node keeps written claimed by it), the live handovers,
/// each a data-modifying CTE over arrays, every row tagged with its ingest's position. An ingest
/// whose recipients version is no longer its user's writes nothing, its key included; the others'
/// rows are written only if their key was new (or they have none). Its rows are the positions
/// written (`false`) and those found stale (`true`).
///
/// Its shape is the same for every batch, so each connection parses and plans it once. Of two
/// batches holding one key, the second's `ON CONFLICT DO NOTHING` waits for the first to commit
/// and then inserts nothing for that ingest.
struct AcceptBatchStatement: RowsStatement {
    static let sql = """
        WITH given AS (
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bigint[], $44::text[], $45::bigint[])
                AS given(n, key, receipt, at, version_user, version)),
        stale AS (
            SELECT n FROM given WHERE version_user IS NOT NULL
                AND version <> COALESCE((SELECT r.version FROM recipient_versions r WHERE r.user_id = version_user), 0)),
        i AS (SELECT * FROM given WHERE n NOT IN (SELECT n FROM stale)),
        k AS (
            INSERT INTO ingests (idempotency_key, receipt, created_at)
            SELECT key, receipt, at FROM i WHERE key IS NOT NULL
            ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key),
        ok AS (SELECT n FROM i WHERE key IS NULL OR key IN (SELECT idempotency_key FROM k)),
        m AS (
            INSERT INTO messages
                (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options)
            SELECT id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options
            FROM unnest($5::bigint[], $6::text[], $7::text[], $8::text[], $9::bytea[], $10::bytea[], $11::bigint[],
                $12::bigint[], $41::bytea[])
                AS m(n, id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at,
                    sealed_push_options)
            WHERE n IN (SELECT n FROM ok)),
        o AS (
            INSERT INTO outbox
                (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority, apns_id,
                 fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at,
                 updated_at, waiting_since, now_or_never, claim_owner, claim_until, trace_context)
            SELECT push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority, apns_id,
                 fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at,
                 updated_at, waiting_since, now_or_never, claim_owner, claim_until, trace_context
            FROM unnest(
                $13::bigint[], $14::text[], $15::text[], $16::text[], $17::text[], $18::bigint[], $19::text[],
                $20::text[], $21::text[], $22::bigint[], $23::text[], $24::text[], $25::text[], $26::bigint[],
                $27::bigint[], $28::bigint[], $29::text[], $30::text[], $31::bigint[], $32::bigint[],
                $39::bigint[], $40::bool[], $42::text[], $43::bigint[], $46::text[])
                AS o(n, push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority,
                    apns_id, fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason,
                    created_at, updated_at, waiting_since, now_or_never, claim_owner, claim_until, trace_context)
            WHERE n IN (SELECT n FROM ok)),
        p AS (
            INSERT INTO outbox_payloads (push_id, payload)
            SELECT push_id, payload FROM unnest($13::bigint[], $14::text[], $33::text[]) AS p(n, push_id, payload)
            WHERE n IN (SELECT n FROM ok)),
        h AS (
            INSERT INTO live_handovers (message_id, device_id, node_id, deadline)
            SELECT message_id, device_id, node_id, deadline
            FROM unnest($34::bigint[], $35::text[], $36::text[], $37::text[], $38::bigint[])
                AS h(n, message_id, device_id, node_id, deadline)
            WHERE n IN (SELECT n FROM ok))
        SELECT n, false FROM ok UNION ALL SELECT n, true FROM stale
        """

    let ingests: [Ingest]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 46)
        let numbers = ingests.indices.map { Int64($0) }
        bindings.append(numbers)
        bindings.append(NullableArray(ingests.map(\.idempotencyKey)))
        bindings.append(NullableArray(ingests.map { $0.idempotencyKey == nil ? nil : ByteBuffer($0.receipt) }))
        bindings.append(ingests.map { $0.pushes.first?.createdAt ?? $0.message?.createdAt ?? 0 })

        let messages = ingests.enumerated().compactMap { index, ingest in ingest.message.map { (Int64(index), $0) } }
        bindings.append(messages.map(\.0))
        bindings.append(messages.map(\.1.id))
        bindings.append(messages.map(\.1.userID))
        bindings.append(messages.map(\.1.conversation))
        bindings.append(messages.map { ByteBuffer($0.1.sealedSender) })
        bindings.append(messages.map { ByteBuffer($0.1.sealedText) })
        bindings.append(messages.map(\.1.createdAt))
        bindings.append(messages.map(\.1.expiresAt))

        // The pushes the accepting node keeps are written claimed by it (`Ingest.claim`).
        let tagged = ingests.enumerated().flatMap { index, ingest in ingest.writtenPushes.map { (Int64(index), $0) } }
        let pushes = tagged.map(\.1.entry)
        let payloads = pushes.map { StoredPayload($0.payload) }
        bindings.append(tagged.map(\.0))
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

        let handovers = ingests.enumerated().flatMap { index, ingest in ingest.handovers.map { (Int64(index), $0) } }
        bindings.append(handovers.map(\.0))
        bindings.append(handovers.map(\.1.messageID))
        bindings.append(handovers.map(\.1.deviceID))
        bindings.append(handovers.map(\.1.nodeID))
        bindings.append(handovers.map(\.1.deadline))
        // Queue order and now or never (appended last, so the numbers above stay put).
        bindings.append(NullableArray(pushes.map(\.waitingSince)))
        bindings.append(pushes.map(\.nowOrNever))
        // $41, the messages' sealed push options (NULL for most): kept for a live delivery's push.
        bindings.append(NullableArray(messages.map { $0.1.sealedPushOptions.map { ByteBuffer($0) } }))
        // $42 and $43, the node that keeps the push (`Ingest.claim`) and its lease.
        bindings.append(NullableArray(tagged.map(\.1.claimOwner)))
        bindings.append(NullableArray(tagged.map(\.1.claimUntil)))
        // $44 and $45, the recipients version each ingest was made for (NULL: not checked).
        bindings.append(NullableArray(ingests.map { $0.recipientsVersion?.userID }))
        bindings.append(ingests.map { $0.recipientsVersion?.version ?? 0 })
        // $46, each push's trace context (NULL unless tracing is on).
        bindings.append(NullableArray(pushes.map(\.traceParent)))
        return bindings
    }
}
