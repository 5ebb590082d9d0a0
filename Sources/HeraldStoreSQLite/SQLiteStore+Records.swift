import Foundation
import GRDB
import HeraldPush
public import HeraldStore

extension SQLiteStore {
    // MARK: Apps

    static func saveApp(_ app: AppRecord, _ db: Database) throws {
        try insertApp(app, db, replacing: true)
    }

    /// Writes an app's row as it is: replacing one with its id (a save), or not (an import, which
    /// fails on a row that is there already).
    static func insertApp(_ app: AppRecord, _ db: Database, replacing: Bool) throws {
        try db.execute(
            sql: """
                \(replacing ? "INSERT OR REPLACE" : "INSERT") INTO apps
                    (id, team_id, content_policy, alert_title, alert_body, message_ttl, call_ttl,
                     collapse_by_conversation, webhook_url, webhook_secret, apns_key, fcm_account,
                     apns_environment, presence_policy, message_priority, queue_order, undeliverable, hold_for,
                     deadlines)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                app.id, app.teamID, app.contentPolicy.rawValue, app.alertTitle, app.alertBody, app.messageTTL,
                app.callTTL, app.collapseByConversation, app.webhook?.url,
                app.webhook.map { Data($0.sealedSecret) },
                app.apnsKey, app.fcmAccount, app.apnsEnvironment?.rawValue, app.presencePolicy.rawValue,
                app.messagePriority, app.queueOrder.rawValue, app.undeliverable?.rawValue, app.holdFor,
                DeadlineRule.stored(app.deadlines),
            ]
        )
    }

    /// Whether any app has a webhook.
    static func anyAppWebhook(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM apps WHERE webhook_url IS NOT NULL)") ?? false
    }

    public func app(id: String) async throws -> AppRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(AppRecord.columns) FROM apps WHERE id = ?", arguments: [id])?
                .record(AppRecord.self)
        }
    }

    public func apps() async throws -> [AppRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT \(AppRecord.columns) FROM apps ORDER BY id").map {
                try $0.record(AppRecord.self)
            }
        }
    }

    // MARK: Devices

    static func saveDevice(_ device: DeviceRecord, _ db: Database) throws {
        try Self.takeTokens(db, messaging: device.messagingToken, voip: device.voipToken, from: device.id)
        try insertDevice(device, db, replacing: true)
    }

    /// Writes a device's row as it is: replacing one with its id (a save), or not (an import,
    /// which fails on a row that is there already).
    static func insertDevice(_ device: DeviceRecord, _ db: Database, replacing: Bool) throws {
        try db.execute(
            sql: """
                \(replacing ? "INSERT OR REPLACE" : "INSERT") INTO devices
                    (id, user_id, app_id, platform, messaging_token, voip_token, key_id, previous_key_id,
                     device_public_key, relay_public_key, sealed_relay_secret_key, sealed_session_keys,
                     credential_hash, token_dead_reason, created_at, updated_at, apns_environment,
                     notification_permission, notification_permission_at, web_push_keys)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                device.id, device.userID, device.appID, device.platform.rawValue, device.messagingToken,
                device.voipToken, device.keyID, device.previousKeyID, Data(device.devicePublicKey),
                Data(device.relayPublicKey), Data(device.sealedRelaySecretKey), Data(device.sealedSessionKeys),
                Data(device.credentialHash), device.tokenDeadReason, device.createdAt, device.updatedAt,
                device.apnsEnvironment?.rawValue, device.notificationPermission.rawValue,
                device.notificationPermissionAt, device.webPushKeys.map { Data($0.bytes) },
            ]
        )
    }

    /// A token belongs to one device: whoever had it loses it.
    private static func takeTokens(_ db: Database, messaging: String?, voip: String?, from deviceID: String) throws {
        if let messaging, !messaging.isEmpty {
            try db.execute(
                sql: "UPDATE devices SET messaging_token = NULL WHERE messaging_token = ? AND id != ?",
                arguments: [messaging, deviceID]
            )
        }
        if let voip, !voip.isEmpty {
            try db.execute(
                sql: "UPDATE devices SET voip_token = NULL WHERE voip_token = ? AND id != ?",
                arguments: [voip, deviceID]
            )
        }
    }

    public func device(id: String) async throws -> DeviceRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(DeviceRecord.columns) FROM devices d WHERE d.id = ?", arguments: [id])?
                .record(DeviceRecord.self)
        }
    }

    public func recipients(userID: String) async throws -> [Recipient] {
        try readNow { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Recipient.columns)
                    FROM devices d LEFT JOIN presence p ON p.device_id = d.id
                        LEFT JOIN live_sessions l ON l.device_id = d.id
                    WHERE d.user_id = ? ORDER BY d.created_at, d.id
                    """
            )
            let rows = try Row.fetchCursor(statement, arguments: [userID])
            var recipients: [Recipient] = []
            while let row = try rows.next() {
                recipients.append(try row.record(Recipient.self))
            }
            return recipients
        }
    }

    static func updateTokens(_ update: TokenUpdate, _ db: Database) throws -> ChangeOutcome {
        let deviceID = update.deviceID
        guard try Row.fetchOne(db, sql: "SELECT id FROM devices WHERE id = ?", arguments: [deviceID]) != nil else {
            return .stale
        }
        try Self.takeTokens(db, messaging: update.messaging, voip: update.voip, from: deviceID)
        guard update.messaging != nil || update.voip != nil else { return .applied }
        // A token not given stays; an empty one is removed (NULLIF); either clears the dead reason.
        try db.execute(
            sql: """
                UPDATE devices SET
                    messaging_token = CASE WHEN ?1 IS NULL THEN messaging_token ELSE NULLIF(?1, '') END,
                    voip_token = CASE WHEN ?2 IS NULL THEN voip_token ELSE NULLIF(?2, '') END,
                    web_push_keys = CASE WHEN ?1 IS NULL THEN web_push_keys ELSE ?5 END,
                    token_dead_reason = NULL, updated_at = ?3
                WHERE id = ?4
                """,
            arguments: [
                update.messaging, update.voip, update.at, deviceID,
                update.messaging?.isEmpty == false ? update.webPushKeys.map { Data($0.bytes) } : nil,
            ]
        )
        return .applied
    }

    static func deleteDevice(id: String, _ db: Database) throws -> ChangeOutcome {
        try db.execute(sql: "DELETE FROM presence WHERE device_id = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM unreported_calls WHERE device_id = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM devices WHERE id = ?", arguments: [id])
        return db.changesCount > 0 ? .applied : .stale
    }

    public func deviceCount() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM devices") ?? 0 }
    }

    static func setNotificationPermission(_ report: PermissionReport, _ db: Database) throws -> ChangeOutcome {
        // Only a different permission is written: the report that changes it writes its events.
        try db.execute(
            sql: """
                UPDATE devices SET notification_permission = ?, notification_permission_at = ?
                WHERE id = ? AND notification_permission != ?
                """,
            arguments: [report.permission.rawValue, report.at, report.deviceID, report.permission.rawValue]
        )
        if db.changesCount > 0 {
            try Self.insert(report.events, db)
            return .applied
        }
        let known = try Row.fetchOne(db, sql: "SELECT id FROM devices WHERE id = ?", arguments: [report.deviceID])
        return known == nil ? .stale : .duplicate
    }

    // MARK: Presence

    static func savePresence(_ presence: PresenceRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO presence (device_id, user_id, conversation, state, updated_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                presence.deviceID, presence.userID, presence.conversation, presence.state.rawValue,
                presence.updatedAt, presence.expiresAt,
            ]
        )
    }

    // MARK: Messages

    public func message(id: String) async throws -> MessageRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(MessageRecord.columns) FROM messages WHERE id = ?", arguments: [id])?
                .record(MessageRecord.self)
        }
    }

    package func deleteExpired(at now: Int64, historyBefore: Int64) async throws -> (messages: Int, pushes: Int) {
        try await write { db in
            try db.execute(
                sql: """
                    DELETE FROM message_clear_senders
                    WHERE message_id IN (SELECT id FROM messages WHERE expires_at <= ?)
                    """,
                arguments: [now]
            )
            try db.execute(sql: "DELETE FROM messages WHERE expires_at <= ?", arguments: [now])
            let messages = db.changesCount
            try db.execute(sql: "DELETE FROM ingests WHERE created_at < ?", arguments: [historyBefore])
            try db.execute(sql: "DELETE FROM live_sessions WHERE expires_at <= ?", arguments: [now])
            // Calls that ended before the history kept, with their devices and stops.
            for table in ["call_devices", "call_stops"] {
                try db.execute(
                    sql: "DELETE FROM \(table) WHERE call_id IN (SELECT id FROM calls WHERE ended_at < ?)",
                    arguments: [historyBefore]
                )
            }
            try db.execute(sql: "DELETE FROM calls WHERE ended_at < ?", arguments: [historyBefore])
            // At most a batch per call, so the writer is never held for long.
            let finished = try String.fetchAll(
                db,
                sql: """
                    SELECT push_id FROM outbox
                    WHERE state NOT IN ('queued', 'sending') AND updated_at < ? LIMIT 10000
                    """,
                arguments: [historyBefore]
            )
            for id in finished {
                try db.cachedStatement(sql: "DELETE FROM delivery_log WHERE push_id = ?").execute(arguments: [id])
                try db.cachedStatement(sql: "DELETE FROM push_receipts WHERE push_id = ?").execute(arguments: [id])
                try db.cachedStatement(sql: "DELETE FROM push_deadlines WHERE push_id = ?").execute(arguments: [id])
                try db.cachedStatement(sql: "DELETE FROM outbox_payloads WHERE push_id = ?").execute(arguments: [id])
                try db.cachedStatement(sql: "DELETE FROM outbox WHERE push_id = ?").execute(arguments: [id])
            }
            return (messages, finished.count)
        }
    }
}
