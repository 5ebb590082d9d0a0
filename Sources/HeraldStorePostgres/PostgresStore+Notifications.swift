public import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func setNotificationPermission(
        deviceID: String,
        _ permission: NotificationPermission,
        now: Int64,
        events: [WebhookEvent]
    ) async throws -> NotificationPermissionChange? {
        try await transaction("set a device's notification permission") { [logger] connection in
            // Only a different permission is written (the row lock orders two reports): the one
            // that changes it writes its events.
            let changed =
                try await connection.run(
                    """
                    UPDATE devices SET notification_permission = \(permission.rawValue), notification_permission_at = \(now)
                    WHERE id = \(deviceID) AND notification_permission <> \(permission.rawValue) RETURNING 1
                    """,
                    logger: logger
                ).count > 0
            if changed { try await Self.insert(events, on: connection, logger: logger) }
            let rows = try await connection.run(
                "SELECT \(unescaped: Self.deviceColumns) FROM devices d WHERE d.id = \(deviceID)",
                logger: logger
            )
            return try rows.first.map { row in
                var columns = Columns(row)
                return NotificationPermissionChange(device: try Self.device(&columns), changed: changed)
            }
        }
    }
}
