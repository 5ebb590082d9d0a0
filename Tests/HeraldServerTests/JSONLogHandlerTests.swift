import Foundation
import HeraldServer
import Logging
import Synchronization
import Testing

/// `--log-format json`: every record one line, one JSON object, whatever its message and
/// metadata hold.
@Suite(.timeLimit(.minutes(1)))
struct JSONLogHandlerTests {
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "disk \"full\"" }
    }

    /// How a string is written in a record, as the relay writes JSON strings (`JSONText`).
    @Test(
        "strings are escaped as the relay escapes them, line separators included",
        arguments: [
            ("plain é 🔔", #""plain é 🔔""#),
            ("a \"quote\" and a \\", #""a \"quote\" and a \\""#),
            ("line\nbreak\ttab\r", #""line\nbreak\ttab\r""#),
            ("bell \u{7}", #""bell \u0007""#),
            ("separators \u{2028}\u{2029}", #""separators \u2028\u2029""#),
        ]
    )
    func stringEscapes(_ text: String, _ written: String) throws {
        let lines = Lines()
        let logger = Logger(label: "herald.test") { JSONLogHandler(label: $0, write: lines.append) }
        logger.info("\(text)")
        let line = try #require(lines.all.first)
        #expect(line.contains(#","message":"# + written + ","), "\(line)")
    }

    @Test("each record is one line of JSON: timestamp, level, label, message, metadata, source, error")
    func oneObjectPerLine() throws {
        let lines = Lines()
        var logger = Logger(label: "herald.test") { JSONLogHandler(label: $0, write: lines.append) }
        logger.logLevel = .debug
        logger[metadataKey: "node"] = "relay-a"
        logger.debug("plain")
        logger.info(
            "a \"quoted\" message\nover two lines\twith a tab, \u{1}, é and 🔔",
            metadata: [
                "push": "p-1",
                "nested": ["list": ["a", "b"], "count": "\(3)"],
            ]
        )
        logger.error("cannot write", error: Failure())
        logger.trace("below the level: not written")

        let written = lines.all
        #expect(written.count == 3)
        var objects: [[String: Any]] = []
        for line in written {
            #expect(line.hasSuffix("}\n") && line.dropLast().allSatisfy { $0 != "\n" }, "one line: \(line)")
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            objects.append(try #require(object))
        }
        #expect(objects.map { $0["level"] as? String } == ["debug", "info", "error"])
        #expect(objects.allSatisfy { $0["label"] as? String == "herald.test" })
        #expect(objects.allSatisfy { ($0["metadata"] as? [String: Any])?["node"] as? String == "relay-a" })
        #expect(objects.allSatisfy { $0["source"] as? String == "HeraldServerTests" })
        #expect(objects[1]["message"] as? String == "a \"quoted\" message\nover two lines\twith a tab, \u{1}, é and 🔔")
        let nested = (objects[1]["metadata"] as? [String: Any])?["nested"] as? [String: Any]
        #expect(nested?["list"] as? [String] == ["a", "b"] && nested?["count"] as? String == "3")
        #expect(objects[2]["error"] as? String == "disk \"full\"")
        #expect(objects[0]["error"] == nil)
        // ISO 8601 in UTC with milliseconds, which log shippers parse as it is.
        let timestamp = try #require(objects[0]["timestamp"] as? String)
        #expect(timestamp.hasSuffix("Z") && timestamp.count == "2026-11-25T02:30:00.123Z".count, "\(timestamp)")
        #expect((try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(timestamp)) != nil)
    }

    /// A value whose description looks like a number but whose type is not one.
    struct Reference: CustomStringConvertible, Sendable {
        var description: String { "4711" }
    }

    /// Each metadata value, and the JSON it must be written as: numbers and booleans typed, a
    /// string always a string, nested values nested with their keys sorted.
    static let values: [(Logger.MetadataValue, String)] = [
        (.string("0012"), #""0012""#),
        (.string("true"), #""true""#),
        (.string("say \"hi\"\n"), #""say \"hi\"\n""#),
        (.stringConvertible(202), "202"),
        (.stringConvertible(-7 as Int64), "-7"),
        (.stringConvertible(UInt8(255)), "255"),
        (.stringConvertible(true), "true"),
        (.stringConvertible(false), "false"),
        (.stringConvertible(12.345), "12.345"),
        (.stringConvertible(2.0), "2.0"),
        (.stringConvertible(0.00001), "1e-05"),
        (.stringConvertible(Float(0.5)), "0.5"),
        (.stringConvertible(Double.nan), #""nan""#),
        (.stringConvertible(-Double.infinity), #""-inf""#),
        (.stringConvertible(Reference()), #""4711""#),
        (.array([]), "[]"),
        (.array([.string("a"), .stringConvertible(1), .stringConvertible(false)]), #"["a",1,false]"#),
        (.dictionary([:]), "{}"),
        (
            .dictionary(["b": .stringConvertible(2), "a": .string("x"), "c": .array([.dictionary(["z": "1"])])]),
            #"{"a":"x","b":2,"c":[{"z":"1"}]}"#
        ),
    ]

    @Test(
        "metadata values keep their type: numbers and booleans as such, strings as strings",
        arguments: values.indices
    )
    func typedValues(index: Int) throws {
        let (value, expected) = Self.values[index]
        let lines = Lines()
        let logger = Logger(label: "t") { JSONLogHandler(label: $0, metadataProvider: nil, write: lines.append) }
        logger.info("m", metadata: ["v": value])
        let line = try #require(lines.all.first)
        let prefix = #","message":"m","metadata":{"v":"#
        let suffix = #"},"source":"HeraldServerTests"}"# + "\n"
        let start = try #require(line.range(of: prefix)?.upperBound, "\(line)")
        #expect(line.hasSuffix(suffix), "\(line)")
        #expect(String(line[start...].dropLast(suffix.count)) == expected, "\(value)")
        // And a JSON parser reads it back.
        #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(line)")
    }

    @Test("metadata keys in a fixed order, the record's own fields before them, one line")
    func keyOrder() throws {
        let lines = Lines()
        let logger = Logger(label: "t") { JSONLogHandler(label: $0, metadataProvider: nil, write: lines.append) }
        logger.info(
            "request",
            metadata: [
                "status": .stringConvertible(202), "route": "/v1/messages", "bytes": .stringConvertible(130),
                "request_id": "abc123", "duration_ms": .stringConvertible(1.25),
            ]
        )
        let line = try #require(lines.all.first)
        let expected =
            #","level":"info","label":"t","message":"request","metadata":{"bytes":130,"duration_ms":1.25,"#
            + #""request_id":"abc123","route":"/v1/messages","status":202},"source":"HeraldServerTests"}"# + "\n"
        #expect(line.hasPrefix(#"{"timestamp":""#) && line.hasSuffix(expected), "\(line)")
    }

    @Test("a metadata provider's fields join each record's own")
    func providedMetadata() throws {
        let lines = Lines()
        let provider = Logger.MetadataProvider { ["request_id": "r-1"] }
        let logger = Logger(label: "t") { JSONLogHandler(label: $0, metadataProvider: provider, write: lines.append) }
        logger.info("m", metadata: ["push": "p-1"])
        let line = try #require(lines.all.first)
        #expect(line.contains(#""metadata":{"push":"p-1","request_id":"r-1"}"#), "\(line)")
    }
}
