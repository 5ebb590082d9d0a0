import HeraldDomain
import HeraldPush

extension PushSummary: ColumnsDecodable {
    /// The columns a listing reads, from the outbox as `o` joined to its device as `d`, and the
    /// code of the furthest stage the push's receipts reached (`ReceiptStage.code`; NULL: none),
    /// read from `push_receipts` by its key.
    package static let columns = """
        o.push_id, o.device_id, d.user_id, d.app_id, o.network, o.kind, o.subject_id, o.state, o.attempts,
            o.last_reason, o.apns_id, o.created_at, o.updated_at, o.expires_at,
            (SELECT MAX(\(furthestStage)) FROM push_receipts r WHERE r.push_id = o.push_id)
        """

    /// A receipt's stage as its `ReceiptStage.code`, in SQL both engines speak.
    static let furthestStage =
        "CASE r.stage "
        + ReceiptStage.allCases.map { "WHEN '\($0.rawValue)' THEN \($0.code) " }.joined()
        + "END"

    package init(columns: inout some StoreColumns) throws {
        let pushID = try columns.text()
        let unknown = { (_: String) in "push \(pushID) has an unknown network, kind or state" }
        self.init(
            pushID: pushID,
            deviceID: try columns.text(),
            userID: try columns.optionalText(),
            appID: try columns.optionalText(),
            network: try columns.named(PushNetwork.self, unknown),
            kind: try columns.named(OutboxKind.self, unknown),
            subjectID: try columns.text(),
            state: try columns.named(PushState.self, unknown),
            attempts: try columns.int(),
            lastReason: try columns.optionalText(),
            apnsID: try columns.optionalText(),
            createdAt: try columns.integer(),
            updatedAt: try columns.integer(),
            expiresAt: try columns.integer(),
            deviceStage: try columns.optionalInteger().flatMap(ReceiptStage.init(code:))
        )
    }
}

/// A value an engine binds to one of a statement's parameters.
package enum StoreValue: Sendable, Hashable {
    case text(String)
    case integer(Int64)
}

extension PushQuery {
    /// The page size asked for, taken within `limits`.
    package var pageSize: Int { min(max(limit, Self.limits.lowerBound), Self.limits.upperBound) }

    /// The listing as one statement for any combination of conditions, the same on every engine:
    /// one row more than `pageSize`, to know whether another page follows, in the order of the
    /// outbox's `outbox_by_device` and `outbox_by_age` indexes, so a page reads its rows from an
    /// index instead of sorting the outbox (a subject's few pushes are found by
    /// `outbox_by_subject`). `placeholder` spells the engine's parameter number
    /// `n` (from 1); the values are bound in that order.
    package func listingStatement(placeholder: (Int) -> String) -> (sql: String, values: [StoreValue]) {
        var conditions: [String] = []
        var values: [StoreValue] = []
        func next(_ value: StoreValue) -> String {
            values.append(value)
            return placeholder(values.count)
        }
        if let userID { conditions.append("d.user_id = \(next(.text(userID)))") }
        if let deviceID { conditions.append("o.device_id = \(next(.text(deviceID)))") }
        if let subjectID { conditions.append("o.subject_id = \(next(.text(subjectID)))") }
        if let conversation {
            let value = next(.text(conversation))
            conditions.append("o.subject_id IN (SELECT m.id FROM messages m WHERE m.conversation = \(value))")
        }
        if let state { conditions.append("o.state = \(next(.text(state.rawValue)))") }
        if let since { conditions.append("o.created_at >= \(next(.integer(since)))") }
        if let after {
            let time = next(.integer(after.createdAt))
            conditions.append("(o.created_at, o.push_id) < (\(time), \(next(.text(after.pushID))))")
        }
        let sql = """
            SELECT \(PushSummary.columns)
            FROM outbox o LEFT JOIN devices d ON d.id = o.device_id
            \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY o.created_at DESC, o.push_id DESC LIMIT \(next(.integer(Int64(pageSize + 1))))
            """
        return (sql, values)
    }
}

extension PushPage {
    /// The page that `rows`, read by `query`'s statement, make: one row more than the page
    /// size says that another page follows.
    package init(rows: [PushSummary], of query: PushQuery) {
        let size = query.pageSize
        if rows.count > size {
            self.init(pushes: Array(rows.prefix(size)), next: rows[size - 1].cursor)
        } else {
            self.init(pushes: rows, next: nil)
        }
    }
}
