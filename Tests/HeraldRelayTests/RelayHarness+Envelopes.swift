import HeraldCrypto
import Testing

extension RelayHarness.Phone {
    /// The message a messaging push carried to this phone, opened as its extension would: `herald`
    /// is the push's `herald` object, `pushID` what the envelope is bound to (the message id).
    func openMessage(_ herald: [String: Any], pushID: String) throws -> MessageContent {
        let envelope = try Envelope(text: try #require(herald["sealed"] as? String))
        let content = try EnvelopeOpener(sessionKeys: [try sessionKeys()])
            .openContent(envelope, context: .init(kind: .message, pushID: pushID, deviceID: deviceID))
        guard case .message(let message) = content else {
            Issue.record("the envelope did not hold a message")
            throw HarnessError.timeout("message content")
        }
        return message
    }
}
