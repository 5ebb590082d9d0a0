import CSodium

extension MasterKey {
    /// A sealing key derived from another secret: keyed BLAKE2b-256 (`crypto_generichash`) of
    /// `label`, keyed with `secret`. Whoever holds the secret derives the same key, and nobody
    /// else can; `label` keeps keys derived for different purposes apart.
    ///
    /// Used to seal what every holder of one credential must be able to open, and nobody else:
    /// the APNs provider token in a shared database is sealed with a key derived from the .p8.
    ///
    /// - Parameter secret: 16 to 64 bytes of key material (a P-256 private scalar is 32).
    public static func derived(fromSecret secret: [UInt8], label: String) throws(HeraldCryptoError) -> MasterKey {
        Sodium.ensureInitialized()
        guard (Int(crypto_generichash_KEYBYTES_MIN)...Int(crypto_generichash_KEYBYTES_MAX)).contains(secret.count)
        else {
            throw HeraldCryptoError.invalidKey.with(
                detail: "a key is derived from 16 to 64 bytes of secret, not \(secret.count)"
            )
        }
        let input = Array(label.utf8)
        let key = SecureBytes(count: length) { out in
            _ = crypto_generichash(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                length,
                input,
                UInt64(input.count),
                secret,
                secret.count
            )
        }
        return try MasterKey(key: key)
    }
}
