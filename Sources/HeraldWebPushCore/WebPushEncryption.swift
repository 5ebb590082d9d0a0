public import Crypto
public import HeraldPush

/// RFC 8291 message encryption for Web Push: the `aes128gcm` content coding of RFC 8188 with a
/// key derived from an ECDH agreement between a fresh sender key and the subscription's
/// `p256dh`, mixed with its `auth` secret.
///
/// The sender writes one record: a push service takes at most 4,096 bytes of body, which fits
/// one record of the default size, so there is never a second.
public enum WebPushEncryption {
    /// The header before the record: salt (16), record size (4), key id length (1) and the
    /// sender's uncompressed P-256 public key (65).
    public static let headerLength = 86
    /// The AES-GCM tag each record ends with.
    public static let tagLength = 16
    /// The padding delimiter of the last (here: only) record.
    static let lastRecordDelimiter: UInt8 = 0x02
    /// The largest body a push service takes (RFC 8030 §7.2: at least 4,096 bytes must be taken).
    public static let maxBody = 4096

    /// The `aes128gcm` body of `plaintext` for the subscription `keys`: header
    /// (salt ‖ rs ‖ idlen ‖ keyid) and one record ending in the delimiter 0x02.
    ///
    /// `salt` (16 bytes) and `senderKey` are random when nil; pass them only to reproduce a known
    /// body (RFC 8291 Appendix A). Throws (`payload`) when the plaintext does not fit one record
    /// of `recordSize` or a 4,096-byte body, or the salt is not 16 bytes.
    public static func encrypt(
        _ plaintext: [UInt8],
        for keys: WebPushKeys,
        recordSize: UInt32 = 4096,
        salt: [UInt8]? = nil,
        senderKey: P256.KeyAgreement.PrivateKey? = nil
    ) throws(WebPushError) -> [UInt8] {
        guard plaintext.count <= WebPushPayload.maxPlaintext else {
            throw .encryption(
                "\(plaintext.count) bytes of plaintext do not fit a 4096-byte Web Push body "
                    + "(at most \(WebPushPayload.maxPlaintext))"
            )
        }
        guard recordSize >= UInt32(tagLength + 2), Int(recordSize) >= plaintext.count + 1 + tagLength else {
            throw .encryption("record size \(recordSize) is too small for \(plaintext.count) bytes of plaintext")
        }
        return try seal(
            record: plaintext + [lastRecordDelimiter],
            for: keys,
            recordSize: recordSize,
            salt: salt ?? randomBytes(16),
            senderKey: senderKey ?? P256.KeyAgreement.PrivateKey()
        )
    }

    /// The body of one record already padded (`record` ends with its delimiter and padding).
    static func seal(
        record: [UInt8],
        for keys: WebPushKeys,
        recordSize: UInt32,
        salt: [UInt8],
        senderKey: P256.KeyAgreement.PrivateKey
    ) throws(WebPushError) -> [UInt8] {
        guard salt.count == 16 else { throw .encryption("the salt must be 16 bytes") }
        let userAgentKey: P256.KeyAgreement.PublicKey
        do {
            userAgentKey = try P256.KeyAgreement.PublicKey(x963Representation: keys.p256dh)
        } catch {
            throw .invalid("subscription.keys.p256dh", "not a point on P-256")
        }
        let senderPublic = Array(senderKey.publicKey.x963Representation)
        let secret: SharedSecret
        do {
            secret = try senderKey.sharedSecretFromKeyAgreement(with: userAgentKey)
        } catch {
            throw .encryption("the key agreement failed")
        }
        let (key, nonce) = contentKey(
            secret: secret,
            auth: keys.auth,
            userAgentPublic: keys.p256dh,
            senderPublic: senderPublic,
            salt: salt
        )
        let sealed: AES.GCM.SealedBox
        do {
            sealed = try AES.GCM.seal(record, using: key, nonce: nonce)
        } catch {
            throw .encryption("AES-GCM failed")
        }
        var body = salt
        body.reserveCapacity(headerLength + record.count + tagLength)
        body += [UInt8(recordSize >> 24 & 0xFF), UInt8(recordSize >> 16 & 0xFF)]
        body += [UInt8(recordSize >> 8 & 0xFF), UInt8(recordSize & 0xFF)]
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }

    /// The plaintext of an `aes128gcm` body, as the browser recovers it with its subscription's
    /// private key and `auth` secret. Refuses (`body`) a malformed header (short, a key id that
    /// is not a 65-byte P-256 point), a record size below 18 or a record longer than it (more
    /// than one record), a tag that does not verify, and a record without its 0x02 delimiter.
    public static func decrypt(
        _ body: [UInt8],
        privateKey: P256.KeyAgreement.PrivateKey,
        auth: [UInt8]
    ) throws(WebPushError) -> [UInt8] {
        guard body.count >= headerLength else { throw .decryption("shorter than the 86-byte header") }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard body[20] == 65 else { throw .decryption("the key id is \(body[20]) bytes, not a 65-byte P-256 key") }
        let senderPublic = Array(body[21..<86])
        guard recordSize >= UInt32(tagLength + 2) else { throw .decryption("record size \(recordSize) is below 18") }
        let record = body[headerLength...]
        guard record.count > tagLength else { throw .decryption("the record is shorter than its tag") }
        guard record.count <= Int(recordSize) else {
            throw .decryption("the record is longer than the record size \(recordSize)")
        }
        let senderKey: P256.KeyAgreement.PublicKey
        let secret: SharedSecret
        do {
            senderKey = try P256.KeyAgreement.PublicKey(x963Representation: senderPublic)
            secret = try privateKey.sharedSecretFromKeyAgreement(with: senderKey)
        } catch {
            throw .decryption("the key id is not a point on P-256")
        }
        let (key, nonce) = contentKey(
            secret: secret,
            auth: auth,
            userAgentPublic: Array(privateKey.publicKey.x963Representation),
            senderPublic: senderPublic,
            salt: salt
        )
        let padded: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(
                nonce: nonce,
                ciphertext: record.dropLast(tagLength),
                tag: record.suffix(tagLength)
            )
            padded = Array(try AES.GCM.open(box, using: key))
        } catch {
            throw .decryption("the tag does not verify")
        }
        // RFC 8188 §2: the plaintext, the delimiter, then zeros.
        guard let end = padded.lastIndex(where: { $0 != 0 }), padded[end] == lastRecordDelimiter else {
            throw .decryption("the record has no last-record delimiter (0x02)")
        }
        return Array(padded[..<end])
    }

    /// RFC 8291 §3.4: IKM from the ECDH secret and `auth`, then RFC 8188 §2.2–2.3's content
    /// encryption key and nonce from IKM and the salt.
    private static func contentKey(
        secret: SharedSecret,
        auth: [UInt8],
        userAgentPublic: [UInt8],
        senderPublic: [UInt8],
        salt: [UInt8]
    ) -> (SymmetricKey, AES.GCM.Nonce) {
        let keyInfo = Array("WebPush: info".utf8) + [0] + userAgentPublic + senderPublic
        let ikm = secret.hkdfDerivedSymmetricKey(
            using: SHA256.self,
            salt: auth,
            sharedInfo: keyInfo,
            outputByteCount: 32
        )
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: aes128gcm".utf8) + [0],
            outputByteCount: 16
        )
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: nonce".utf8) + [0],
            outputByteCount: 12
        )
        // 12 bytes are always a valid nonce.
        return (key, try! AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }))
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
