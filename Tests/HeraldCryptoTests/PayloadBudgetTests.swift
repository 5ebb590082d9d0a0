import HeraldCrypto
import PropertyBased
import Testing

@Suite(.timeLimit(.minutes(1))) struct PayloadBudgetTests {
    @Test func capacityFollowsTheDocumentedFormula() {
        #expect(PayloadBudget.apnsAlert.plaintextCapacity(surroundingBytes: 300) == 2798)
        #expect(PayloadBudget.apnsVoIP.plaintextCapacity(surroundingBytes: 300) == 3566)
        #expect(PayloadBudget.apns(.message) == .apnsAlert)
        #expect(PayloadBudget.apns(.call) == .apnsVoIP)
        #expect(PayloadBudget.apnsAlert.plaintextCapacity(surroundingBytes: 5000) < 0)
    }

    @Test func aMessageThatFitsIsUntouched() throws {
        let message = MessageContent.sample()
        #expect(try message.fitted(toPlaintextCapacity: message.encodedLength) == message)
    }

    @Test func cutsBetweenGraphemeClustersNotInsideThem() throws {
        let family = "👨‍👩‍👧"  // 18 UTF-8 bytes, one Character
        let message = MessageContent.sample(text: "ab" + family + "cd")
        let fixed = message.encodedLength - message.text.utf8.count
        // Room for "ab" and 17 bytes of the family: the family must go entirely.
        let cut = try message.fitted(toPlaintextCapacity: fixed + 2 + 17)
        #expect(cut.text == "ab")
        #expect(cut.truncated)
        let whole = try message.fitted(toPlaintextCapacity: fixed + 2 + 18)
        #expect(whole.text == "ab" + family)
    }

    @Test func fallsBackToScalarsWhenOneClusterIsTooLarge() throws {
        let zalgo = "a" + String(repeating: "\u{0301}", count: 40)  // one Character of 81 bytes
        let message = MessageContent.sample(text: zalgo)
        let fixed = message.encodedLength - message.text.utf8.count
        let cut = try message.fitted(toPlaintextCapacity: fixed + 10)
        #expect(cut.text.utf8.count <= 10)
        #expect(cut.text.unicodeScalars.first == "a")
        #expect(cut.truncated)
    }

    @Test func refusesWhenNotEvenAnEmptyTextFits() {
        let message = MessageContent.sample()
        let fixed = message.encodedLength - message.text.utf8.count
        #expect(throws: HeraldCryptoError.doesNotFit) { try message.fitted(toPlaintextCapacity: fixed - 1) }
    }

    static let pieces: [String] = [
        "a", "Hello ", "order #1234 ", "é", "ñ", "ß", "日本語", "你好", "한국어", "Ελληνικά", "עברית", "مرحبا",
        "👋🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "e\u{0301}", "🏳️‍🌈", "\u{200D}", "\n", "\"", "\\", "😀",
    ]

    /// The issue's property: whatever the text and the JSON around it, the sealed result fits the
    /// APNs limit, opens on the device, and keeps a prefix of whole characters of the original.
    @Test func fittedMessagesAlwaysFitAndOpen() async throws {
        let text = Gen<String?>.element(of: Self.pieces).map { $0! }.array(of: 0...1_800).map { $0.joined() }
        let padding = Gen.int(in: 0...2_000)
        let voip = Gen.int(in: 0...1)
        let pair = Pair()
        await propertyCheck(count: 150, input: text, padding, voip) { text, padding, voip in
            let kind: PushKind = voip == 1 ? .call : .message
            let budget = PayloadBudget.apns(kind)
            // The clear JSON around the envelope, as the relay builds it, with the envelope empty.
            let template = #"{"aps":{"alert":{"title":"New message","body":"PAD"},"mutable-content":1},"e":"ENV"}"#
                .replacingFirst("PAD", with: String(repeating: "x", count: padding))
            let surrounding = template.replacingFirst("ENV", with: "").utf8.count
            let capacity = budget.plaintextCapacity(surroundingBytes: surrounding)
            let message = MessageContent.sample(text: text)
            do {
                let fitted = try message.fitted(toPlaintextCapacity: capacity)
                #expect(fitted.encodedLength <= capacity)
                #expect(fitted.truncated == (fitted.text != text))
                #expect(text.starts(with: fitted.text))
                if fitted.truncated, let next = text.dropFirst(fitted.text.count).first {
                    // Maximal: the next whole character would not have fitted.
                    #expect(fitted.encodedLength + next.utf8.count > capacity)
                }
                let envelope = try pair.sealer.seal(.message(fitted), deviceID: "device-1")
                let body = template.replacingFirst("ENV", with: envelope.text)
                #expect(body.utf8.count <= budget.bodyLimit)
                let context = EnvelopeContext(kind: .message, pushID: fitted.messageID, deviceID: "device-1")
                #expect(
                    try pair.opener.openContent(Envelope(text: envelope.text), context: context) == .message(fitted)
                )
            } catch {
                #expect(error as? HeraldCryptoError == .doesNotFit)
                #expect(capacity < message.encodedLength - text.utf8.count)
            }
        }
    }

    /// Round trip of arbitrary contents, including every kind of text, for both kinds.
    @Test func randomContentsRoundTrip() async throws {
        let field = Gen<String?>.element(of: Self.pieces).map { $0! }.array(of: 0...20).map { $0.joined() }
        let time = Gen.int64(in: Int64.min...Int64.max)
        let pair = Pair()
        await propertyCheck(count: 200, input: field, field, time) { a, b, time in
            let contents: [PushContent] = [
                .message(
                    MessageContent(
                        messageID: a,
                        conversationID: b,
                        senderID: b,
                        senderName: a,
                        text: a + b,
                        sentAt: time,
                        truncated: time % 2 == 0
                    )
                ),
                .call(
                    CallContent(
                        callID: b,
                        callerID: a,
                        callerName: b,
                        media: time % 2 == 0 ? .audio : .video,
                        startedAt: time
                    )
                ),
            ]
            for content in contents {
                let envelope = try pair.sealer.seal(content, deviceID: a)
                let context = EnvelopeContext(kind: content.kind, pushID: content.pushID, deviceID: a)
                #expect(try pair.opener.openContent(Envelope(text: envelope.text), context: context) == content)
            }
        }
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
