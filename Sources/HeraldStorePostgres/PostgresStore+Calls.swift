import Foundation
public import HeraldStore
import Logging
import PostgresNIO

/// Calls across nodes: each end is one `UPDATE … WHERE state = 'ringing'` (the row lock decides
/// between two devices answering at once), the missed-call timers are claimed with `FOR UPDATE
/// SKIP LOCKED` under a lease, and a stop for a device whose live channel another node holds
/// wakes that node on its live-handover channel after the commit.
extension PostgresStore {
    static let callColumns = """
        id, app_id, user_id, media, sealed_caller, state, device_id, reason, created_at, expires_at, ringing_at,
        ended_at, updated_at
        """

    /// `StoreChange.acceptCall`, inside the caller's transaction.
    static func acceptCall(
        _ ingest: Ingest,
        call: CallRecord,
        on connection: PostgresConnection,
        logger: Logger,
        after: inout AfterCommit
    ) async throws -> ChangeOutcome {
        let outcome = try await accept(ingest, on: connection, logger: logger, after: &after)
        guard outcome == .applied else { return outcome }
        try await connection.run(
            """
            INSERT INTO calls (\(unescaped: Self.callColumns))
            VALUES (\(call.id), \(call.appID), \(call.userID), \(call.media), \(ByteBuffer(call.sealedCaller)),
                \(call.state.rawValue), \(call.deviceID), \(call.reason), \(call.createdAt), \(call.expiresAt),
                \(call.ringingAt), \(call.endedAt), \(call.updatedAt))
            """,
            logger: logger
        )
        for device in call.devices {
            try await connection.run(
                """
                INSERT INTO call_devices (call_id, device_id, report, reported_at)
                VALUES (\(call.id), \(device.deviceID), \(device.report.rawValue), \(device.reportedAt))
                """,
                logger: logger
            )
        }
        return .applied
    }

    public func call(id: String) async throws -> CallRecord? {
        try await transaction("read a call") { [logger] connection in
            try await Self.call(id: id, on: connection, logger: logger)
        }
    }

    /// As on SQLite: the ringing calls are few, all in the partial `calls_due` index.
    public func ringingCalls(limit: Int) async throws -> [CallRecord] {
        try await transaction("read the ringing calls") { [logger] connection in
            var calls: [CallRecord] = []
            for row in try await connection.run(
                """
                SELECT id FROM calls WHERE state = 'ringing'
                ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT \(Int64(max(0, limit)))
                """,
                logger: logger
            ) {
                if let call = try await Self.call(id: try row.decode(String.self), on: connection, logger: logger) {
                    calls.append(call)
                }
            }
            return calls
        }
    }

    /// `StoreChange.reportCallRinging`, inside the caller's transaction.
    static func reportRinging(
        _ ringing: CallRinging,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        // The row lock orders this report against an end of the call.
        let found = try await connection.run(
            "SELECT ringing_at IS NULL FROM calls WHERE id = \(ringing.callID) AND state = 'ringing' FOR UPDATE",
            logger: logger
        )
        guard let row = found.first else { return .stale }
        let first = try row.decode(Bool.self)
        try await connection.run(
            """
            INSERT INTO call_devices (call_id, device_id, report, reported_at)
            VALUES (\(ringing.callID), \(ringing.deviceID), 'ringing', \(ringing.at))
            ON CONFLICT (call_id, device_id) DO UPDATE SET report = 'ringing', reported_at = excluded.reported_at
            """,
            logger: logger
        )
        if first {
            try await connection.run(
                "UPDATE calls SET ringing_at = \(ringing.at), updated_at = \(ringing.at) WHERE id = \(ringing.callID)",
                logger: logger
            )
            try await insert(ringing.firstRinging, on: connection, logger: logger)
        }
        return .applied
    }

    /// `StoreChange.endCall`, inside the caller's transaction.
    static func endCall(
        _ end: CallEnd,
        on connection: PostgresConnection,
        logger: Logger,
        after: inout AfterCommit
    ) async throws -> ChangeOutcome {
        let changed = try await connection.run(
            """
            UPDATE calls SET state = \(end.state.rawValue), device_id = \(end.deviceID), reason = \(end.reason),
                ended_at = \(end.at), updated_at = \(end.at), timer_owner = NULL, timer_lease = NULL
            WHERE id = \(end.callID) AND state = 'ringing'
            RETURNING id
            """,
            logger: logger
        )
        guard !changed.isEmpty else { return .stale }
        if let device = end.deviceID, let report = CallDeviceReport(rawValue: end.state.rawValue) {
            try await connection.run(
                """
                INSERT INTO call_devices (call_id, device_id, report, reported_at)
                VALUES (\(end.callID), \(device), \(report.rawValue), \(end.at))
                ON CONFLICT (call_id, device_id) DO UPDATE SET report = excluded.report,
                    reported_at = excluded.reported_at
                """,
                logger: logger
            )
        }
        try await insert(end.events, on: connection, logger: logger)
        if !end.pushes.isEmpty {
            let pushes = Ingest(idempotencyKey: nil, message: nil, pushes: end.pushes, receipt: [])
            _ = try await accept(pushes, on: connection, logger: logger, after: &after)
        }
        for stop in end.stops {
            try await connection.run(
                """
                INSERT INTO call_stops (call_id, device_id, node_id, reason)
                VALUES (\(stop.callID), \(stop.deviceID), \(stop.nodeID), \(stop.reason.rawValue))
                ON CONFLICT (call_id, device_id) DO NOTHING
                """,
                logger: logger
            )
        }
        after.stopNodes.formUnion(end.stops.map(\.nodeID))
        return .applied
    }

    package func claimDueCalls(_ lease: StoreWork.Lease) async throws -> [CallRecord] {
        let (limit, owner, now, leaseUntil) = (lease.limit, lease.owner, lease.now, lease.until)
        return try await transaction("claim due calls") { [logger] connection -> [CallRecord] in
            let ids = try await connection.run(
                """
                UPDATE calls SET timer_owner = \(owner), timer_lease = \(leaseUntil)
                WHERE id IN (
                    SELECT id FROM calls
                    WHERE state = 'ringing' AND expires_at <= \(now) AND (timer_lease IS NULL OR timer_lease < \(now))
                    ORDER BY expires_at, id LIMIT \(Int64(limit))
                    FOR UPDATE SKIP LOCKED)
                RETURNING id
                """,
                logger: logger
            ).map { try $0.decode(String.self) }
            var claimed: [CallRecord] = []
            for id in ids.sorted() {
                if let call = try await Self.call(id: id, on: connection, logger: logger) { claimed.append(call) }
            }
            return claimed.sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
        }
    }

    public func nextCallDue() async throws -> Int64? {
        let rows = try await rows("read the next call due", "SELECT MIN(expires_at) FROM calls WHERE state = 'ringing'")
        do {
            return try rows.first?.decode(Int64?.self)
        } catch {
            throw StoreError.corrupt.with(detail: "read the next call due: \(error)")
        }
    }

    package func takeCallStops(for nodeID: String) async throws -> [CallStop] {
        let rows = try await rows(
            "take call stops",
            "DELETE FROM call_stops WHERE node_id = \(nodeID) RETURNING call_id, device_id, node_id, reason"
        )
        do {
            return try rows.compactMap { row -> CallStop? in
                let (call, device, node, reason) = try row.decode((String, String, String, String).self)
                return CallStopReason(rawValue: reason).map {
                    CallStop(callID: call, deviceID: device, nodeID: node, reason: $0)
                }
            }.sorted { ($0.callID, $0.deviceID) < ($1.callID, $1.deviceID) }
        } catch {
            throw StoreError.corrupt.with(detail: "take call stops: \(error)")
        }
    }

    /// Wakes the nodes handed stops (after the commit), on their live-handover channels: a node
    /// takes its stops whenever it looks at its handovers (also periodically, if this is lost).
    func announceStops(to nodes: Set<String>) async {
        await notify(nodes, "a call stop") { node in
            PostgresWakeups.liveChannel(schema: configuration.schema, node: node)
        }
    }

    static func call(id: String, on connection: PostgresConnection, logger: Logger) async throws -> CallRecord? {
        guard
            let row = try await connection.run(
                "SELECT \(unescaped: callColumns) FROM calls WHERE id = \(id)",
                logger: logger
            ).first
        else { return nil }
        var columns = Columns(row)
        let callID: String = try columns.next()
        let appID: String = try columns.next()
        let userID: String = try columns.next()
        let media: String = try columns.next()
        let caller = try columns.bytes()
        let stateName: String = try columns.next()
        guard let state = CallState(rawValue: stateName) else {
            throw StoreError.corrupt.with(detail: "call \(id) has an unknown state")
        }
        var devices: [CallDeviceRecord] = []
        for device in try await connection.run(
            "SELECT device_id, report, reported_at FROM call_devices WHERE call_id = \(id) ORDER BY device_id COLLATE \"C\"",
            logger: logger
        ) {
            let (deviceID, reportName, at) = try device.decode((String, String, Int64?).self)
            guard let report = CallDeviceReport(rawValue: reportName) else {
                throw StoreError.corrupt.with(detail: "call \(id) has a device with an unknown report")
            }
            devices.append(CallDeviceRecord(deviceID: deviceID, report: report, reportedAt: at))
        }
        return CallRecord(
            id: callID,
            appID: appID,
            userID: userID,
            media: media,
            sealedCaller: caller,
            state: state,
            deviceID: try columns.next(),
            reason: try columns.next(),
            createdAt: try columns.next(),
            expiresAt: try columns.next(),
            ringingAt: try columns.next(),
            endedAt: try columns.next(),
            updatedAt: try columns.next(),
            devices: devices
        )
    }
}
