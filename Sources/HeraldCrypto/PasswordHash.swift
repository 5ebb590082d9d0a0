import CSodium

/// Operators' passwords as stored: libsodium's Argon2id (`crypto_pwhash_str_alg` with
/// `crypto_pwhash_ALG_ARGON2ID13`), in its encoded form `$argon2id$v=19$m=…,t=…,p=1$salt$hash`,
/// which carries its own salt and costs, so a hash made with other costs still verifies.
///
/// Unlike `SecretDigest` (for random 256-bit secrets), a password is guessable: the hash is slow
/// and memory-hard on purpose, and each call takes that time and memory (64 MiB, about a tenth of
/// a second, at `interactive`). Callers run it off latency-sensitive threads and limit how often
/// anyone can make them run it.
public enum PasswordHash {
    /// How costly a hash is to make, and so to guess against.
    public enum Strength: Sendable {
        /// libsodium's interactive limits (2 passes, 64 MiB): for a sign-in.
        case interactive
        /// libsodium's moderate limits (3 passes, 256 MiB): slower, for accounts worth more.
        case moderate
        /// The smallest limits Argon2id accepts (1 pass, 8 KiB): for tests only, where many
        /// hashes are made. Never for a stored password: it is cheap to guess against.
        case minimum

        /// The passes and the bytes of memory.
        var limits: (operations: UInt64, memory: Int) {
            switch self {
            case .interactive:
                (UInt64(crypto_pwhash_argon2id_opslimit_interactive()), crypto_pwhash_argon2id_memlimit_interactive())
            case .moderate:
                (UInt64(crypto_pwhash_argon2id_opslimit_moderate()), crypto_pwhash_argon2id_memlimit_moderate())
            case .minimum:
                (UInt64(crypto_pwhash_argon2id_opslimit_min()), crypto_pwhash_argon2id_memlimit_min())
            }
        }
    }

    /// What every Argon2id encoded hash starts with.
    public static let prefix = "$argon2id$"

    /// The encoded hash of `password` (its UTF-8 bytes), with a new random salt: two hashes of
    /// one password differ. Throws `passwordHashFailed` when libsodium cannot (out of memory).
    public static func hash(_ password: String, strength: Strength = .interactive) throws(HeraldCryptoError) -> String {
        Sodium.ensureInitialized()
        let (operations, memory) = strength.limits
        let bytes = passwordBytes(password)
        var encoded = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { passwordChars in
                crypto_pwhash_str_alg(
                    &encoded,
                    passwordChars.baseAddress!,
                    UInt64(passwordChars.count - 1),
                    operations,
                    memory,
                    crypto_pwhash_alg_argon2id13()
                )
            }
        }
        guard status == 0 else { throw .passwordHashFailed }
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` is the one `encoded` was made from (`crypto_pwhash_str_verify`).
    /// `false` for anything that is not an Argon2id encoded hash (empty, Argon2i, truncated,
    /// damaged, longer than any encoded hash): never a crash.
    public static func verify(_ password: String, against encoded: String) -> Bool {
        guard isArgon2id(encoded) else { return false }
        // An encoded hash is shorter than `crypto_pwhash_STRBYTES` with its terminating zero;
        // libsodium reads up to that zero, so none may come earlier.
        let stored = Array(encoded.utf8)
        guard stored.count < crypto_pwhash_strbytes(), !stored.contains(0) else { return false }
        Sodium.ensureInitialized()
        let text = stored.map { CChar(bitPattern: $0) } + [0]
        let bytes = passwordBytes(password)
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { passwordChars in
                crypto_pwhash_str_verify(text, passwordChars.baseAddress!, UInt64(passwordChars.count - 1)) == 0
            }
        }
    }

    /// The password's UTF-8 bytes and a zero after them, so that even an empty password has
    /// a buffer to point at (the zero is not counted in the length).
    private static func passwordBytes(_ password: String) -> [UInt8] {
        Array(password.utf8) + [0]
    }

    /// A new random password: 144 bits from libsodium's generator, as 24 base64url characters
    /// (what `herald operators add` prints, and sandbox mode's first operator gets).
    public static func generatedPassword() -> String {
        ByteEncoding.base64URL(SecureBytes.random(count: 18).copyBytes())
    }

    /// Whether `encoded` has the form of an Argon2id hash (starts with `$argon2id$`): for
    /// checking a configured hash before it is needed. Says nothing of whether it verifies.
    public static func isArgon2id(_ encoded: String) -> Bool {
        encoded.hasPrefix(prefix)
    }
}
