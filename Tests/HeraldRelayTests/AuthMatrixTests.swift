import Foundation
import HeraldAdapters
import HeraldRelayAPI
import HeraldTestSupport
import NIOHTTP1
import Synchronization
import Testing

/// Every `/v1` route against every kind of credential (issue 30): the table below is the test.
///
/// Each route is a row: how to make its request (creating, for each cell, the devices and the
/// call, callback, chat or message it names) and what each kind of credential must get: 401, 403,
/// 404 (a route that does not tell a device whether another user's call or message exists), or
/// "admitted" (anything but 401 and 403: 200, 201, 202, 204, 400, 404, 409, 426). Each cell runs
/// on fresh devices, so what an admitted request changes (a deleted device, an answered call)
/// never decides another cell. A refused request must leave the store as it was: the devices of
/// both users, the apps, the users' pushes, the webhook events, and the call, callback and chat
/// the request named are read before and after it.
@Suite("Auth matrix", .timeLimit(.minutes(5)))
struct AuthMatrixTests {
    /// The kinds of credential, in the order of each row's expectations.
    enum Credential: String, CaseIterable, Sendable {
        case none = "no credential"
        case wrongKey = "a wrong key"
        case apiKey = "the API key"
        case previousKey = "the previous API key"
        case ownDevice = "this device's credential"
        case otherDevice = "another device's credential"
        case forged = "a forged credential (this device's id, a wrong secret)"
    }

    /// What one cell must answer.
    enum Expect: Sendable, CustomStringConvertible {
        /// 401.
        case unauthorized
        /// 403.
        case forbidden
        /// 404: the resource is another user's, and the route does not say that it exists.
        case hidden
        /// Neither 401 nor 403.
        case admitted

        func holds(_ status: Int) -> Bool {
            switch self {
            case .unauthorized: status == 401
            case .forbidden: status == 403
            case .hidden: status == 404
            case .admitted: status != 401 && status != 403
            }
        }

        var refuses: Bool {
            switch self {
            case .unauthorized, .forbidden, .hidden: true
            case .admitted: false
            }
        }

        var description: String {
            switch self {
            case .unauthorized: "401"
            case .forbidden: "403"
            case .hidden: "404"
            case .admitted: "admitted (not 401 or 403)"
            }
        }
    }

    static let previousKey = "hk_previous-key-0123456789"
    static let wrongKey = "hk_not-the-key-0123456789"

    // The rules, one expectation per kind of credential, in the order of `Credential`:
    // no credential, a wrong key, the API key, the previous API key, this device's credential,
    // another user's device's credential, a forged credential.

    /// The API key (the previous one too, during a rotation); a device credential is 403.
    static let backend: [Expect] = [
        .unauthorized, .unauthorized, .admitted, .admitted, .forbidden, .forbidden, .unauthorized,
    ]
    /// The credential of this device (or of a device of the resource's user); the API key is 403.
    static let device: [Expect] = [
        .unauthorized, .unauthorized, .forbidden, .forbidden, .admitted, .forbidden, .unauthorized,
    ]
    /// As `device`, but another user's device gets 404: the route does not say the resource exists.
    static let deviceHidingOthers: [Expect] = [
        .unauthorized, .unauthorized, .forbidden, .forbidden, .admitted, .hidden, .unauthorized,
    ]
    /// The API key, or this device's credential (another device's is 403).
    static let backendOrDevice: [Expect] = [
        .unauthorized, .unauthorized, .admitted, .admitted, .admitted, .forbidden, .unauthorized,
    ]
    /// As `backendOrDevice`, but another user's device gets 404.
    static let backendOrDeviceHidingOthers: [Expect] = [
        .unauthorized, .unauthorized, .admitted, .admitted, .admitted, .hidden, .unauthorized,
    ]
    /// No credential needed.
    static let anyone: [Expect] = Array(repeating: .admitted, count: 7)
    /// A contact-center webhook opens with its own signature or secret, never a Herald credential.
    static let signatureOnly: [Expect] = Array(repeating: .unauthorized, count: 7)

    /// A request: method, path, JSON body.
    struct Request: Sendable {
        var method: HTTPMethod
        var path: String
        var body: String? = nil
    }

    /// One row: a route, how to make its request in a fresh world, and each credential's answer.
    struct Route: Sendable, CustomTestStringConvertible {
        var name: String
        var expect: [Expect]
        var request: @Sendable (World) async throws -> Request

        init(_ name: String, _ expect: [Expect], _ request: @escaping @Sendable (World) async throws -> Request) {
            self.name = name
            self.expect = expect
            self.request = request
        }

        var testDescription: String { name }
    }

    static let routes: [Route] = [
        Route("GET /v1", anyone) { _ in Request(method: .GET, path: "/v1") },
        Route("PUT /v1/apps/{id}", backend) { _ in
            Request(method: .PUT, path: "/v1/apps/\(RelayHarness.bundleID)", body: #"{"team_id":"TEAM123456"}"#)
        },
        Route("GET /v1/apps", backend) { _ in Request(method: .GET, path: "/v1/apps") },
        Route("GET /v1/apps/{id}/web-push", backend) { _ in
            Request(method: .GET, path: "/v1/apps/\(RelayHarness.bundleID)/web-push")
        },
        // The API key activates any device; a device's own credential re-activates that device only.
        Route("POST /v1/activations", backendOrDevice) { world in
            Request(method: .POST, path: "/v1/activations", body: world.reactivation)
        },
        Route("GET /v1/devices/{id}", backendOrDevice) { world in
            Request(method: .GET, path: "/v1/devices/\(world.own.deviceID)")
        },
        Route("PUT /v1/devices/{id}/tokens", backendOrDevice) { world in
            Request(
                method: .PUT,
                path: "/v1/devices/\(world.own.deviceID)/tokens",
                body: #"{"messaging_token":"\#(world.own.messagingToken)"}"#
            )
        },
        Route("DELETE /v1/devices/{id}", backendOrDevice) { world in
            Request(method: .DELETE, path: "/v1/devices/\(world.own.deviceID)")
        },
        Route("PUT /v1/devices/{id}/presence", device) { world in
            Request(method: .PUT, path: "/v1/devices/\(world.own.deviceID)/presence", body: #"{"state":"active"}"#)
        },
        Route("PUT /v1/devices/{id}/notifications", device) { world in
            Request(
                method: .PUT,
                path: "/v1/devices/\(world.own.deviceID)/notifications",
                body: #"{"permission":"denied"}"#
            )
        },
        // A push the relay does not know: the device's own credential gets 404 (admitted) before
        // any tag is checked, every other credential 401 or 403.
        Route("POST /v1/devices/{id}/receipts", device) { world in
            Request(
                method: .POST,
                path: "/v1/devices/\(world.own.deviceID)/receipts",
                body: #"{"push_id":"no-such-push","stage":"shown","device_time":1,"key_id":"0123456789abcdef","#
                    + #""tag":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#
            )
        },
        Route("GET /v1/devices/{id}/live (no upgrade headers)", device) { world in
            Request(method: .GET, path: "/v1/devices/\(world.own.deviceID)/live")
        },
        Route("POST /v1/messages", backend) { world in
            Request(method: .POST, path: "/v1/messages", body: world.message)
        },
        Route("GET /v1/messages/{id}", deviceHidingOthers) { world in
            Request(method: .GET, path: "/v1/messages/\(try await world.messageID())")
        },
        Route("POST /v1/calls", backend) { world in
            Request(
                method: .POST,
                path: "/v1/calls",
                body: #"{"to":"\#(world.user)","from":{"id":"agent-7","name":"Dana"},"call_id":"call-new"}"#
            )
        },
        Route("GET /v1/calls/{id}", backendOrDeviceHidingOthers) { world in
            Request(method: .GET, path: "/v1/calls/\(try await world.callID())")
        },
        Route("POST /v1/calls/{id}/cancel", backend) { world in
            Request(method: .POST, path: "/v1/calls/\(try await world.callID())/cancel")
        },
        Route("POST /v1/calls/{id}/ringing", deviceHidingOthers) { world in
            Request(method: .POST, path: "/v1/calls/\(try await world.callID())/ringing")
        },
        Route("POST /v1/calls/{id}/answer", deviceHidingOthers) { world in
            Request(method: .POST, path: "/v1/calls/\(try await world.callID())/answer")
        },
        Route("POST /v1/calls/{id}/decline", deviceHidingOthers) { world in
            Request(method: .POST, path: "/v1/calls/\(try await world.callID())/decline")
        },
        Route("POST /v1/broadcasts", backend) { world in
            Request(
                method: .POST,
                path: "/v1/broadcasts",
                body: #"{"to":["\#(world.user)"],"from":{"id":"a","name":"A"},"conversation":"b","text":"hi"}"#
            )
        },
        Route("POST /v1/chats/{conversation}/events", backend) { world in
            Request(method: .POST, path: "/v1/chats/\(world.conversation)/events", body: world.chatEvent)
        },
        Route("POST /v1/chats/{conversation}/end", backend) { world in
            Request(method: .POST, path: "/v1/chats/\(try await world.chat())/end")
        },
        Route("GET /v1/chats/{conversation}/transcript", device) { world in
            Request(method: .GET, path: "/v1/chats/\(try await world.chat())/transcript")
        },
        Route("POST /v1/devices/{id}/chats/{conversation}/connect", device) { world in
            Request(method: .POST, path: "/v1/devices/\(world.own.deviceID)/chats/\(try await world.chat())/connect")
        },
        Route("POST /v1/devices/{id}/chats/{conversation}/disconnect", device) { world in
            Request(
                method: .POST,
                path: "/v1/devices/\(world.own.deviceID)/chats/\(try await world.chat())/disconnect",
                body: #"{"transcript_position":1}"#
            )
        },
        Route("POST /v1/callbacks", backend) { world in
            Request(
                method: .POST,
                path: "/v1/callbacks",
                body: #"{"user_id":"\#(world.user)","service_id":"service-1"}"#
            )
        },
        Route("GET /v1/callbacks/{id}", backendOrDevice) { world in
            Request(method: .GET, path: "/v1/callbacks/\(try await world.callbackID())")
        },
        Route("POST /v1/callbacks/{id}/actions/{action}", device) { world in
            Request(method: .POST, path: "/v1/callbacks/\(try await world.callbackID())/actions/ready")
        },
        Route("GET /v1/pushes/{id}", backend) { world in
            Request(method: .GET, path: "/v1/pushes/\(try await world.pushID())")
        },
        Route("GET /v1/pushes", backend) { world in Request(method: .GET, path: "/v1/pushes?user=\(world.user)") },
        Route("GET /v1/audit", backend) { _ in Request(method: .GET, path: "/v1/audit") },
        Route("GET /v1/users/{id}/devices", backend) { world in
            Request(method: .GET, path: "/v1/users/\(world.user)/devices")
        },
        Route("GET /v1/webhooks/events", backend) { _ in
            Request(method: .GET, path: "/v1/webhooks/events?app=\(RelayHarness.bundleID)")
        },
        Route("GET /v1/webhooks/events/{id}", backend) { world in
            Request(method: .GET, path: "/v1/webhooks/events/\(try await world.webhookEventID())")
        },
        Route("POST /v1/adapters/genesys", signatureOnly) { _ in
            Request(method: .POST, path: "/v1/adapters/genesys", body: #"{"eventBody":{}}"#)
        },
        Route("POST /v1/adapters/cxone", signatureOnly) { _ in
            Request(method: .POST, path: "/v1/adapters/cxone", body: #"{"eventType":"x"}"#)
        },
    ]

    static func setup() -> RelayHarness.Setup {
        var setup = RelayHarness.Setup.recordingEvents
        setup.previousAPIKeys = [previousKey]
        setup.adapters = [
            GenesysAdapter(authentication: .hmacSHA256("webhook-secret-0123456789")),
            CXoneAdapter(authentication: .sharedSecret("webhook-secret-0123456789")),
        ]
        return setup
    }

    @Test("each kind of credential against each route", arguments: routes)
    func matrix(route: Route) async throws {
        #expect(route.expect.count == Credential.allCases.count, "\(route.name): one expectation per credential")
        try await RelayHarness.with(Self.setup()) { harness in
            for (credential, expect) in zip(Credential.allCases, route.expect) {
                let world = try await World.make(harness)
                let request = try await route.request(world)
                let before = expect.refuses ? try await world.snapshot() : [:]
                let reply = try await harness.call(
                    request.method,
                    request.path,
                    auth: world.auth(credential),
                    body: request.body
                )
                #expect(
                    expect.holds(reply.status),
                    "\(route.name) with \(credential.rawValue): expected \(expect), got \(reply.status) \(reply.text)"
                )
                guard expect.refuses else { continue }
                // A refusal says why, in the relay's error body, and changes nothing (checked
                // also when the request was let in, where the change is the harm).
                if expect.holds(reply.status) {
                    let error = reply.json["error"] as? String
                    let identifier = [401: "unauthorized", 403: "forbidden", 404: "not_found"][reply.status]
                    #expect(error == identifier, "\(route.name) with \(credential.rawValue): \(reply.text)")
                    if reply.status == 401 {
                        #expect(reply.headers.contains { $0.0 == "www-authenticate" && $0.1 == "Bearer" })
                    }
                }
                let after = try await world.snapshot()
                for key in Set(before.keys).union(after.keys).sorted() where before[key] != after[key] {
                    Issue.record(
                        "\(route.name) with \(credential.rawValue) was refused but changed \(key): \(before[key] ?? "nothing") → \(after[key] ?? "nothing")"
                    )
                }
            }
        }
    }

    @Test("the table names every route the relay serves")
    func everyRouteIsInTheTable() throws {
        // The spec lists every operation; each must be a row (the live channel's and the
        // adapters' rows are per name).
        let spec = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../docs/openapi.yaml"),
            encoding: .utf8
        )
        var operations: Set<String> = []
        var path: String?
        for line in spec.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if let first = line.first, first != " " {
                path = nil  // the next top-level section (`webhooks:`, `components:`)
            } else if let current = path, current.hasPrefix("/v1"),
                let method = ["get", "put", "post", "delete", "patch"].first(where: { line == "    \($0):" })
            {
                operations.insert("\(method.uppercased()) \(current)")
            }
        }
        #expect(operations.count > 20, "the spec's paths were not read")
        let rows = Set(
            Self.routes.map { route in
                route.name
                    .replacingOccurrences(of: " (no upgrade headers)", with: "")
                    .replacingOccurrences(of: "/adapters/genesys", with: "/adapters/{name}")
                    .replacingOccurrences(of: "/adapters/cxone", with: "/adapters/{name}")
            }
        )
        let missing = operations.subtracting(rows).sorted()
        #expect(missing.isEmpty, "routes of docs/openapi.yaml without a row: \(missing)")
    }

    /// A cell's devices and the resources its request names, made on demand.
    final class World: Sendable {
        let harness: RelayHarness
        /// The user whose device is `own`, and the calls, callbacks, chats and messages are for.
        let user: String
        let own: RelayHarness.Phone
        /// A device of another user.
        let other: RelayHarness.Phone
        let conversation: String
        private let made = Mutex<[String: String]>([:])

        private init(harness: RelayHarness, user: String, own: RelayHarness.Phone, other: RelayHarness.Phone) {
            self.harness = harness
            self.user = user
            self.own = own
            self.other = other
            self.conversation = "chat-" + user
        }

        static func make(_ harness: RelayHarness) async throws -> World {
            let tag = UUID().uuidString.prefix(8).lowercased()
            let own = try await harness.phone(user: "own-\(tag)")
            let other = try await harness.phone(user: "other-\(tag)")
            return World(harness: harness, user: "own-\(tag)", own: own, other: other)
        }

        func auth(_ credential: Credential) -> RelayHarness.Auth {
            switch credential {
            case .none: .none
            case .wrongKey: .bearer(AuthMatrixTests.wrongKey)
            case .apiKey: .apiKey
            case .previousKey: .bearer(AuthMatrixTests.previousKey)
            case .ownDevice: .bearer(own.credential)
            case .otherDevice: .bearer(other.credential)
            case .forged:
                // This device's id, and its secret with the last character changed.
                .bearer(String(own.credential.dropLast()) + (own.credential.hasSuffix("A") ? "B" : "A"))
            }
        }

        /// A re-activation of `own` (its id, a new key).
        var reactivation: String {
            let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            return
                #"{"user_id":"\#(user)","app":"\#(RelayHarness.bundleID)","platform":"ios","public_key":"\#(key)","device_id":"\#(own.deviceID)"}"#
        }

        var message: String {
            #"{"to":"\#(user)","from":{"id":"a","name":"A"},"conversation":"c","text":"hello"}"#
        }

        var chatEvent: String {
            #"{"to":"\#(user)","type":"Message.Text","from":{"id":"agent-1","name":"Dana"},"text":"Hi","from_agent":true}"#
        }

        private func once(_ name: String, _ make: () async throws -> String) async throws -> String {
            if let known = made.withLock({ $0[name] }) { return known }
            let value = try await make()
            made.withLock { $0[name] = value }
            return value
        }

        /// Posts with the API key; the reply's JSON, after checking its status.
        private func post(_ path: String, _ body: String, _ status: Int) async throws -> [String: Any] {
            let reply = try await harness.call(.POST, path, body: body)
            try #require(reply.status == status, "\(path): \(reply.status) \(reply.text)")
            return reply.json
        }

        /// The push ids of a receipt, each waited for until its network's answer is recorded.
        private func settle(_ receipt: [String: Any]) async throws -> [String] {
            let pushes = (receipt["pushes"] as? [[String: Any]] ?? []).compactMap { $0["push_id"] as? String }
            for push in pushes {
                try await eventually("push \(push) to be sent") {
                    let state = try await harness.relay.ingest.pushStatus(id: push).state
                    return state != .queued && state != .sending
                }
            }
            return pushes
        }

        func messageID() async throws -> String {
            try await once("message") {
                let receipt = try await post("/v1/messages", message, 202)
                made.withLock { $0["push"] = (receipt["pushes"] as? [[String: Any]])?.first?["push_id"] as? String }
                _ = try await settle(receipt)
                return try #require(receipt["id"] as? String)
            }
        }

        func pushID() async throws -> String {
            _ = try await messageID()
            return try #require(made.withLock { $0["push"] })
        }

        func callID() async throws -> String {
            try await once("call") {
                let id = "call-" + user
                let body = #"{"to":"\#(user)","from":{"id":"agent-7","name":"Dana"},"call_id":"\#(id)"}"#
                _ = try await settle(try await post("/v1/calls", body, 202))
                return id
            }
        }

        func chat() async throws -> String {
            try await once("chat") {
                _ = try await settle(try await post("/v1/chats/\(conversation)/events", chatEvent, 202))
                return conversation
            }
        }

        func callbackID() async throws -> String {
            try await once("callback") {
                let body = #"{"user_id":"\#(user)","service_id":"service-1"}"#
                let id = try #require(try await post("/v1/callbacks", body, 201)["callback_id"] as? String)
                try await eventually("callback \(id) to be pushed") {
                    try await harness.call(.GET, "/v1/callbacks/\(id)").json["state"] as? String == "pushed"
                }
                return id
            }
        }

        /// An event of the app's webhook: a delivered push makes one.
        func webhookEventID() async throws -> String {
            try await once("event") {
                _ = try await messageID()
                var id: String?
                try await eventually("a webhook event") {
                    let page = try await harness.call(.GET, "/v1/webhooks/events?app=\(RelayHarness.bundleID)").json
                    id = (page["events"] as? [[String: Any]])?.first?["id"] as? String
                    return id != nil
                }
                return try #require(id)
            }
        }

        /// What a refused request must not change: the users' devices and pushes, the apps, the
        /// users' webhook events (but deliveries: they come on their own), and the call, callback
        /// and chat this world made (with the chat's disconnects). A device's presence has no read
        /// and is not compared.
        func snapshot() async throws -> [String: String] {
            let users = [user, other.activation.userID]
            var result: [String: String] = ["apps": try await read("/v1/apps")]
            for name in users {
                result["devices of \(name)"] = try await read("/v1/users/\(name)/devices")
                let pushes = try await page("/v1/pushes?user=\(name)&limit=500")["pushes"]
                result["pushes of \(name)"] = Self.ids(pushes, key: "push_id")
            }
            let listed = try await page("/v1/webhooks/events?app=\(RelayHarness.bundleID)&limit=500")
            let events = (listed["events"] as? [[String: Any]] ?? []).filter { event in
                let data = event["data"] as? [String: Any]
                return users.contains(data?["user_id"] as? String ?? "")
                    && !(event["type"] as? String ?? "").hasPrefix("push.")
            }
            result["webhook events"] = Self.ids(events, key: "id")
            let made = self.made.withLock { $0 }
            if let call = made["call"] { result["call"] = try await read("/v1/calls/\(call)") }
            if let callback = made["callback"] { result["callback"] = try await read("/v1/callbacks/\(callback)") }
            if made["chat"] != nil {
                result["chat"] = String(describing: try await harness.store.chat(conversation: conversation))
                result["transcript"] = String(
                    describing: try await harness.store.transcript(conversation: conversation, after: 0)
                )
                result["chat disconnects"] = String(
                    describing: try await harness.store.disconnects(conversation: conversation)
                )
            }
            return result
        }

        /// A whole answer, read with the API key, less a call's or callback's push deliveries
        /// (they move on their own as the dispatcher works).
        private func read(_ path: String) async throws -> String {
            let reply = try await harness.call(.GET, path)
            var json = reply.json
            json["pushes"] = nil
            let text = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
            return "\(reply.status) " + String(decoding: text, as: UTF8.self)
        }

        /// A listing, read with the API key.
        private func page(_ path: String) async throws -> [String: Any] {
            let reply = try await harness.call(.GET, path)
            try #require(reply.status == 200, "\(path): \(reply.status) \(reply.text)")
            return reply.json
        }

        /// The ids of a list's items, sorted: their states move on, their number does not.
        private static func ids(_ items: Any?, key: String) -> String {
            ((items as? [[String: Any]]) ?? []).compactMap { $0[key] as? String }.sorted().joined(separator: ",")
        }
    }
}
