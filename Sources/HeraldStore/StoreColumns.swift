/// A row as an engine hands it to the records' shared decoding: its columns read one after the
/// other, each as the kind of value it holds. Which column is which, and which stored text names
/// which case, is written once, here in `HeraldStore`; an engine adapts its driver's row to this
/// and nothing more, so the two engines cannot come to read a record differently.
package protocol StoreColumns {
    mutating func text() throws -> String
    mutating func optionalText() throws -> String?
    /// An integer column of any width.
    mutating func integer() throws -> Int64
    mutating func optionalInteger() throws -> Int64?
    mutating func boolean() throws -> Bool
    mutating func bytes() throws -> [UInt8]
    mutating func optionalBytes() throws -> [UInt8]?
}

/// A value an engine reads from a row's columns through `StoreColumns`.
package protocol ColumnsDecodable {
    /// Reads the value's columns, leaving `columns` at the next one.
    init(columns: inout some StoreColumns) throws
}

extension StoreColumns {
    /// The case a text column names; `error` (`corrupt` unless told), its detail made from the
    /// text, when no case has that name: a row written by a newer version, or damaged.
    package mutating func named<Value: RawRepresentable<String>>(
        _: Value.Type,
        as error: StoreError = .corrupt,
        _ detail: (String) -> String
    ) throws -> Value {
        let name = try text()
        guard let value = Value(rawValue: name) else { throw error.with(detail: detail(name)) }
        return value
    }

    /// As `named`, for a column that may be NULL (nil then).
    package mutating func optionalNamed<Value: RawRepresentable<String>>(
        _: Value.Type,
        _ detail: (String) -> String
    ) throws -> Value? {
        guard let name = try optionalText() else { return nil }
        guard let value = Value(rawValue: name) else { throw StoreError.corrupt.with(detail: detail(name)) }
        return value
    }

    /// An `Int` kept in an integer column.
    package mutating func int() throws -> Int { Int(try integer()) }
}

extension CallbackRecord: ColumnsDecodable {
    /// The columns `init(columns:)` reads, in its order.
    package static let columns = """
        id, app_id, user_id, state, sealed_dialog, due_at, expires_at, pushes, version, last_action,
        created_at, updated_at
        """

    package init(columns: inout some StoreColumns) throws {
        self.init(
            id: try columns.text(),
            appID: try columns.text(),
            userID: try columns.text(),
            state: try columns.named(CallbackState.self) { "a callback has an unknown state: \($0)" },
            sealedDialog: try columns.bytes(),
            dueAt: try columns.integer(),
            expiresAt: try columns.integer(),
            pushes: try columns.int(),
            version: try columns.int(),
            lastAction: try columns.optionalText(),
            createdAt: try columns.integer(),
            updatedAt: try columns.integer()
        )
    }
}

extension CallbackHistoryEntry: ColumnsDecodable {
    /// The columns of `callback_history` that `init(columns:)` reads, in its order.
    package static let columns = "at, event, state, action, sequence, next_push_at"

    package init(columns: inout some StoreColumns) throws {
        let unknown = { (_: String) in "a callback's history has an unknown event or state" }
        self.init(
            at: try columns.integer(),
            event: try columns.named(Event.self, unknown),
            state: try columns.named(CallbackState.self, unknown),
            action: try columns.optionalText(),
            sequence: try columns.optionalInteger().map { Int($0) },
            nextPushAt: try columns.optionalInteger()
        )
    }
}

extension StoredWebhookEvent: ColumnsDecodable {
    /// The columns of `webhook_events` that `init(columns:)` reads, in its order.
    package static let columns = """
        id, app_id, type, ordering_key, data, created_at, state, attempts, next_attempt_at, last_error,
        delivered_at, updated_at, trace_context
        """

    package init(columns: inout some StoreColumns) throws {
        // `unavailable`, as the engines have always answered for an event they cannot read.
        let unknown = { (name: String) in "a webhook event has an unknown type or state: \(name)" }
        self.init(
            event: WebhookEvent(
                id: try columns.text(),
                appID: try columns.text(),
                type: try columns.named(WebhookEventType.self, as: .unavailable, unknown),
                orderingKey: try columns.text(),
                data: try columns.text(),
                createdAt: try columns.integer()
            ),
            state: try columns.named(WebhookEventState.self, as: .unavailable, unknown),
            attempts: try columns.int(),
            nextAttemptAt: try columns.integer(),
            lastError: try columns.optionalText(),
            deliveredAt: try columns.optionalInteger(),
            updatedAt: try columns.integer()
        )
        event.traceParent = try columns.optionalText()
    }
}
