import Foundation
import GRDB
public import HeraldStore

/// Calls: one writer, so each transition's compare-and-set and what is written with it share the
/// writer's transaction.
extension SQLiteStore {
    /// `StoreChange.acceptCall`, inside the caller's transaction.
    static func acceptCall(_ ingest: Ingest, call: CallRecord, _ db: Database) throws -> ChangeOutcome {
        let outcome = try insert(ingest, db)
        guard outcome == .accepted else { return outcome.change }
        try insert(call, db)
        return .applied
    }

    public func call(id: String) async throws -> CallRecord? {
        try await read { db in try Self.call(id: id, db) }
    }

    /// The ringing calls are few (they end within their time to live) and all in the partial
    /// `calls_due` index: sorting them costs nothing.
    public func ringingCalls(limit: Int) async throws -> [CallRecord] {
        try await read { db in
            try String.fetchAll(
                db,
                sql: "SELECT id FROM calls WHERE state = 'ringing' ORDER BY created_at DESC, id DESC LIMIT ?",
                arguments: [max(0, limit)]
            ).compactMap { try Self.call(id: $0, db) }
        }
    }

    /// `StoreChange.reportCallRinging`, inside the caller's transaction.
    static func reportRinging(_ ringing: CallRinging, _ db: Database) throws -> ChangeOutcome {
        let (callID, deviceID, at) = (ringing.callID, ringing.deviceID, ringing.at)
        guard
            try Bool.fetchOne(db, sql: "SELECT 1 FROM calls WHERE id = ? AND state = 'ringing'", arguments: [callID])
                != nil
        else { return .stale }
        try db.execute(
            sql: """
                INSERT INTO call_devices (call_id, device_id, report, reported_at) VALUES (?, ?, 'ringing', ?)
                ON CONFLICT (call_id, device_id) DO UPDATE SET report = 'ringing', reported_at = excluded.reported_at
                """,
            arguments: [callID, deviceID, at]
        )
        try db.execute(
            sql: "UPDATE calls SET ringing_at = ?, updated_at = ? WHERE id = ? AND ringing_at IS NULL",
            arguments: [at, at, callID]
        )
        if db.changesCount > 0 { try insert(ringing.firstRinging, db) }
        return .applied
    }

    /// `StoreChange.endCall`, inside the caller's transaction.
    static func endCall(_ end: CallEnd, _ db: Database) throws -> ChangeOutcome {
        try db.execute(
            sql: """
                UPDATE calls SET state = ?, device_id = ?, reason = ?, ended_at = ?, updated_at = ?,
                    timer_owner = NULL, timer_lease = NULL
                WHERE id = ? AND state = 'ringing'
                """,
            arguments: [end.state.rawValue, end.deviceID, end.reason, end.at, end.at, end.callID]
        )
        guard db.changesCount > 0 else { return .stale }
        if let device = end.deviceID, let report = CallDeviceReport(rawValue: end.state.rawValue) {
            try db.execute(
                sql: """
                    INSERT INTO call_devices (call_id, device_id, report, reported_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (call_id, device_id) DO UPDATE SET report = excluded.report,
                        reported_at = excluded.reported_at
                    """,
                arguments: [end.callID, device, report.rawValue, end.at]
            )
        }
        try Self.insert(end.events, db)
        if !end.pushes.isEmpty {
            _ = try Self.insert(Ingest(idempotencyKey: nil, message: nil, pushes: end.pushes, receipt: []), db)
        }
        for stop in end.stops {
            try db.execute(
                sql: """
                    INSERT INTO call_stops (call_id, device_id, node_id, reason) VALUES (?, ?, ?, ?)
                    ON CONFLICT (call_id, device_id) DO NOTHING
                    """,
                arguments: [stop.callID, stop.deviceID, stop.nodeID, stop.reason.rawValue]
            )
        }
        return .applied
    }

    package func claimDueCalls(_ lease: StoreWork.Lease) async throws -> [CallRecord] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        return try await write { db in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT id FROM calls
                    WHERE state = 'ringing' AND expires_at <= ? AND (timer_lease IS NULL OR timer_lease < ?)
                    ORDER BY expires_at, id LIMIT ?
                    """,
                arguments: [now, now, limit]
            )
            var claimed: [CallRecord] = []
            for id in ids {
                try db.execute(
                    sql: "UPDATE calls SET timer_owner = ?, timer_lease = ? WHERE id = ?",
                    arguments: [owner, leaseUntil, id]
                )
                if let call = try Self.call(id: id, db) { claimed.append(call) }
            }
            return claimed
        }
    }

    public func nextCallDue() async throws -> Int64? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT MIN(expires_at) FROM calls WHERE state = 'ringing'")
        }
    }

    package func takeCallStops(for nodeID: String) async throws -> [CallStop] {
        try await write { db in
            let stops = try Row.fetchAll(
                db,
                sql: "SELECT call_id, device_id, node_id, reason FROM call_stops WHERE node_id = ? ORDER BY call_id",
                arguments: [nodeID]
            ).compactMap { row -> CallStop? in
                guard let reason = CallStopReason(rawValue: row[3]) else { return nil }
                return CallStop(callID: row[0], deviceID: row[1], nodeID: row[2], reason: reason)
            }
            try db.execute(sql: "DELETE FROM call_stops WHERE node_id = ?", arguments: [nodeID])
            return stops
        }
    }

    static func call(id: String, _ db: Database) throws -> CallRecord? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT id, app_id, user_id, media, sealed_caller, state, device_id, reason, created_at, expires_at,
                        ringing_at, ended_at, updated_at
                    FROM calls WHERE id = ?
                    """,
                arguments: [id]
            )
        else { return nil }
        let stateName: String = row[5]
        guard let state = CallState(rawValue: stateName) else {
            throw StoreError.corrupt.with(detail: "call \(id) has an unknown state")
        }
        let devices = try Row.fetchAll(
            db,
            sql: "SELECT device_id, report, reported_at FROM call_devices WHERE call_id = ? ORDER BY device_id",
            arguments: [id]
        ).map { device -> CallDeviceRecord in
            let reportName: String = device[1]
            guard let report = CallDeviceReport(rawValue: reportName) else {
                throw StoreError.corrupt.with(detail: "call \(id) has a device with an unknown report")
            }
            return CallDeviceRecord(deviceID: device[0], report: report, reportedAt: device[2])
        }
        let caller: Data = row[4]
        return CallRecord(
            id: row[0],
            appID: row[1],
            userID: row[2],
            media: row[3],
            sealedCaller: [UInt8](caller),
            state: state,
            deviceID: row[6],
            reason: row[7],
            createdAt: row[8],
            expiresAt: row[9],
            ringingAt: row[10],
            endedAt: row[11],
            updatedAt: row[12],
            devices: devices
        )
    }
}

extension SQLiteStore {
    /// Writes a call and its devices' reports inside the caller's transaction, its missed-call
    /// timer unclaimed (an ingest's new call, or a call a move between stores brings).
    static func insert(_ call: CallRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO calls (id, app_id, user_id, media, sealed_caller, state, device_id, reason, created_at,
                    expires_at, ringing_at, ended_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                call.id, call.appID, call.userID, call.media, Data(call.sealedCaller), call.state.rawValue,
                call.deviceID, call.reason, call.createdAt, call.expiresAt, call.ringingAt, call.endedAt,
                call.updatedAt,
            ]
        )
        for device in call.devices {
            try db.execute(
                sql: "INSERT INTO call_devices (call_id, device_id, report, reported_at) VALUES (?, ?, ?, ?)",
                arguments: [call.id, device.deviceID, device.report.rawValue, device.reportedAt]
            )
        }
    }
}
