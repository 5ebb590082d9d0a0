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
}
