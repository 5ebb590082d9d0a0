import HeraldStore
import Testing

/// The records' shared decoding (`StoreColumns`), which both engines read their rows through:
/// a stored name of a case that no case has is refused with the error and detail each record
/// has always given, a NULL where a name may be NULL reads as none.
@Suite("Store columns")
struct StoreColumnsTests {
    /// A row as a list of values, read in order.
    struct Values: StoreColumns {
        enum Value {
            case text(String?)
            case integer(Int64?)
            case boolean(Bool)
            case bytes([UInt8]?)
        }
        var values: [Value]

        mutating func take() -> Value { values.removeFirst() }
        mutating func text() throws -> String { try #require(try optionalText()) }
        mutating func optionalText() throws -> String? {
            guard case .text(let text) = take() else { throw Mismatch() }
            return text
        }
        mutating func integer() throws -> Int64 { try #require(try optionalInteger()) }
        mutating func optionalInteger() throws -> Int64? {
            guard case .integer(let integer) = take() else { throw Mismatch() }
            return integer
        }
        mutating func boolean() throws -> Bool {
            guard case .boolean(let boolean) = take() else { throw Mismatch() }
            return boolean
        }
        mutating func bytes() throws -> [UInt8] { try #require(try optionalBytes()) }
        mutating func optionalBytes() throws -> [UInt8]? {
            guard case .bytes(let bytes) = take() else { throw Mismatch() }
            return bytes
        }
    }

    struct Mismatch: Error {}

    static func presence(state: String) -> [Values.Value] {
        [.text("d1"), .text("u1"), .text(nil), .text(state), .integer(5), .integer(9)]
    }

    static func webhookEvent(type: String, state: String) -> [Values.Value] {
        [
            .text("e1"), .text("a1"), .text(type), .text("call:c1"), .text("{}"), .integer(1), .text(state),
            .integer(0), .integer(1), .text(nil), .integer(nil), .integer(1), .text(nil),
        ]
    }

    /// (row, the error's code and detail, or nil where the row reads).
    static let cases: [([Values.Value], (StoreError, String)?)] = [
        (presence(state: "active"), nil),
        (presence(state: "asleep"), (.corrupt, "presence of d1 has an unknown state")),
        (webhookEvent(type: "push.delivered", state: "pending"), nil),
        (
            webhookEvent(type: "push.lost", state: "pending"),
            (.unavailable, "a webhook event has an unknown type or state: push.lost")
        ),
        (
            webhookEvent(type: "push.delivered", state: "lost"),
            (.unavailable, "a webhook event has an unknown type or state: lost")
        ),
    ]

    @Test("a row reads, or fails with its record's error", arguments: cases.indices)
    func decodes(_ index: Int) throws {
        let (values, expected) = Self.cases[index]
        var columns = Values(values: values)
        do {
            if values.count == 6 {
                _ = try PresenceRecord(columns: &columns)
            } else {
                _ = try StoredWebhookEvent(columns: &columns)
            }
            #expect(expected == nil)
            #expect(columns.values.isEmpty)
        } catch let error as StoreError {
            let (code, detail) = try #require(expected)
            #expect(error == code.with(detail: detail))
        }
    }

    @Test("a joined presence that is absent, or of an unknown state, is none")
    func joinedPresence() throws {
        for state: String? in [nil, "asleep"] {
            var columns = Values(values: [.text(nil), .text(state), .integer(nil), .integer(nil)])
            #expect(try PresenceRecord(deviceID: "d1", userID: "u1", joined: &columns) == nil)
        }
        var columns = Values(values: [.text("c1"), .text("active"), .integer(5), .integer(9)])
        let presence = try #require(try PresenceRecord(deviceID: "d1", userID: "u1", joined: &columns))
        #expect(presence.conversation == "c1" && presence.state == .active && presence.expiresAt == 9)
    }

    @Test("an app's optional names read NULL as none, and an unknown one is corrupt")
    func optionalNames() throws {
        func app(environment: String?, undeliverable: String?, deadlines: String? = nil) -> [Values.Value] {
            [
                .text("app1"), .text("team"), .text("full"), .text("t"), .text("b"), .integer(60), .integer(30),
                .boolean(false), .text(nil), .bytes(nil), .text(nil), .text(nil), .text(environment),
                .text("per_device"), .integer(5), .text("queue_time"), .text(undeliverable), .integer(nil),
                .text(deadlines),
            ]
        }
        var plain = Values(values: app(environment: nil, undeliverable: nil))
        let read = try AppRecord(columns: &plain)
        #expect(read.apnsEnvironment == nil && read.undeliverable == nil && read.webhook == nil)
        #expect(read.deadlines.isEmpty)
        let rules = #"[{"kind":"message","after":60,"action":"ring"}]"#
        var ruled = Values(values: app(environment: nil, undeliverable: nil, deadlines: rules))
        #expect(try AppRecord(columns: &ruled).deadlines == [DeadlineRule(kind: .message, after: 60, action: .ring)])
        var garbled = Values(values: app(environment: nil, undeliverable: nil, deadlines: "[{"))
        #expect(throws: StoreError.self) { try AppRecord(columns: &garbled) }
        var unknown = Values(values: app(environment: "staging", undeliverable: nil))
        #expect(throws: StoreError.corrupt.with(detail: "app app1 has an unknown APNs environment")) {
            try AppRecord(columns: &unknown)
        }
    }

    /// (the outbox row's state, the history told: states in order).
    static let histories: [(String, [PushState])] = [
        ("queued", [.queued, .queued]),
        ("sending", [.queued, .queued, .sending]),
        ("delivered", [.queued, .queued, .delivered]),
        ("vanished", []),
    ]

    @Test("a push's history: accepted, its returns to the queue, and where it is unless queued", arguments: histories)
    func history(_ state: String, _ expected: [PushState]) throws {
        var row = Values(values: [.integer(1), .text(state), .integer(9), .text("sent")])
        let history = try PushHistory(columns: &row)
        var logged = Values(values: [.integer(5), .text("queued"), .text("HTTP 503")])
        var unknown = Values(values: [.integer(6), .text("parked"), .text(nil)])
        let requeues = try [PushHistory.requeue(of: "p1", &logged), PushHistory.requeue(of: "p1", &unknown)]
        #expect(requeues[1] == nil)
        let events = history.events(of: "p1", requeues: requeues.compactMap { $0 })
        #expect(events.map(\.state) == expected)
        #expect(events.map(\.at) == Array([1, 5, 9].prefix(expected.count)))
    }

}
