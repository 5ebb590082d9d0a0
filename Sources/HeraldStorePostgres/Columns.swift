import HeraldStore
import NIOCore
import PostgresNIO

/// Reads a row's columns in order, so a record's reader and its SELECT list cannot drift apart
/// by name, and a column is found by position rather than by a name search.
struct Columns {
    private let row: PostgresRandomAccessRow
    private var index = 0

    init(_ row: PostgresRow) {
        self.row = PostgresRandomAccessRow(row)
    }

    mutating func next<T: PostgresDecodable>(_ type: T.Type = T.self) throws -> T {
        defer { index += 1 }
        return try row[index].decode(T.self)
    }

    mutating func bytes() throws -> [UInt8] {
        try next(ByteBuffer.self).bytes
    }

    mutating func optionalBytes() throws -> [UInt8]? {
        try next(ByteBuffer?.self)?.bytes
    }
}

extension Columns: StoreColumns {
    mutating func text() throws -> String { try next() }
    mutating func optionalText() throws -> String? { try next() }
    mutating func integer() throws -> Int64 { try next() }
    mutating func optionalInteger() throws -> Int64? { try next() }
    mutating func boolean() throws -> Bool { try next() }
}

extension PostgresRow {
    /// The record this row's columns hold, read by position.
    func record<Record: ColumnsDecodable>(_: Record.Type = Record.self) throws -> Record {
        var columns = Columns(self)
        return try Record(columns: &columns)
    }
}

extension PostgresBindings {
    /// Binds `value` as the next parameter.
    mutating func append(_ value: StoreValue) {
        switch value {
        case .text(let text): append(text)
        case .integer(let integer): append(integer)
        }
    }
}

/// A prepared statement whose rows are read as they come (by `Columns`, or `decode`).
protocol RowsStatement: PostgresPreparedStatement where Row == PostgresRow {}

extension RowsStatement {
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
