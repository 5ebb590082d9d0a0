import HeraldMacros

/// A sealed push content, envelope format v1.
///
/// Binary layout (docs/envelope.md):
///
/// | offset | length | field |
/// |---|---|---|
/// | 0 | 1 | version, `0x01` |
/// | 1 | 8 | key id |
/// | 9 | 24 | nonce |
/// | 33 | n + 16 | ciphertext and Poly1305 tag |
///
/// The text form, used inside JSON payloads, is the binary form in base64url without padding.
public struct Envelope: Sendable, Hashable {
    /// The format version this build writes and reads.
    public static let version: UInt8 = 1
    /// XChaCha20-Poly1305 nonce length.
    public static let nonceLength = 24
    /// Poly1305 tag length.
    public static let tagLength = 16
    /// Version, key id and nonce.
    public static let headerLength = 1 + KeyID.length + nonceLength
    /// Bytes an envelope adds to its plaintext (header and tag): 49.
    public static let overhead = headerLength + tagLength

    /// The key id of the agreement whose key sealed this envelope.
    public let keyID: KeyID
    /// The binary form: version, key id, nonce, ciphertext and tag.
    public let bytes: [UInt8]

    /// Wraps a binary form whose shape is already known to be right.
    init(keyID: KeyID, checkedBytes: [UInt8]) {
        self.keyID = keyID
        self.bytes = checkedBytes
    }

    /// Parses the binary form. Checks the shape only; authenticity is checked when opening.
    public init(bytes: some Collection<UInt8>) throws(HeraldCryptoError) {
        try self.init(validating: Array(bytes))
    }

    private init(validating bytes: [UInt8]) throws(HeraldCryptoError) {
        guard !bytes.isEmpty else { throw .emptyInput }
        guard bytes[0] == Self.version else {
            throw HeraldCryptoError.unknownVersion.with(
                detail: "the envelope has format version \(bytes[0]); this build reads version \(Self.version)"
            )
        }
        guard bytes.count >= Self.overhead else { throw .tooShort }
        keyID = KeyID(bytes: bytes[1..<(1 + KeyID.length)])!
        self.bytes = bytes
    }

    /// Parses the text form (base64url without padding).
    public init(text: String) throws(HeraldCryptoError) {
        guard !text.isEmpty else { throw .emptyInput }
        guard let bytes = ByteEncoding.bytes(base64URL: text) else { throw .badFormat }
        try self.init(validating: bytes)
    }

    /// The random 24-byte nonce.
    public var nonce: [UInt8] { Array(bytes[(1 + KeyID.length)..<Self.headerLength]) }

    /// The ciphertext followed by the 16-byte tag.
    public var ciphertext: [UInt8] { Array(bytes[Self.headerLength...]) }

    /// The text form: base64url of `bytes`, no padding.
    public var text: String { ByteEncoding.base64URL(bytes) }

    /// The length of the plaintext inside.
    public var plaintextLength: Int { bytes.count - Self.overhead }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.bytes == rhs.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}

/// What an envelope is bound to, besides its key: the additional data of the AEAD.
///
/// Opening with any field different from the one used to seal fails with `authenticationFailed`.
@MemberwiseInit
public struct EnvelopeContext: Sendable, Hashable {
    /// Message or call.
    public var kind: PushKind
    /// The message id (for a message) or the call id (for a call).
    public var pushID: String
    /// The relay's id of the device the envelope was sealed for.
    public var deviceID: String
    /// For a callback: which push of it (1, 2 …), bound after the device id. Not part of the
    /// other kinds' additional data.
    public var sequence: UInt16 = 0

    static let magic: [UInt8] = Array("HRLD".utf8)

    /// `"HRLD" ‖ version ‖ keyID(8) ‖ kind(1) ‖ u16be len ‖ pushID ‖ u16be len ‖ deviceID`, and for
    /// a callback `‖ u16be sequence`.
    func additionalData(keyID: KeyID) throws(HeraldCryptoError) -> [UInt8] {
        var writer = ByteWriter(capacity: 18 + pushID.utf8.count + deviceID.utf8.count)
        writer.append(Self.magic)
        writer.append(Envelope.version)
        writer.append(keyID.bytes)
        writer.append(kind.rawValue)
        try writer.appendString(pushID)
        try writer.appendString(deviceID)
        if kind == .callback {
            writer.append(UInt8(truncatingIfNeeded: sequence >> 8))
            writer.append(UInt8(truncatingIfNeeded: sequence))
        }
        return writer.bytes
    }
}
