import Foundation
import GRDB
import HeraldStore

/// A GRDB row read column by column for the records' shared decoding (`StoreColumns`).
struct SQLiteColumns: StoreColumns {
    private let row: Row
    private var index = 0

    init(_ row: Row) {
        self.row = row
    }

    /// The next column, as GRDB converts it.
    private mutating func next<Value: DatabaseValueConvertible & StatementColumnConvertible>() -> Value {
        defer { index += 1 }
        return row[index]
    }

    mutating func text() -> String { next() }
    mutating func optionalText() -> String? { next() }
    mutating func integer() -> Int64 { next() }
    mutating func optionalInteger() -> Int64? { next() }
    mutating func boolean() -> Bool { next() }
    mutating func bytes() -> [UInt8] { [UInt8](next() as Data) }
    mutating func optionalBytes() -> [UInt8]? { (next() as Data?).map { [UInt8]($0) } }
}

extension Row {
    /// The record this row's columns hold, read by position.
    func record<Record: ColumnsDecodable>(_: Record.Type = Record.self) throws -> Record {
        var columns = SQLiteColumns(self)
        return try Record(columns: &columns)
    }
}

extension SQLiteStore {
    /// The record the first row of `sql` holds, read on a reader; `nil` without a row.
    func readRecord<Record: ColumnsDecodable & Sendable>(
        _ sql: String,
        _ arguments: StatementArguments
    ) async throws -> Record? {
        try await read { db in try Row.fetchOne(db, sql: sql, arguments: arguments).map { try $0.record() } }
    }

    /// The records a claim statement (an `UPDATE … RETURNING`) returned, run on the one writer, in
    /// `order`.
    func claimRecords<Record: ColumnsDecodable & Sendable>(
        _ sql: String,
        _ arguments: StatementArguments,
        by order: @escaping @Sendable (Record, Record) -> Bool
    ) async throws -> [Record] {
        try await write { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { try $0.record(Record.self) }.sorted(by: order)
        }
    }
}

extension StoreValue {
    /// The value as GRDB binds it.
    var databaseValue: any DatabaseValueConvertible {
        switch self {
        case .text(let text): text
        case .integer(let integer): integer
        }
    }
}
