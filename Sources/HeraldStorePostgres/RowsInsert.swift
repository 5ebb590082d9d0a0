import Logging
import NIOCore
import PostgresNIO

/// One INSERT of many rows, every value a typed parameter (a NULL as a parameter of unknown type
/// would otherwise be taken for text).
struct RowsInsert {
    private let target: String
    private var binds = PostgresBindings()
    private var rows: [String] = []
    private var current: [String] = []

    init(_ target: String) {
        self.target = target
    }

    var isEmpty: Bool { rows.isEmpty }

    var query: PostgresQuery {
        PostgresQuery(unsafeSQL: "INSERT INTO \(target) VALUES " + rows.joined(separator: ", "), binds: binds)
    }

    /// Runs the rows so far and starts again when `rows` more would pass PostgreSQL's limit of
    /// 65,535 parameters a statement: a batch has a bounded number of records, but a push's
    /// requeues, a callback's history and a call's devices are not bounded. Only for tables no
    /// other table of the batch refers to.
    mutating func makeRoom(for rows: Int, on connection: PostgresConnection, logger: Logger) async throws {
        guard let width = self.rows.isEmpty ? nil : binds.count / self.rows.count,
            binds.count + rows * width > 65_000
        else { return }
        try await connection.run(query, logger: logger)
        binds = PostgresBindings()
        self.rows = []
    }

    mutating func row(_ values: (inout Self) -> Void) {
        values(&self)
        rows.append("(" + current.joined(separator: ", ") + ")")
        current = []
    }

    mutating func text(_ value: String?) {
        binds.append(value)
        current.append("$\(binds.count)::text")
    }

    mutating func integer(_ value: Int64?) {
        binds.append(value)
        current.append("$\(binds.count)::bigint")
    }

    mutating func double(_ value: Double?) {
        binds.append(value)
        current.append("$\(binds.count)::double precision")
    }

    mutating func boolean(_ value: Bool) {
        binds.append(value)
        current.append("$\(binds.count)::boolean")
    }

    mutating func bytes(_ value: [UInt8]) {
        binds.append(ByteBuffer(value))
        current.append("$\(binds.count)::bytea")
    }

    mutating func bytes(_ value: [UInt8]?) {
        binds.append(value.map { ByteBuffer(bytes: $0) })
        current.append("$\(binds.count)::bytea")
    }
}
