public import HeraldCrypto
import HeraldDomain

extension AppGroupStore {
    /// Opens sealed push content with the key this store holds for the envelope's key id: what
    /// the Notification Service Extension, the PushKit handler and the Android messaging service
    /// all do. The failure says why, for diagnostics (never the content).
    ///
    /// - Parameters:
    ///   - subjectID: the message id or call id in clear beside the envelope, which it is bound to.
    public func open(sealed: String, kind: PushKind, subjectID: String) throws(DeviceError) -> PushContent {
        try openSealed(sealed) { deviceID in EnvelopeContext(kind: kind, pushID: subjectID, deviceID: deviceID) }
    }

    /// Opens `sealed` with the key this store holds for its key id, in the context `context`
    /// makes from this device's id: the steps every kind of push shares.
    func openSealed(
        _ sealed: String,
        context: (_ deviceID: String) -> EnvelopeContext
    ) throws(DeviceError) -> PushContent {
        guard let registration = registration() else {
            throw .payload("the app-group store has no registration")
        }
        let envelope: Envelope
        do {
            envelope = try Envelope(text: sealed)
        } catch {
            throw .unopened("the sealed content is not an envelope (\(error.identifier))", .malformed)
        }
        guard let keys = sessionKeys(for: envelope.keyID) else {
            throw .unopened("no key in the app-group store for key id \(envelope.keyID.hex)", .unknownKey)
        }
        do {
            return try EnvelopeOpener(sessionKeys: [keys])
                .openContent(envelope, context: context(registration.deviceID))
        } catch {
            throw .unopened("the sealed content did not open (\(error.identifier))", ReceiptFailure(error))
        }
    }
}
