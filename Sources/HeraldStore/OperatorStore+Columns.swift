extension OperatorRecord: ColumnsDecodable {
    /// The columns of `operators` that `init(columns:)` reads, in its order.
    package static let columns = "name, role, password_hash, created_at"

    package init(columns: inout some StoreColumns) throws {
        let name = try columns.text()
        self.init(
            name: name,
            role: try columns.named(OperatorRole.self) { "operator \(name) has an unknown role: \($0)" },
            passwordHash: try columns.text(),
            createdAt: try columns.integer()
        )
    }
}

extension ConsoleSessionRecord: ColumnsDecodable {
    /// The columns of `console_sessions` that `init(columns:)` reads, in its order.
    package static let columns = "id, operator_name, role, created_at, expires_at"

    package init(columns: inout some StoreColumns) throws {
        self.init(
            id: try columns.text(),
            operatorName: try columns.text(),
            role: try columns.named(OperatorRole.self) { "a console session has an unknown role: \($0)" },
            createdAt: try columns.integer(),
            expiresAt: try columns.integer()
        )
    }
}
