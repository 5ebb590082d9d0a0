import CSodium

/// The key that seals secrets at rest (the relay's per-device key pairs and session keys).
///
/// 32 random bytes, from a 0600 file under `keys/` (made by the setup or `herald keys master`)
/// or from the `HERALD_MASTER_KEY` environment variable (base64).
public struct MasterKey: Sendable {
    /// The key length in bytes.
    public static let length = 32
    /// The environment variable that may hold the key, in base64.
    public static let environmentVariable = "HERALD_MASTER_KEY"

    static let sealedVersion: UInt8 = 1
    static let domain: [UInt8] = Array("herald-at-rest-v1".utf8)

    let key: SecureBytes

    /// A new random master key.
    public static func generate() -> MasterKey {
        MasterKey(checked: .random(count: length))
    }

    /// Wraps 32 key bytes.
    public init(key: SecureBytes) throws(HeraldCryptoError) {
        guard key.count == Self.length else { throw .keyFileInvalid }
        self.key = key
    }

    /// Parses the base64 form (the environment variable's).
    public init(base64 text: String) throws(HeraldCryptoError) {
        let trimmed = text.trimmingASCIIWhitespace()
        guard var bytes = ByteEncoding.bytes(base64: trimmed) ?? ByteEncoding.bytes(base64URL: trimmed) else {
            throw HeraldCryptoError.keyFileInvalid.with(detail: "the master key is not base64")
        }
        defer { sodium_memzero(&bytes, bytes.count) }
        guard bytes.count == Self.length else {
            throw HeraldCryptoError.keyFileInvalid.with(
                detail: "the master key holds \(bytes.count) bytes; it must hold \(Self.length)"
            )
        }
        self.init(checked: SecureBytes(copying: bytes))
    }

    private init(checked key: SecureBytes) {
        self.key = key
    }

    /// The key as base64, for putting it into the environment. Handle the result as a secret.
    public func base64Representation() -> String {
        var bytes = key.copyBytes()
        defer { sodium_memzero(&bytes, bytes.count) }
        return ByteEncoding.base64(bytes)
    }

    /// Seals `secret` so that it opens only with this key and the same `context` (for example
    /// `"device:<id>:session"`), which stops a stored blob being moved to another row.
    ///
    /// Layout: `0x01 ‖ nonce(24) ‖ XChaCha20-Poly1305(secret, ad: "herald-at-rest-v1" ‖ context)`.
    public func seal(_ secret: SecureBytes, context: String) -> [UInt8] {
        let nonce = Sodium.randomBytes(Envelope.nonceLength)
        let ad = Self.domain + Array(context.utf8)
        var out = [UInt8](repeating: 0, count: 1 + nonce.count + secret.count + Envelope.tagLength)
        out[0] = Self.sealedVersion
        out.replaceSubrange(1..<(1 + nonce.count), with: nonce)
        out.withUnsafeMutableBufferPointer { out in
            secret.withUnsafeBytes { plain in
                key.withUnsafeBytes { key in
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                        out.baseAddress! + 1 + Envelope.nonceLength,
                        nil,
                        plain.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        UInt64(plain.count),
                        ad,
                        UInt64(ad.count),
                        nil,
                        nonce,
                        key.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        return out
    }

    /// Opens what `seal(_:context:)` made; throws `authenticationFailed` for another key or context.
    public func open(_ sealed: [UInt8], context: String) throws(HeraldCryptoError) -> SecureBytes {
        let headerLength = 1 + Envelope.nonceLength
        guard !sealed.isEmpty else { throw .emptyInput }
        guard sealed[0] == Self.sealedVersion else { throw .unknownVersion }
        guard sealed.count >= headerLength + Envelope.tagLength else { throw .tooShort }
        let ad = Self.domain + Array(context.utf8)
        let nonce = Array(sealed[1..<headerLength])
        let ciphertext = Array(sealed[headerLength...])
        var status: Int32 = -1
        let secret = SecureBytes(count: ciphertext.count - Envelope.tagLength) { out in
            key.withUnsafeBytes { key in
                status = crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    nil,
                    nil,
                    ciphertext,
                    UInt64(ciphertext.count),
                    ad,
                    UInt64(ad.count),
                    nonce,
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self)
                )
            }
        }
        guard status == 0 else { throw .authenticationFailed }
        return secret
    }
}

extension MasterKey: CustomStringConvertible {
    public var description: String { "MasterKey(redacted)" }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
