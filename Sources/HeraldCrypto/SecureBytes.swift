import CSodium

/// A fixed-size buffer of secret bytes (a key) that is zeroed when released.
///
/// The bytes never appear in `description`, `debugDescription` or a `Mirror`, so printing or
/// logging a key by mistake shows only its length. Equality is constant time.
public final class SecureBytes: @unchecked Sendable {
    // Written only during initialisation, read-only afterwards, hence `@unchecked Sendable`.
    private let storage: UnsafeMutableRawBufferPointer

    /// The number of bytes.
    public let count: Int

    /// Creates a buffer of `count` bytes, filled by `initializer`.
    init(count: Int, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        Sodium.ensureInitialized()
        self.count = count
        // At least one byte so that `baseAddress` is never nil, even for an empty secret.
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try initializer(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
        } catch {
            sodium_memzero(storage.baseAddress!, storage.count)
            storage.deallocate()
            throw error
        }
    }

    /// Copies `bytes` into a new secret buffer. The caller remains responsible for its own copy.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    /// A buffer of `count` bytes from libsodium's CSPRNG.
    public static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { buffer in
            randombytes_buf(buffer.baseAddress!, buffer.count)
        }
    }

    deinit {
        sodium_memzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }

    /// Calls `body` with the secret bytes. Do not let the pointer escape.
    public func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// The bytes as an array: for serialising a key into sealed storage or a test vector only.
    public func copyBytes() -> [UInt8] {
        Array(storage[0..<count])
    }
}

extension SecureBytes: Equatable {
    /// Constant-time comparison (`sodium_memcmp`); buffers of different lengths are unequal.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { l in
            rhs.withUnsafeBytes { r in
                l.count == 0 || sodium_memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0
            }
        }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
