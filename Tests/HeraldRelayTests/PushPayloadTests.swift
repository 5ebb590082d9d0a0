import Foundation
import HeraldRelay
import HeraldRelayAPI
import Testing

@Suite("JSON written by hand", .timeLimit(.minutes(1)))
struct PushPayloadTests {
    @Test(
        "quoted strings decode back to the original",
        arguments: [
            "plain", "", "quote \" and \\ backslash", "tab\tnew\nline\r", "\u{0}\u{1f}", "Grüße 👋🏽",
            "line\u{2028}sep\u{2029}", "ends with é",
        ]
    )
    func quotedRoundTrip(text: String) throws {
        let json = "[" + JSONText.quoted(text) + "]"
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
        #expect(decoded == [text])
        #expect(!JSONText.quoted(text).contains("\u{2028}"))
    }

    @Test("a receipt's JSON decodes to the same receipt")
    func receiptJSON() throws {
        let receipt = IngestReceipt(
            id: "m\"1",
            pushes: [.init(pushID: "p1", deviceID: "d1"), .init(pushID: "p2", deviceID: "d\\2")],
            skipped: [.init(deviceID: "d3", reason: "token_dead: Unregistered")],
            duplicate: true
        )
        let decoded = try JSONDecoder().decode(IngestReceipt.self, from: Data(receipt.jsonText.utf8))
        #expect(decoded == receipt)
        let empty = IngestReceipt(id: "x", pushes: [], skipped: [])
        #expect(try JSONDecoder().decode(IngestReceipt.self, from: Data(empty.jsonText.utf8)) == empty)
    }
}
