import CSodium

/// Digests of high-entropy secrets (API keys), for storing what lets a secret be recognised
/// without keeping the secret: BLAKE2b-256 (`crypto_generichash`) of a domain label and the secret.
///
/// A fast hash is right here, unlike for passwords: the secrets are 256-bit random values, so no
/// guessing is cheaper than the key space, and the relay computes one per request.
public enum SecretDigest {
    /// The digest's length in bytes.
    public static let length = 32

    /// BLAKE2b-256 of `domain` ‖ `secret`; `domain` keeps digests made for different purposes apart.
    public static func digest(_ secret: some Collection<UInt8>, domain: String) -> [UInt8] {
        Sodium.ensureInitialized()
        let input = Array(domain.utf8) + Array(secret)
        var digest = [UInt8](repeating: 0, count: length)
        _ = crypto_generichash(&digest, length, input, UInt64(input.count), nil, 0)
        return digest
    }

    /// Whether two digests are equal, in a time that does not depend on where they differ
    /// (`sodium_memcmp`).
    public static func matches(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return sodium_memcmp(lhs, rhs, lhs.count) == 0
    }
}
