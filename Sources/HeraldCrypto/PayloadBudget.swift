import HeraldMacros

/// How much sealed content fits in a push body.
///
/// APNs refuses bodies over 4096 bytes (5120 for VoIP); FCM data messages over 4096. The sealed
/// content travels as the envelope's base64url text inside that body, so the plaintext budget is
/// `floor(3 × (limit − surrounding) / 4) − 49`, where `surrounding` is the byte length of the JSON
/// body with the envelope field's value empty (`""`).
@MemberwiseInit
public struct PayloadBudget: Sendable, Hashable {
    /// APNs limit for every push type but VoIP.
    public static let apnsAlert = PayloadBudget(bodyLimit: 4096)
    /// APNs limit for VoIP pushes.
    public static let apnsVoIP = PayloadBudget(bodyLimit: 5120)
    /// FCM's limit on a data message, counted over its keys and values.
    public static let fcmData = PayloadBudget(bodyLimit: 4096)
    /// Huawei Push Kit's limit on a data message, counted over its text (Herald's: a JSON object).
    public static let hmsData = PayloadBudget(bodyLimit: 4096)
    /// The plaintext a Web Push service's 4,096-byte body holds once RFC 8291 encrypted it
    /// (86 bytes of header, a padding delimiter and a 16-byte tag around it).
    public static let webPushPlaintext = PayloadBudget(bodyLimit: 3993)

    /// The largest body the push network accepts, in bytes.
    public let bodyLimit: Int

    /// The APNs budget for a push kind: messages and callbacks are alerts, calls are VoIP.
    public static func apns(_ kind: PushKind) -> PayloadBudget {
        switch kind {
        case .message, .callback: .apnsAlert
        case .call: .apnsVoIP
        case .missedCall: .apnsAlert
        }
    }

    /// The longest envelope text that fits next to `surroundingBytes` of other JSON.
    public func envelopeTextCapacity(surroundingBytes: Int) -> Int {
        max(0, bodyLimit - surroundingBytes)
    }

    /// The longest plaintext whose envelope text fits next to `surroundingBytes` of other JSON;
    /// negative when not even an empty plaintext fits.
    public func plaintextCapacity(surroundingBytes: Int) -> Int {
        envelopeTextCapacity(surroundingBytes: surroundingBytes) * 3 / 4 - Envelope.overhead
    }
}

extension MessageContent {
    /// This message with its text cut so that its encoding is at most `plaintextCapacity` bytes.
    ///
    /// The text is cut at a grapheme-cluster boundary (never inside a multi-byte sequence, and
    /// never between an emoji and its modifiers), falling back to a Unicode scalar boundary only
    /// when a single cluster is larger than the room left. A cut sets `truncated`. Throws
    /// `doesNotFit` when even an empty text does not fit.
    public func fitted(toPlaintextCapacity plaintextCapacity: Int) throws(HeraldCryptoError) -> MessageContent {
        let length = encodedLength
        if length <= plaintextCapacity { return self }
        let room = plaintextCapacity - (length - text.utf8.count)
        guard room >= 0 else { throw .doesNotFit }

        var cut = text.startIndex
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > room { break }
            used += size
            cut = text.index(after: cut)
        }
        if cut == text.startIndex || used == 0 {
            // The first cluster alone is too large (say, a long run of combining marks): keep as
            // many whole scalars as fit, which is still valid UTF-8.
            var scalars = String.UnicodeScalarView()
            var scalarBytes = 0
            for scalar in text.unicodeScalars {
                let size = UTF8.width(scalar)
                if scalarBytes + size > room { break }
                scalarBytes += size
                scalars.append(scalar)
            }
            var result = self
            result.text = String(scalars)
            result.truncated = true
            return result
        }
        var result = self
        result.text = String(text[..<cut])
        result.truncated = true
        return result
    }
}
