import Foundation
import HeraldEncoding
import HeraldRelayAPI
import Testing
import Yams

/// The fields the relay knows for each request body are the ones docs/openapi.yaml documents, at
/// every level: a field added to a type and not to the spec (or the other way round) fails here,
/// not in a client's 400.
@Suite(.timeLimit(.minutes(1)))
struct RequestFieldsSpecTests {
    /// Read once, never written: the parsed spec is shared by the tests.
    nonisolated(unsafe) static let spec: Node? = {
        let url = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "docs/openapi.yaml")
        do {
            return try Yams.compose(yaml: try String(contentsOf: url, encoding: .utf8))
        } catch {
            Issue.record("cannot read \(url.path): \(error)")
            return nil
        }
    }()

    static func schema(_ name: String) -> Node? { spec?["components"]?["schemas"]?[name] }

    /// The fields a spec schema documents, as `JSONFields`: `$ref` and a lone `allOf` followed,
    /// an object's `properties` looked into, an object without them (a free-form map) `.any`.
    static func fields(_ node: Node?) -> JSONFields {
        guard let node, node.mapping != nil else { return .any }
        if let reference = node["$ref"]?.string {
            return fields(schema(String(reference.split(separator: "/").last ?? "")))
        }
        if let parts = node["allOf"]?.sequence, parts.count == 1, node["properties"] == nil {
            return fields(parts.first)
        }
        if let properties = node["properties"]?.mapping {
            #expect(node["additionalProperties"]?.bool == false, "an object with properties refuses others")
            var known: [String: JSONFields] = [:]
            for (key, value) in properties { known[key.string ?? ""] = fields(value) }
            return .object(known)
        }
        if node["type"]?.string == "array", let items = node["items"] {
            let element = fields(items)
            return element == .any ? .any : .array(of: element)
        }
        return .any
    }

    @Test(
        "each request type's fields are its schema's properties",
        arguments: [
            ("MessageRequest", MessageRequest.jsonFields),
            ("BroadcastRequest", BroadcastRequest.jsonFields),
            ("CallRequest", CallRequest.jsonFields),
            ("ActivationRequest", ActivationRequest.jsonFields),
            ("TokenUpdateRequest", TokenUpdateRequest.jsonFields),
            ("HeartbeatRequest", HeartbeatRequest.jsonFields),
            ("NotificationPermissionRequest", NotificationPermissionRequest.jsonFields),
            ("ReceiptRequest", ReceiptRequest.jsonFields),
            ("ChatEventRequest", ChatEventRequest.jsonFields),
            ("CallbackRequest", CallbackRequest.jsonFields),
        ]
    )
    func matchesTheSpec(schema: String, fields: JSONFields) throws {
        try #require(Self.schema(schema) != nil, "docs/openapi.yaml has no schema \(schema)")
        #expect(Self.fields(Self.schema(schema)) == fields)
    }

    @Test("a message's and a broadcast's shared fields are read from and written to the body itself, not an object")
    func sharedFieldsAreFlat() throws {
        let shared =
            #""from":{"id":"a","name":"Dana"},"conversation":"c","text":"hi","idempotency_key":"k","priority":10,"expiration":60,"badge":2,"category":"chat","public_data":{"p":"1"},"title":"T","data":{"d":"2"}"#
        let message = try JSONDecoder().decode(
            MessageRequest.self,
            from: Data(("{" + #""to":"u","waiting_since":5,"# + shared + "}").utf8)
        )
        let broadcast = try JSONDecoder().decode(
            BroadcastRequest.self,
            from: Data(("{" + #""to":["u","v"],"# + shared + "}").utf8)
        )
        // The options alone, read from the same fields.
        let options = try JSONDecoder().decode(MessagePushFields.self, from: Data(("{" + shared + "}").utf8))
        #expect(options.priority == 10 && options.publicData == ["p": "1"] && options.data == ["d": "2"])
        #expect(options.expiration == 60 && options.badge == 2 && options.category == "chat" && options.title == "T")
        #expect(message.options == options && broadcast.options == options)
        #expect(message.from == Party(id: "a", name: "Dana") && broadcast.from == message.from)
        #expect(message.idempotencyKey == "k" && broadcast.idempotencyKey == "k" && message.waitingSince == 5)
        #expect(broadcast.to == ["u", "v"] && message.text == "hi" && broadcast.conversation == "c")
        // Written back, every field at the top level, the same keys the relay knows.
        for (encoded, fields) in [
            (try JSONEncoder().encode(message), MessageRequest.jsonFields),
            (try JSONEncoder().encode(broadcast), BroadcastRequest.jsonFields),
        ] {
            let object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
            guard case .object(let known) = fields else {
                Issue.record("the fields are not an object")
                continue
            }
            #expect(Set(object.keys) == Set(known.keys))
            #expect(object["priority"] as? Int == 10 && (object["public_data"] as? [String: String]) == ["p": "1"])
        }
        // Absent options are absent, not null.
        let bare = try JSONEncoder().encode(MessageRequest(to: "u", from: message.from, conversation: "c", text: "hi"))
        let keys = try #require(try JSONSerialization.jsonObject(with: bare) as? [String: Any]).keys
        #expect(Set(keys) == ["to", "from", "conversation", "text"])
    }

    @Test("the chat disconnect's inline body, too")
    func disconnect() throws {
        let route = try #require(Self.spec?["paths"]?["/v1/devices/{id}/chats/{conversation}/disconnect"])
        let schema = route["post"]?["requestBody"]?["content"]?["application/json"]?["schema"]
        try #require(schema != nil)
        #expect(Self.fields(schema) == ChatDisconnectRequest.jsonFields)
    }
}
