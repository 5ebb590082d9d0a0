import HeraldStore
import Logging
import PostgresNIO

/// One import batch as rows: one multi-row INSERT per table, each record's values added to its
/// table's INSERT, the tables run in the order records refer to each other.
struct ImportRows {
    private var apps = RowsInsert(
        """
        apps (id, team_id, content_policy, alert_title, alert_body, message_ttl, call_ttl, collapse_by_conversation,
            webhook_url, webhook_secret, apns_key, fcm_account, apns_environment, presence_policy,
            message_priority, queue_order, undeliverable, hold_for, deadlines)
        """
    )
    private var devices = RowsInsert(
        """
        devices (id, user_id, app_id, platform, messaging_token, voip_token, key_id, previous_key_id,
            device_public_key, relay_public_key, sealed_relay_secret_key, sealed_session_keys, credential_hash,
            token_dead_reason, created_at, updated_at, apns_environment, notification_permission,
            notification_permission_at, web_push_keys)
        """
    )
    private var presence = RowsInsert("presence (device_id, user_id, conversation, state, updated_at, expires_at)")
    private var messages = RowsInsert(
        "messages (id, user_id, conversation, sealed_sender, sealed_text, created_at, expires_at, sealed_push_options)"
    )
    private var ingests = RowsInsert("ingests (idempotency_key, receipt, created_at)")
    private var outbox = RowsInsert(
        """
        outbox (push_id, device_id, kind, subject_id, priority, network, topic, push_type, apns_priority, apns_id,
            fcm_priority, collapse_id, attempts, next_attempt_at, expires_at, state, last_reason, created_at,
            updated_at, waiting_since, now_or_never, trace_context)
        """
    )
    private var payloads = RowsInsert("outbox_payloads (push_id, payload)")
    private var log = RowsInsert("delivery_log (push_id, at, state, reason)")
    private var chats = RowsInsert("chats (conversation, user_id, started_at, last_event_at, ended_at)")
    private var events = RowsInsert(
        "transcript_events (conversation, position, user_id, type, sealed_author, from_agent, sealed_text, at)"
    )
    private var disconnects = RowsInsert("chat_disconnects (device_id, conversation, position, at, pushed)")
    // Callbacks unclaimed (no owner, no lease), calls with their timer unclaimed, events
    // pending and unleased.
    private var callbacks = RowsInsert(
        """
        callbacks (id, app_id, user_id, state, sealed_dialog, due_at, expires_at, pushes, version, last_action,
            idempotency_key, created_at, updated_at)
        """
    )
    private var history = RowsInsert(
        "callback_history (callback_id, position, at, event, state, action, sequence, next_push_at)"
    )
    private var calls = RowsInsert(
        """
        calls (id, app_id, user_id, media, sealed_caller, state, device_id, reason, created_at, expires_at,
            ringing_at, ended_at, updated_at)
        """
    )
    private var callDevices = RowsInsert("call_devices (call_id, device_id, report, reported_at)")
    // `sequence` is given in the order handed over (a multi-row INSERT takes its values in
    // order): the export's order is the source's, so one key's events keep theirs.
    private var webhookEvents = RowsInsert(
        """
        webhook_events (id, app_id, type, ordering_key, data, created_at, state, attempts, next_attempt_at,
            last_error, updated_at, trace_context)
        """
    )
    private var apiKeys = RowsInsert(
        "api_keys (id, name, app_id, scopes, secret_digest, rate_per_second, burst, created_at, revoked_at)"
    )
    private var audit = RowsInsert("audit_log (id, at, actor, action, target, app_id)")
    private var held = RowsInsert("held_messages (message_id, user_id, app_id, held_at, held_until)")
    private var operators = RowsInsert("operators (\(OperatorRecord.columns))")

    /// Adds one record's rows to its table (and its history's table, for a push, a callback or
    /// a call: those may run their rows so far first, to stay under the parameter limit).
    mutating func add(_ record: StoreRecord, on connection: PostgresConnection, logger: Logger) async throws {
        switch record {
        case .app(let app): addApp(app)
        case .device(let device): addDevice(device)
        case .presence(let record): addPresence(record)
        case .message(let message): addMessage(message)
        case .idempotencyKey(let key): addIdempotencyKey(key)
        case .push(let pending): try await addPush(pending, on: connection, logger: logger)
        case .chat(let chat): addChat(chat)
        case .transcriptEvent(let event): addTranscriptEvent(event)
        case .disconnect(let disconnect): addDisconnect(disconnect)
        case .callback(let transfer): try await addCallback(transfer, on: connection, logger: logger)
        case .call(let call): try await addCall(call, on: connection, logger: logger)
        case .webhookEvent(let stored): addWebhookEvent(stored)
        case .apiKey(let key): addAPIKey(key)
        case .auditEntry(let entry): addAuditEntry(entry)
        case .heldMessage(let message): addHeldMessage(message)
        case .operatorAccount(let account): addOperator(account)
        }
    }

    /// Runs the INSERT of every table that has rows, tables in the order records refer to each other.
    func run(on connection: PostgresConnection, logger: Logger) async throws {
        let inserts = [
            apps, devices, presence, messages, ingests, outbox, payloads, log, chats, events, disconnects, callbacks,
            history, calls, callDevices, webhookEvents, apiKeys, audit, held, operators,
        ]
        for insert in inserts where !insert.isEmpty {
            try await connection.run(insert.query, logger: logger)
        }
    }

    private mutating func addApp(_ app: AppRecord) {
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
            $0.text(DeadlineRule.stored(app.deadlines))
        }
    }

    private mutating func addDevice(_ device: DeviceRecord) {
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
            $0.bytes(device.webPushKeys?.bytes)
        }
    }

    private mutating func addPresence(_ record: PresenceRecord) {
        presence.row {
            $0.text(record.deviceID)
            $0.text(record.userID)
            $0.text(record.conversation)
            $0.text(record.state.rawValue)
            $0.integer(record.updatedAt)
            $0.integer(record.expiresAt)
        }
    }

    private mutating func addMessage(_ message: MessageRecord) {
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
    }

    private mutating func addIdempotencyKey(_ key: IdempotencyRecord) {
        ingests.row {
            $0.text(key.key)
            $0.bytes(key.receipt)
            $0.integer(key.createdAt)
        }
    }

    private mutating func addPush(
        _ pending: PendingPush,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
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
            $0.text(push.traceParent)
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
    }

    private mutating func addChat(_ chat: ChatRecord) {
        chats.row {
            $0.text(chat.conversation)
            $0.text(chat.userID)
            $0.integer(chat.startedAt)
            $0.integer(chat.lastEventAt)
            $0.integer(chat.endedAt)
        }
    }

    private mutating func addTranscriptEvent(_ event: TranscriptEvent) {
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
    }

    private mutating func addDisconnect(_ disconnect: ChatDisconnect) {
        disconnects.row {
            $0.text(disconnect.deviceID)
            $0.text(disconnect.conversation)
            $0.integer(Int64(disconnect.position))
            $0.integer(disconnect.at)
            $0.boolean(disconnect.pushed)
        }
    }

    private mutating func addCallback(
        _ transfer: CallbackTransfer,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
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
    }

    private mutating func addCall(_ call: CallRecord, on connection: PostgresConnection, logger: Logger) async throws {
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
    }

    private mutating func addWebhookEvent(_ stored: StoredWebhookEvent) {
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
            $0.text(event.traceParent)
        }
    }

    private mutating func addAPIKey(_ key: APIKeyRecord) {
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
    }

    private mutating func addAuditEntry(_ entry: AuditEntry) {
        audit.row {
            $0.text(entry.id)
            $0.integer(entry.at)
            $0.text(entry.actor)
            $0.text(entry.action)
            $0.text(entry.target)
            $0.text(entry.appID)
        }
    }

    private mutating func addHeldMessage(_ message: HeldMessage) {
        held.row {
            $0.text(message.messageID)
            $0.text(message.userID)
            $0.text(message.appID)
            $0.integer(message.heldAt)
            $0.integer(message.heldUntil)
        }
    }

    private mutating func addOperator(_ account: OperatorRecord) {
        operators.row {
            $0.text(account.name)
            $0.text(account.role.rawValue)
            $0.text(account.passwordHash)
            $0.integer(account.createdAt)
        }
    }
}
