import CSodium
public import HeraldDomain
import HeraldMacros

/// What a phone says happened to one push, authenticated with a key only the device and the
/// relay hold (docs/receipts.md).
///
/// The key is derived from the activation's session keys in the direction the envelope leaves
/// free (device → relay): `receipt_key = BLAKE2b-256(key = device_tx, "herald-receipt-key-v1")`,
/// where the relay holds the same bytes as its `relay_rx`. The tag is BLAKE2b-256 keyed with
/// `receipt_key` over `signedBytes`: the relay cannot be handed a receipt made with another
/// device's keys, for another push or another stage.
@MemberwiseInit
public struct DeliveryReceipt: Sendable, Hashable {
    /// The receipt format's version, the first byte of what is tagged.
    public static let version: UInt8 = 1
    /// A tag's length in bytes.
    public static let tagLength = 32

    /// The agreement whose keys made the tag (the device's current key id).
    public var keyID: KeyID
    /// The push the receipt is about (its push id, also its apns-id).
    public var pushID: String
    public var stage: ReceiptStage
    /// The device's clock when it happened, milliseconds since the epoch: the phone's word, shown
    /// beside the time the relay received it.
    public var deviceTime: Int64
    /// Why the phone could not show it; only for `failed`.
    public var failure: ReceiptFailure?

    /// The bytes the tag covers:
    /// `"herald-receipt-v1" ‖ version ‖ key_id ‖ u16be len ‖ push_id ‖ stage ‖ i64be device_time ‖
    /// u16be len ‖ failure` (an empty failure for every stage but `failed`).
    public func signedBytes() throws(HeraldCryptoError) -> [UInt8] {
        // A failure exactly when the stage is failed: nothing else may ride along under the tag.
        guard (stage == .failed) == (failure != nil) else { throw .malformedContent }
        var writer = ByteWriter(capacity: 64 + pushID.utf8.count)
        writer.append(Array(Self.domain.utf8))
        writer.append(Self.version)
        writer.append(keyID.bytes)
        try writer.appendString(pushID)
        writer.append(stage.code)
        writer.append(deviceTime)
        try writer.appendString(failure?.rawValue ?? "")
        return writer.bytes
    }

    /// The tag a device makes with its session keys (its `transmit` key, `device_tx`).
    public func tag(deviceKeys: SessionKeys) throws(HeraldCryptoError) -> [UInt8] {
        try Self.tag(try signedBytes(), key: Self.receiptKey(deviceKeys.transmit))
    }

    /// Whether `tag` was made for this receipt by the device whose session keys the relay holds
    /// (its `receive` key, `relay_rx`). A receipt for another key id never verifies. Compared in
    /// constant time.
    public func verify(tag: [UInt8], relayKeys: SessionKeys) -> Bool {
        guard tag.count == Self.tagLength, keyID == relayKeys.keyID,
            let expected = try? Self.tag(try signedBytes(), key: Self.receiptKey(relayKeys.receive))
        else { return false }
        return SecretDigest.matches(expected, tag)
    }

    /// `"herald-receipt-v1"`: the domain every tagged receipt starts with.
    static let domain = "herald-receipt-v1"

    /// `BLAKE2b-256(key = direction key, input = "herald-receipt-key-v1")`.
    static func receiptKey(_ directionKey: SecureBytes) -> [UInt8] {
        let label = Array("herald-receipt-key-v1".utf8)
        return directionKey.withUnsafeBytes { key in
            keyedHash(label, key: Array(key))
        }
    }

    static func tag(_ bytes: [UInt8], key: [UInt8]) -> [UInt8] { keyedHash(bytes, key: key) }

    private static func keyedHash(_ input: [UInt8], key: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var digest = [UInt8](repeating: 0, count: tagLength)
        _ = crypto_generichash(&digest, tagLength, input, UInt64(input.count), key, key.count)
        return digest
    }
}

extension ReceiptFailure {
    /// What a `failed` receipt says when an envelope did not open with `error`: a key id the
    /// device does not hold, an envelope or content it cannot read, or (anything else) one that
    /// did not authenticate.
    public init(_ error: HeraldCryptoError) {
        switch error {
        case .unknownKeyID: self = .unknownKey
        case .emptyInput, .tooShort, .badFormat, .unknownVersion, .malformedContent, .wrongKind: self = .malformed
        default: self = .tampered
        }
    }
}
