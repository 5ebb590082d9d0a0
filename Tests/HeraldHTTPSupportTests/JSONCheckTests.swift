import HeraldEncoding
import HeraldHTTPSupport
import Testing

@Suite(.timeLimit(.minutes(1)))
struct JSONCheckTests {
    /// The fault `json` gets under `limits`, as `path reason`; nil when it passes.
    func fault(_ json: String, _ limits: JSONLimits = .request) -> String? {
        do throws(JSONCheckError) {
            try JSONCheck.check(Array(json.utf8), limits: limits)
            return nil
        } catch {
            return error.description
        }
    }

    @Test(
        "a key given twice in one object is found, with its path",
        arguments: [
            (#"{"to":"a","to":"b"}"#, "to"),
            (#"{"to":"a","from":{"id":"x","name":"y","name":"z"}}"#, "from.name"),
            (#"{"pushes":[{"id":"1"},{"id":"2","id":"3"}]}"#, "pushes[1].id"),
            (#"{"to":"a","\u0074o":"b"}"#, "to"),
            (#"{"a":{"b":[1,{"c":1,"c":2}]}}"#, "a.b[1].c"),
            (#"{"text":"{\"to\":1,\"to\":2}","text":"x"}"#, "text"),
            (#"{"emoji":"\ud83d\ude00","😀":1,"\ud83d\ude00":2}"#, "😀"),
        ]
    )
    func duplicateKeys(json: String, path: String) {
        #expect(fault(json) == path + " is given twice")
        var lenient = JSONLimits.request
        lenient.refusesDuplicateKeys = false
        #expect(fault(json, lenient) == nil)
    }

    @Test(
        "the same key in different objects and keys inside strings are not duplicates",
        arguments: [
            #"{"a":{"id":1},"b":{"id":2}}"#,
            #"{"l":[{"id":1},{"id":2}]}"#,
            #"{"text":"\"to\":1,\"to\":2","to":"x"}"#,
            #"{"a":"b\\","to":"x"}"#,
            #"{"emoji":"\ud83d\ude00","\ud83d\ude00":1}"#,
        ]
    )
    func notDuplicates(json: String) {
        #expect(fault(json) == nil)
    }

    @Test(
        "malformed JSON, other top-level values and invalid UTF-8 are refused",
        arguments: [
            ("", "the body must be a JSON object"), ("[]", "the body must be a JSON object"),
            ("1", "the body must be a JSON object"), (#""x""#, "the body must be a JSON object"),
            ("{", "the body is not valid JSON"), (#"{"a"}"#, "the body is not valid JSON"),
            (#"{"a":1,}"#, "the body is not valid JSON"), (#"{a:1}"#, "the body is not valid JSON"),
            (#"{"a":01}"#, "the body is not valid JSON"), (#"{"a":"\x"}"#, "the body is not valid JSON"),
            (#"{} {}"#, "the body is not valid JSON"), (#"{"a":[1,]}"#, "the body is not valid JSON"),
            (#"{"to":"unterminated"#, "the body is not valid JSON"),
            ("{\"a\":\"\u{1}\"}", "the body is not valid JSON"),
            ("not json", "the body is not valid JSON"),
        ]
    )
    func malformed(json: String, expected: String) {
        #expect(fault(json) == expected)
    }

    @Test func invalidUTF8IsNamedByItsField() {
        for bytes: [UInt8] in [[0xC3, 0x28], [0xED, 0xA0, 0x80], [0xC0, 0x80], [0xF5, 0x80, 0x80, 0x80]] {
            let body = Array(#"{"a":{"b":""#.utf8) + bytes + Array(#""}}"#.utf8)
            #expect(throws: JSONCheckError.self) { try JSONCheck.check(body, limits: .request) }
            do throws(JSONCheckError) {
                try JSONCheck.check(body, limits: .request)
            } catch {
                #expect(error.description == "a.b is not valid UTF-8")
            }
        }
    }

    @Test("each limit stops the scan where it is passed, whatever the body's size")
    func limits() {
        let deep = String(repeating: "[", count: 60_000) + String(repeating: "]", count: 60_000)
        #expect(fault(#"{"a":"# + deep + "}") == "the body nests objects and arrays deeper than 32 levels")
        #expect(fault(deep) == "the body nests objects and arrays deeper than 32 levels")
        let objects = String(repeating: #"{"a":"#, count: 40_000) + "1" + String(repeating: "}", count: 40_000)
        #expect(fault(objects) == "the body nests objects and arrays deeper than 32 levels")
        // 31 arrays inside the top-level object: 32 levels, the most a request may have.
        let fine = #"{"a":"# + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "}"
        #expect(fault(fine) == nil)
        #expect(fault(#"{"a":"# + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "}") != nil)

        let keys = "{" + (0..<15_000).map { #""k\#($0)":1"# }.joined(separator: ",") + "}"
        #expect(fault(keys) == "the body holds more than 4096 values")
        let elements = #"{"l":["# + Array(repeating: "0", count: 5_000).joined(separator: ",") + "]}"
        #expect(fault(elements) == "the body holds more than 4096 values")
        let users = #"{"to":["# + (0..<1_000).map { #""user-\#($0)""# }.joined(separator: ",") + "]}"
        #expect(fault(users) == nil)

        #expect(
            fault(#"{"n":"# + String(repeating: "9", count: 100_000) + "}") == "n is a number longer than 40 characters"
        )
        #expect(fault(#"{"n":-1.5e+300}"#) == nil)
        #expect(fault(#"{"s":""# + String(repeating: "x", count: 200_000) + #""}"#) == nil)
    }

    @Test("a request that knows its fields refuses any other key, at any depth; free-form maps take any")
    func unknownFields() {
        enum Top: String, CodingKey, CaseIterable { case to, from, tags, meta, items }
        enum Item: String, CodingKey, CaseIterable { case id, label }
        let fields = JSONFields.object(
            Top.self,
            nested: ["from": .object(Item.self), "items": .array(of: .object(Item.self))]
        )
        func fault(_ json: String) -> String? {
            do throws(JSONCheckError) {
                try JSONCheck.check(Array(json.utf8), limits: .request, fields: fields)
                return nil
            } catch {
                return error.description
            }
        }
        let cases: [(String, String?)] = [
            (#"{"to":"a","from":{"id":"x","label":"y"},"items":[{"id":"1"},{"label":"2"}]}"#, nil),
            (#"{"to":"a","meta":{"anything":{"goes":[1,{"here":true}]}},"tags":["x"]}"#, nil),
            (#"{"to":"a","idempotency_ky":"k"}"#, "idempotency_ky is not a field of this request"),
            (#"{"to":"a","from":{"id":"x","nick":"y"}}"#, "from.nick is not a field of this request"),
            (#"{"items":[{"id":"1"},{"id":"2","extra":3}]}"#, "items[1].extra is not a field of this request"),
            (#"{"to":"a","to2":1}"#, "to2 is not a field of this request"),
            // A value of another kind than the fields say is the decoder's to name, not a key's.
            (#"{"from":"a","items":{"x":1}}"#, nil),
        ]
        for (json, expected) in cases {
            #expect(fault(json) == expected, "\(json)")
        }
        // Without fields, the same bodies pass the check.
        #expect((try? JSONCheck.check(Array(#"{"to":"a","idempotency_ky":"k"}"#.utf8), limits: .request)) != nil)
    }

    /// Two field sets merged, and what the merge is.
    static let merges: [(JSONFields, JSONFields, JSONFields)] = [
        (.object(["to": .any]), .object(["text": .any]), .object(["to": .any, "text": .any])),
        (.object(["from": .any]), .object(["from": .object(["id": .any])]), .object(["from": .object(["id": .any])])),
        (.object(["to": .any]), .object([:]), .object(["to": .any])),
        (.any, .object(["text": .any]), .any),
        (.object(["to": .any]), .any, .object(["to": .any])),
        (.array(of: .any), .object(["text": .any]), .array(of: .any)),
    ]

    @Test(
        "merged fields: an object with both's keys, the other's value for a shared key; anything else kept",
        arguments: merges
    )
    func merging(mine: JSONFields, theirs: JSONFields, expected: JSONFields) {
        #expect(mine.merging(theirs) == expected)
    }

    @Test("a decoded body names the field at fault the same way on every listener")
    func decodeNamesTheField() {
        struct Body: Decodable {
            struct Item: Decodable { var id: String }
            var to: String
            var items: [Item]
            var count: Int?
        }
        let cases: [(String, String)] = [
            (#"{"items":[]}"#, "the field 'to' is missing"),
            (#"{"to":1,"items":[]}"#, "the field 'to' must be a string"),
            (#"{"to":"a","items":[{"id":"x"},{}]}"#, "the field 'items[1].id' is missing"),
            (#"{"to":"a","items":[],"count":"3"}"#, "the field 'count' must be an integer"),
            (#"{"to":"a","to":"b","items":[]}"#, "the field 'to' is given twice"),
            ("nope", "the body is not valid JSON"),
        ]
        for (json, expected) in cases {
            #expect(throws: JSONBodyError.self) { try JSONBody.decode(Body.self, from: Array(json.utf8)) }
            do throws(JSONBodyError) {
                _ = try JSONBody.decode(Body.self, from: Array(json.utf8))
            } catch {
                #expect(error.description == expected, "\(json)")
            }
        }
        #expect((try? JSONBody.decode(Body.self, from: Array(#"{"to":"a","items":[{"id":"x"}]}"#.utf8)))?.to == "a")
    }
}

@Suite(.timeLimit(.minutes(1)))
struct FilePathTextTests {
    @Test(
        "a path's parent, trailing slashes dropped; none for a bare name (where Foundation traps)",
        arguments: [
            ("data", ""), ("data/", ""), ("data/herald.sqlite", "data"), ("a/b/c", "a/b"), ("a//b", "a"),
            ("/d", "/"), ("/", "/"), ("./d", "."), ("/var/lib/herald/", "/var/lib"), ("", ""),
        ]
    )
    func parent(path: String, expected: String) {
        #expect(FilePathText.parent(of: path) == expected)
    }
}
