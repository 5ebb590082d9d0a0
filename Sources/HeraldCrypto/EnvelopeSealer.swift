import CSodium

/// Seals push contents for one device with the relay's transmit key
/// (`crypto_aead_xchacha20poly1305_ietf`, random nonce).
public struct EnvelopeSealer: Sendable {
    /// The key id written into every envelope.
    public let keyID: KeyID
    private let key: SecureBytes

    /// A sealer that uses `sessionKeys.transmit`: the relay's side of the agreement.
    public init(sessionKeys: SessionKeys) {
        keyID = sessionKeys.keyID
        key = sessionKeys.transmit
    }

    /// Encodes and seals `content` for `deviceID`; the kind and id come from the content.
    public func seal(_ content: PushContent, deviceID: String) throws(HeraldCryptoError) -> Envelope {
        let context = EnvelopeContext(
            kind: content.kind,
            pushID: content.pushID,
            deviceID: deviceID,
            sequence: content.sequence
        )
        return try seal(plaintext: content.encoded(), context: context)
    }

    /// Seals raw plaintext under `context` with a fresh random nonce.
    public func seal(plaintext: [UInt8], context: EnvelopeContext) throws(HeraldCryptoError) -> Envelope {
        try seal(plaintext: plaintext, context: context, nonce: Sodium.randomBytes(Envelope.nonceLength))
    }

    /// Seals with a given nonce. Reusing a nonce with the same key breaks confidentiality, so this
    /// is internal: only test vectors choose their nonce.
    func seal(plaintext: [UInt8], context: EnvelopeContext, nonce: [UInt8]) throws(HeraldCryptoError) -> Envelope {
        precondition(nonce.count == Envelope.nonceLength)
        let ad = try context.additionalData(keyID: keyID)
        // Header and ciphertext in one buffer, so the binary form is never copied again.
        let length = Envelope.headerLength + plaintext.count + Envelope.tagLength
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            out[0] = Envelope.version
            keyID.write(to: UnsafeMutableBufferPointer(rebasing: out[1..<(1 + KeyID.length)]))
            _ = UnsafeMutableBufferPointer(rebasing: out[(1 + KeyID.length)..<Envelope.headerLength])
                .initialize(from: nonce)
            var written: UInt64 = 0
            key.withUnsafeBytes { key in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out.baseAddress! + Envelope.headerLength,
                    &written,
                    plaintext,
                    UInt64(plaintext.count),
                    ad,
                    UInt64(ad.count),
                    nil,
                    nonce,
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self)
                )
            }
            initialized = Envelope.headerLength + Int(written)
        }
        return Envelope(keyID: keyID, checkedBytes: bytes)
    }
}

/// Opens envelopes on the device with its receive keys, found by key id.
///
/// A device keeps the current agreement and the previous one, so pushes sealed before a
/// re-activation still open.
public struct EnvelopeOpener: Sendable {
    private let keys: [KeyID: SecureBytes]

    /// An opener that knows the receive keys of `sessionKeys` (the device's side).
    public init(sessionKeys: [SessionKeys]) {
        var keys: [KeyID: SecureBytes] = [:]
        for session in sessionKeys { keys[session.keyID] = session.receive }
        self.keys = keys
    }

    /// The key ids this opener can open.
    public var keyIDs: Set<KeyID> { Set(keys.keys) }

    /// Authenticates and decrypts `envelope` under `context`, returning the plaintext.
    public func open(_ envelope: Envelope, context: EnvelopeContext) throws(HeraldCryptoError) -> [UInt8] {
        guard let key = keys[envelope.keyID] else {
            throw HeraldCryptoError.unknownKeyID.with(detail: "no key is known for key id \(envelope.keyID)")
        }
        guard envelope.bytes.count >= Envelope.overhead else { throw .tooShort }
        let ad = try context.additionalData(keyID: envelope.keyID)
        var status: Int32 = -1
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(1, envelope.plaintextLength)) { out, initialized in
            var written: UInt64 = 0
            envelope.bytes.withUnsafeBufferPointer { bytes in
                key.withUnsafeBytes { key in
                    status = crypto_aead_xchacha20poly1305_ietf_decrypt(
                        out.baseAddress!,
                        &written,
                        nil,
                        bytes.baseAddress! + Envelope.headerLength,
                        UInt64(bytes.count - Envelope.headerLength),
                        ad,
                        UInt64(ad.count),
                        bytes.baseAddress! + 1 + KeyID.length,
                        key.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
            initialized = status == 0 ? Int(written) : 0
        }
        guard status == 0 else { throw .authenticationFailed }
        return plaintext
    }

    /// Opens and decodes; the decoded content must be of `context.kind` and name `context.pushID`.
    public func openContent(_ envelope: Envelope, context: EnvelopeContext) throws(HeraldCryptoError) -> PushContent {
        let content = try PushContent(decoding: open(envelope, context: context))
        // The additional data already binds kind and id; these checks catch a sealer that wrote a
        // content different from the context it sealed under.
        guard content.kind == context.kind else { throw .wrongKind }
        guard content.pushID == context.pushID, content.sequence == context.sequence else {
            throw .contentMismatch
        }
        return content
    }
}
