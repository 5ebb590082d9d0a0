import Foundation
public import HeraldDomain
import HeraldMacros

/// A push's deadline, written with the push (`Ingest.deadlines`) and settled once: by the phone's
/// receipt (`StoreChange.cancelDeadlines`), or by the node that claimed it when it passed
/// (`StoreChange.settleDeadline`, which writes what its action wrote in the same transaction).
@MemberwiseInit
public struct PushDeadline: Sendable, Hashable {
    public var pushID: String
    public var deviceID: String
    public var action: DeadlineAction
    /// Milliseconds since the epoch.
    public var dueAt: Int64
}

extension PushDeadline: ColumnsDecodable {
    /// The columns of `push_deadlines` that `init(columns:)` reads, in its order.
    package static let columns = "push_id, device_id, action, due_at"

    package init(columns: inout some StoreColumns) throws {
        let pushID = try columns.text()
        self.init(
            pushID: pushID,
            deviceID: try columns.text(),
            action: try columns.named(DeadlineAction.self) { _ in "push \(pushID) has an unknown deadline action" },
            dueAt: try columns.integer()
        )
    }
}

extension DeadlineRule {
    /// Rules as one stored column (JSON): `nil` for none.
    package static func stored(_ rules: [DeadlineRule]) -> String? {
        guard !rules.isEmpty, let data = try? JSONEncoder().encode(rules) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Rules from their stored column; throws on a column the relay did not write.
    package static func rules(stored: String?) throws -> [DeadlineRule] {
        guard let stored else { return [] }
        do {
            return try JSONDecoder().decode([DeadlineRule].self, from: Data(stored.utf8))
        } catch {
            throw StoreError.corrupt.with(detail: "an app's deadlines are not rules: \(error)")
        }
    }
}

extension UnreportedCalls: ColumnsDecodable {
    package init(columns: inout some StoreColumns) throws {
        self.init(count: try columns.int(), lastAt: try columns.integer())
    }
}
