import HeraldStore
import PostgresNIO

extension PostgresStore {
    static func setNotificationPermission(
        _ report: PermissionReport,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> ChangeOutcome {
        // Only a different permission is written (the row lock orders two reports): the one that
        // changes it writes its events.
        let changed =
            try await connection.run(
                """
                UPDATE devices SET notification_permission = \(report.permission.rawValue),
                    notification_permission_at = \(report.at)
                WHERE id = \(report.deviceID) AND notification_permission <> \(report.permission.rawValue) RETURNING 1
                """,
                logger: logger
            ).count > 0
        if changed {
            try await Self.insert(report.events, on: connection, logger: logger)
            return .applied
        }
        let known = try await connection.run("SELECT 1 FROM devices WHERE id = \(report.deviceID)", logger: logger)
        return known.isEmpty ? .stale : .duplicate
    }
}
