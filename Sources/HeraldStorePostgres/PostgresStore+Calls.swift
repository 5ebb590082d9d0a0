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

    public func acceptCall(_ ingest: Ingest, call: CallRecord) async throws -> IngestOutcome {
        let written = try await transaction("accept a call") { [logger] connection -> IngestWrite in
            var outcome = IngestWrite.seen
            for try await row in try await connection.execute(AcceptBatchStatement(ingests: [ingest]), logger: logger) {
                outcome = try row.decode((Int64, Bool).self).1 ? .stale : .written
            }
            guard outcome == .written else { return outcome }
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
            return .written
        }
        switch written {
        case .written:
            if ingest.queuesPushes { announceQueued() }
            return .accepted
        case .stale:
            return .stale
        case .seen:
            break
        }
        let key = ingest.idempotencyKey ?? ""
        let seen = try await rows(
            "read an ingest's receipt",
            "SELECT receipt FROM ingests WHERE idempotency_key = \(key)"
        )
        do {
            var columns = try Columns(seen.first.unwrap())
            return .duplicate(receipt: try columns.bytes())
        } catch {
            throw StoreError.corrupt.with(detail: "read an ingest's receipt: \(error)")
        }
    }

    public func call(id: String) async throws -> CallRecord? {
        try await transaction("read a call") { [logger] connection in
            try await Self.call(id: id, on: connection, logger: logger)
        }
    }

    public func reportCallRinging(
        callID: String,
        deviceID: String,
        at: Int64,
        firstRinging: [WebhookEvent]
    ) async throws -> CallRecord? {
        try await transaction("report a call ringing") { [logger] connection -> CallRecord? in
            // The row lock orders this report against an end of the call.
            let ringing = try await connection.run(
                "SELECT ringing_at IS NULL FROM calls WHERE id = \(callID) AND state = 'ringing' FOR UPDATE",
                logger: logger
            )
            if let row = ringing.first {
                let first = try row.decode(Bool.self)
                try await connection.run(
                    """
                    INSERT INTO call_devices (call_id, device_id, report, reported_at)
                    VALUES (\(callID), \(deviceID), 'ringing', \(at))
                    ON CONFLICT (call_id, device_id) DO UPDATE SET report = 'ringing', reported_at = excluded.reported_at
                    """,
                    logger: logger
                )
                if first {
                    try await connection.run(
                        "UPDATE calls SET ringing_at = \(at), updated_at = \(at) WHERE id = \(callID)",
                        logger: logger
                    )
                    try await Self.insert(firstRinging, on: connection, logger: logger)
                }
            }
            return try await Self.call(id: callID, on: connection, logger: logger)
        }
    }

    public func endCall(_ end: CallEnd) async throws -> CallEndOutcome {
        let outcome = try await transaction("end a call") { [logger] connection -> CallEndOutcome in
            let changed = try await connection.run(
                """
                UPDATE calls SET state = \(end.state.rawValue), device_id = \(end.deviceID), reason = \(end.reason),
                    ended_at = \(end.at), updated_at = \(end.at), timer_owner = NULL, timer_lease = NULL
                WHERE id = \(end.callID) AND state = 'ringing'
                RETURNING id
                """,
                logger: logger
            )
            guard !changed.isEmpty else {
                return try await Self.call(id: end.callID, on: connection, logger: logger)
                    .map(CallEndOutcome.alreadyEnded) ?? .unknown
            }
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
            try await Self.insert(end.events, on: connection, logger: logger)
            if !end.pushes.isEmpty {
                let pushes = Ingest(idempotencyKey: nil, message: nil, pushes: end.pushes, receipt: [])
                for try await _ in try await connection.execute(AcceptBatchStatement(ingests: [pushes]), logger: logger)
                {}
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
            guard let call = try await Self.call(id: end.callID, on: connection, logger: logger) else {
                return .unknown
            }
            return .ended(call)
        }
        if case .ended = outcome {
            if !end.pushes.isEmpty { announceQueued() }
            await announceStops(to: Set(end.stops.map(\.nodeID)))
        }
        return outcome
    }

    public func claimDueCalls(now: Int64, owner: String, leaseUntil: Int64, limit: Int) async throws -> [CallRecord] {
        try await transaction("claim due calls") { [logger] connection -> [CallRecord] in
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

    public func takeCallStops(nodeID: String) async throws -> [CallStop] {
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
