import CSodium

/// libsodium must be initialised once per process before use; `sodium_init` is idempotent and
/// thread-safe, and a Swift global is initialised exactly once, so every entry point that touches
/// libsodium goes through `Sodium.ensureInitialized()`.
enum Sodium {
    private static let status: Int32 = sodium_init()

    @inline(__always)
    static func ensureInitialized() {
        // sodium_init returns 0 on first success, 1 when already initialised, -1 on failure. A
        // failure means no secure randomness: continuing would be worse than stopping.
        precondition(status >= 0, "libsodium could not be initialised (no secure random source)")
    }

    /// Fills `count` bytes from libsodium's CSPRNG.
    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialized()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            randombytes_buf(buffer.baseAddress!, count)
            initialized = count
        }
    }
}
