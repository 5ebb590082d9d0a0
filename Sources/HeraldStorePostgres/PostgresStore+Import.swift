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
            (SELECT COUNT(*) FROM api_keys), (SELECT COUNT(*) FROM audit_log), (SELECT COUNT(*) FROM held_messages)
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
        api_keys, audit_log, held_messages
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
        var apps = RowsInsert(
            """
            apps (id, team_id, content_policy, alert_title, alert_body, message_ttl, call_ttl, collapse_by_conversation,
                webhook_url, webhook_secret, apns_key, fcm_account, apns_environment, presence_policy,
                message_priority, queue_order, undeliverable, hold_for)
            """
        )
        var devices = RowsInsert(
            """
            devices (id, user_id, app_id, platform, messaging_token, voip_token, key_id, previous_key_id,
                device_public_key, relay_public_key, sealed_relay_secret_key, sealed_session_keys, credential_hash,
                token_dead_reason, created_at, updated_at, apns_environment, notification_permission,
                notification_permission_at)
            """
        )
        var presence = RowsInsert("presence (device_id, user_id, conversation, state, updated_at, expires_at)")
        var messages = RowsInsert(
            "messages (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options)"
        )
        var ingests = RowsInsert("ingests (idempotency_key, receipt, created_at)")
        var outbox = RowsInsert(
            """
            outbox (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority, apns_id,
                fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at,
                updated_at, waiting_since, now_or_never)
            """
        )
        var payloads = RowsInsert("outbox_payloads (push_id, payload)")
        var log = RowsInsert("delivery_log (push_id, at, state, reason)")
        var chats = RowsInsert("chats (conversation, user_id, started_at, last_event_at, ended_at)")
        var events = RowsInsert(
            "transcript_events (conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at)"
        )
        var disconnects = RowsInsert("chat_disconnects (device_id, conversation, position, at, pushed)")
        // Callbacks unclaimed (no owner, no lease), calls with their timer unclaimed, events
        // pending and unleased.
        var callbacks = RowsInsert(
            """
            callbacks (id, app_id, user_id, state, sealed_dialog, due_at, expires_at, pushes, version, last_action,
                idempotency_key, created_at, updated_at)
            """
        )
        var history = RowsInsert(
            "callback_history (callback_id, position, at, event, state, action, sequence, next_push_at)"
        )
        var calls = RowsInsert(
            """
            calls (id, app_id, user_id, media, sealed_caller, state, device_id, reason, created_at, expires_at,
                ringing_at, ended_at, updated_at)
            """
        )
        var callDevices = RowsInsert("call_devices (call_id, device_id, report, reported_at)")
        // `sequence` is given in the order handed over (a multi-row INSERT takes its values in
        // order): the export's order is the source's, so one key's events keep theirs.
        var webhookEvents = RowsInsert(
            """
            webhook_events (id, app_id, type, ordering_key, data, created_at, state, attempts, next_attempt_at,
                last_error, updated_at)
            """
        )
        var apiKeys = RowsInsert(
            "api_keys (id, name, app_id, scopes, secret_digest, rate_per_second, burst, created_at, revoked_at)"
        )
        var audit = RowsInsert("audit_log (id, at, actor, action, target, app_id)")
        var held = RowsInsert("held_messages (message_id, user_id, app_id, held_at, held_until)")
        for record in records {
            switch record {
            case .app(let app):
                apps.row {
                    $0.text(app.id)
                    $0.text(app.teamID)
                    $0.text(app.contentPolicy.rawValue)
                    $0.text(app.alertTitle)
                    $0.text(app.alertBody)
                    $0.integer(app.messageTTL)
                    $0.integer(app.callTTL)
                    $0.boolean(app.collapseByConversation)
                    $0.text(app.webhook?.url)
                    $0.bytes(app.webhook?.sealedSecret)
                    $0.text(app.apnsKey)
                    $0.text(app.fcmAccount)
                    $0.text(app.apnsEnvironment?.rawValue)
                    $0.text(app.presencePolicy.rawValue)
                    $0.integer(Int64(app.messagePriority))
                    $0.text(app.queueOrder.rawValue)
                    $0.text(app.undeliverable?.rawValue)
                    $0.integer(app.holdFor)
                }
            case .device(let device):
                devices.row {
                    $0.text(device.id)
                    $0.text(device.userID)
                    $0.text(device.appID)
                    $0.text(device.platform.rawValue)
                    $0.text(device.messagingToken)
                    $0.text(device.voipToken)
                    $0.text(device.keyID)
                    $0.text(device.previousKeyID)
                    $0.bytes(device.devicePublicKey)
                    $0.bytes(device.relayPublicKey)
                    $0.bytes(device.sealedRelaySecretKey)
                    $0.bytes(device.sealedSessionKeys)
                    $0.bytes(device.credentialHash)
                    $0.text(device.tokenDeadReason)
                    $0.integer(device.createdAt)
                    $0.integer(device.updatedAt)
                    $0.text(device.apnsEnvironment?.rawValue)
                    $0.text(device.notificationPermission.rawValue)
                    $0.integer(device.notificationPermissionAt)
                }
            case .presence(let record):
                presence.row {
                    $0.text(record.deviceID)
                    $0.text(record.userID)
                    $0.text(record.conversation)
                    $0.text(record.state.rawValue)
                    $0.integer(record.updatedAt)
                    $0.integer(record.expiresAt)
                }
            case .message(let message):
                messages.row {
                    $0.text(message.id)
                    $0.text(message.userID)
                    $0.text(message.conversation)
                    $0.bytes(message.sealedSender)
                    $0.bytes(message.sealedText)
                    $0.integer(message.createdAt)
                    $0.integer(message.expiresAt)
                    $0.bytes(message.sealedPushOptions)
                }
            case .idempotencyKey(let key):
                ingests.row {
                    $0.text(key.key)
                    $0.bytes(key.receipt)
                    $0.integer(key.createdAt)
                }
            case .push(let pending):
                let push = pending.entry
                let columns = StoredPayload(push.payload)
                outbox.row {
                    $0.text(push.pushID)
                    $0.text(push.deviceID)
                    $0.text(push.kind.rawValue)
                    $0.text(push.subjectID)
                    $0.integer(Int64(push.priority))
                    $0.text(push.network.rawValue)
                    $0.text(columns.topic)
                    $0.text(columns.pushType)
                    $0.integer(columns.apnsPriority.map { Int64($0) })
                    $0.text(columns.apnsID)
                    $0.text(columns.fcmPriority)
                    $0.text(push.collapseID)
                    $0.integer(Int64(push.attempts))
                    $0.integer(push.nextAttemptAt)
                    $0.integer(push.expiresAt)
                    // Unclaimed, whatever the source said: no node here holds it.
                    $0.text((push.state.isFinal ? push.state : .queued).rawValue)
                    $0.text(push.lastReason)
                    $0.integer(push.createdAt)
                    $0.integer(push.updatedAt)
                    $0.integer(push.waitingSince)
                    $0.boolean(push.nowOrNever)
                }
                payloads.row {
                    $0.text(push.pushID)
                    $0.text(columns.body)
                }
                try await log.makeRoom(for: pending.requeues.count, on: connection, logger: logger)
                for event in pending.requeues {
                    log.row {
                        $0.text(event.pushID)
                        $0.integer(event.at)
                        $0.text(event.state.rawValue)
                        $0.text(event.reason)
                    }
                }
            case .chat(let chat):
                chats.row {
                    $0.text(chat.conversation)
                    $0.text(chat.userID)
                    $0.integer(chat.startedAt)
                    $0.integer(chat.lastEventAt)
                    $0.integer(chat.endedAt)
                }
            case .transcriptEvent(let event):
                events.row {
                    $0.text(event.conversation)
                    $0.integer(Int64(event.position))
                    $0.text(event.userID)
                    $0.text(event.type)
                    $0.bytes(event.sealedAuthor)
                    $0.boolean(event.fromAgent)
                    $0.bytes(event.sealedText)
                    $0.integer(event.at)
                }
            case .disconnect(let disconnect):
                disconnects.row {
                    $0.text(disconnect.deviceID)
                    $0.text(disconnect.conversation)
                    $0.integer(Int64(disconnect.position))
                    $0.integer(disconnect.at)
                    $0.boolean(disconnect.pushed)
                }
            case .callback(let transfer):
                let callback = transfer.callback
                callbacks.row {
                    $0.text(callback.id)
                    $0.text(callback.appID)
                    $0.text(callback.userID)
                    $0.text(callback.state.rawValue)
                    $0.bytes(callback.sealedDialog)
                    $0.integer(callback.dueAt)
                    $0.integer(callback.expiresAt)
                    $0.integer(Int64(callback.pushes))
                    $0.integer(Int64(callback.version))
                    $0.text(callback.lastAction)
                    $0.text(transfer.idempotencyKey)
                    $0.integer(callback.createdAt)
                    $0.integer(callback.updatedAt)
                }
                try await history.makeRoom(for: transfer.history.count, on: connection, logger: logger)
                for (position, line) in transfer.history.enumerated() {
                    history.row {
                        $0.text(callback.id)
                        $0.integer(Int64(position + 1))
                        $0.integer(line.at)
                        $0.text(line.event.rawValue)
                        $0.text(line.state.rawValue)
                        $0.text(line.action)
                        $0.integer(line.sequence.map { Int64($0) })
                        $0.integer(line.nextPushAt)
                    }
                }
            case .call(let call):
                calls.row {
                    $0.text(call.id)
                    $0.text(call.appID)
                    $0.text(call.userID)
                    $0.text(call.media)
                    $0.bytes(call.sealedCaller)
                    $0.text(call.state.rawValue)
                    $0.text(call.deviceID)
                    $0.text(call.reason)
                    $0.integer(call.createdAt)
                    $0.integer(call.expiresAt)
                    $0.integer(call.ringingAt)
                    $0.integer(call.endedAt)
                    $0.integer(call.updatedAt)
                }
                try await callDevices.makeRoom(for: call.devices.count, on: connection, logger: logger)
                for device in call.devices {
                    callDevices.row {
                        $0.text(call.id)
                        $0.text(device.deviceID)
                        $0.text(device.report.rawValue)
                        $0.integer(device.reportedAt)
                    }
                }
            case .webhookEvent(let stored):
                let event = stored.event
                webhookEvents.row {
                    $0.text(event.id)
                    $0.text(event.appID)
                    $0.text(event.type.rawValue)
                    $0.text(event.orderingKey)
                    $0.text(event.data)
                    $0.integer(event.createdAt)
                    $0.text(WebhookEventState.pending.rawValue)
                    $0.integer(Int64(stored.attempts))
                    $0.integer(stored.nextAttemptAt)
                    $0.text(stored.lastError)
                    $0.integer(stored.updatedAt)
                }
            case .apiKey(let key):
                apiKeys.row {
                    $0.text(key.id)
                    $0.text(key.name)
                    $0.text(key.appID)
                    $0.text(key.scopesText)
                    $0.bytes(key.secretDigest)
                    $0.double(key.ratePerSecond)
                    $0.integer(key.burst.map { Int64($0) })
                    $0.integer(key.createdAt)
                    $0.integer(key.revokedAt)
                }
            case .auditEntry(let entry):
                audit.row {
                    $0.text(entry.id)
                    $0.integer(entry.at)
                    $0.text(entry.actor)
                    $0.text(entry.action)
                    $0.text(entry.target)
                    $0.text(entry.appID)
                }
            case .heldMessage(let message):
                held.row {
                    $0.text(message.messageID)
                    $0.text(message.userID)
                    $0.text(message.appID)
                    $0.integer(message.heldAt)
                    $0.integer(message.heldUntil)
                }
            }
        }
        let inserts = [
            apps, devices, presence, messages, ingests, outbox, payloads, log, chats, events, disconnects, callbacks,
            history, calls, callDevices, webhookEvents, apiKeys, audit, held,
        ]
        for insert in inserts where !insert.isEmpty {
            try await connection.run(insert.query, logger: logger)
        }
    }
}
