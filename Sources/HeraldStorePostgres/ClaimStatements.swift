import HeraldStore
import PostgresNIO

/// The dispatcher's claim, prepared: the due pushes of the wanted networks, calls first then the
/// longest waiting (`COALESCE(waiting_since, created_at)`: the customer's wait where the push has
/// one, else its time in the queue; the queued indexes hold that expression), taken for `owner`
/// until `leaseUntil`, each with its payload and its device's tokens.
///
/// The device columns come from the same statement (a join on the rows being taken) rather than a
/// second read in a transaction: one round trip instead of five (BEGIN, two statements, a read,
/// COMMIT), and a statement is atomic on its own.
struct ClaimStatement: RowsStatement {
    /// The tokens of a claimed push's device, as the claim saw them.
    struct Device {
        var messaging: String?
        var voip: String?
        var deadReason: String?
        /// The environment of its APNs tokens, and its app's key and account.
        var apnsEnvironment: String?
        var apnsKey: String?
        var fcmAccount: String?
        /// The device's notification permission (`granted`, `denied`).
        var notifications: String?
        /// A browser's subscription keys (p256dh ‖ auth).
        var webPushKeys: [UInt8]?
    }

    static let sql = """
        WITH due AS (
            SELECT push_id, device_id FROM outbox
            WHERE state = 'queued' AND next_attempt_at <= $1 AND network = ANY($2::text[])
            ORDER BY priority DESC, COALESCE(waiting_since, created_at) ASC LIMIT $3
            FOR UPDATE SKIP LOCKED)
        UPDATE outbox o SET state = 'sending', claim_owner = $4, claim_until = $5,
            attempts = o.attempts + 1, updated_at = $1
        FROM due LEFT JOIN outbox_payloads p ON p.push_id = due.push_id LEFT JOIN devices d ON d.id = due.device_id
            LEFT JOIN apps a ON a.id = d.app_id
        WHERE o.push_id = due.push_id
        RETURNING \(PostgresStore.outboxColumns), d.id IS NOT NULL, d.messaging_token, d.voip_token, d.token_dead_reason,
            d.apns_environment, a.apns_key, a.fcm_account, d.notification_permission, d.web_push_keys
        """

    var now: Int64
    var networks: [String]
    var limit: Int64
    var owner: String
    var leaseUntil: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(now)
        bindings.append(networks)
        bindings.append(limit)
        bindings.append(owner)
        bindings.append(leaseUntil)
        return bindings
    }
}

/// Claims whose owner never came back (their lease ran out) go back to the queue. SKIP LOCKED: a
/// lease another node is putting back or finishing right now is left to it.
struct ExpiredClaimsStatement: RowsStatement {
    static let sql = """
        UPDATE outbox SET state = 'queued', claim_owner = NULL, claim_until = NULL
        WHERE push_id IN (
            SELECT push_id FROM outbox WHERE state = 'sending' AND claim_until < $1
            FOR UPDATE SKIP LOCKED)
        """

    var now: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(now)
        return bindings
    }
}

/// Pushes finished (delivered, token dead, failed, expired), each with its reason or none and
/// its time: the dispatchers' usual outcomes, several batches' in one statement
/// (`PostgresStore.complete(_:)`).
struct FinishStatement: RowsStatement {
    /// With the pushes' webhook events (`PushEvents`) and the delivered callback pushes'
    /// `callback.pushed` (`CallbackPushedEvents`), in the same statement.
    static let sql = """
        WITH done AS (
            UPDATE outbox o SET state = u.state, last_reason = CASE WHEN u.has THEN u.reason END,
                claim_owner = NULL, claim_until = NULL, updated_at = u.at
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::bigint[]) AS u(id, state, reason, has, at)
            WHERE o.push_id = u.id
            RETURNING o.push_id, o.device_id, o.kind, o.state, o.last_reason, o.updated_at, o.subject_id,
                o.trace_context
        ),
        """ + CallbackPushedEvents.delivered + PushEvents.insert(now: "done.updated_at")

    var ids: [String] = []
    var states: [String] = []
    var reasons: [String] = []
    var hasReason: [Bool] = []
    var times: [Int64] = []

    /// Adds `completions` (each a `.finish`) finished at `now`.
    mutating func append(_ completions: [PushCompletion], at now: Int64) {
        for completion in completions {
            guard case .finish(let state) = completion.disposition else { continue }
            ids.append(completion.pushID)
            states.append(state.rawValue)
            reasons.append(completion.reason ?? "")
            hasReason.append(completion.reason != nil)
            times.append(now)
        }
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(ids)
        bindings.append(states)
        bindings.append(reasons)
        bindings.append(hasReason)
        bindings.append(times)
        return bindings
    }
}

/// The webhook events of finished pushes, for the apps that have a webhook: appended to a
/// statement whose `done` CTE returns the pushes it finished (push_id, device_id, kind, state,
/// last_reason), so each event is written in the same statement as its push's final state. The
/// event id is the type and the push id: a push's final state is one event.
///
/// The `EXISTS` is a one-time filter: while no app has a webhook the join is never run, so a
/// relay without webhooks pays nothing for it (as on SQLite). Without it, a batch of finished
/// pushes joined them to the devices, and for a large batch PostgreSQL chose a sequential scan of
/// every device: 1,721 scans of 10,000 devices in one run of the relay benchmark.
enum PushEvents {
    static func insert(now: String) -> String {
        """
        INSERT INTO webhook_events
            (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at, trace_context)
        SELECT 'push.' || done.state || ':' || done.push_id, d.app_id, 'push.' || done.state,
            'push:' || done.push_id,
            json_build_object('device_id', done.device_id, 'kind', done.kind, 'push_id', done.push_id,
                'reason', done.last_reason, 'state', done.state, 'user_id', d.user_id)::text,
            \(now), \(now), \(now), done.trace_context
        FROM done JOIN devices d ON d.id = done.device_id JOIN apps a ON a.id = d.app_id
        WHERE a.webhook_url IS NOT NULL AND done.state IN ('delivered', 'token_dead', 'failed', 'expired')
            AND EXISTS (SELECT 1 FROM apps WHERE webhook_url IS NOT NULL)
        ON CONFLICT (id) DO NOTHING
        """
    }
}

/// The `callback.pushed` event of a callback's push delivered, written in the statement that
/// finishes it (a CTE after `done`, which returns the pushes' subject too), as on SQLite
/// (`SQLiteStore.deliveredPushEventSQL`): once per push number (`ON CONFLICT DO NOTHING`, also
/// for two devices of one push in one batch), while the callback waits for the answer to that
/// push. `FOR UPDATE OF c` takes the callback's row as its other writers do, so the event is
/// sequenced after an expiry or answer that committed first, and its state is read again then.
/// Pushes queued before v17 (a subject without `#`) write none: theirs was written when queued.
enum CallbackPushedEvents {
    static let delivered = """
        callback_pushed AS (
            INSERT INTO webhook_events (id, app_id, type, ordering_key, data, created_at, next_attempt_at, updated_at)
            SELECT 'callback.pushed:' || done.subject_id, c.app_id, 'callback.pushed', 'callback:' || c.id,
                json_build_object('callback_id', c.id,
                    'devices', (SELECT count(*) FROM outbox x
                        WHERE x.kind = 'callback' AND x.subject_id = done.subject_id AND x.state <> 'skipped'),
                    'push', c.pushes, 'state', 'pushed'::text, 'user_id', c.user_id)::text,
                done.updated_at, done.updated_at, done.updated_at
            FROM done JOIN callbacks c ON c.id = split_part(done.subject_id, '#', 1) JOIN apps a ON a.id = c.app_id
            WHERE done.kind = 'callback' AND done.state = 'delivered' AND strpos(done.subject_id, '#') > 0
                AND c.state = 'pushed' AND c.pushes::text = split_part(done.subject_id, '#', 2)
                AND a.webhook_url IS NOT NULL
            FOR UPDATE OF c
            ON CONFLICT (id) DO NOTHING
        )

        """
}
