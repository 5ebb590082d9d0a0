import Synchronization

extension APNsUUID {
    /// A random (version 4) UUID in lowercase canonical form, without Foundation's formatting.
    ///
    /// apns-ids must be unique, not unpredictable: they come from a fast generator seeded once
    /// from the system's CSPRNG, instead of two `getrandom` system calls per push.
    public static func random() -> String {
        shared.withLock { random(using: &$0) }
    }

    private static let shared: Mutex<SplitMix64> = {
        var system = SystemRandomNumberGenerator()
        return Mutex(SplitMix64(seed: system.next()))
    }()

    /// A version 4 UUID from `generator`, in lowercase canonical form.
    public static func random(using generator: inout some RandomNumberGenerator) -> String {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(index)))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(index)))
        }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                out[o] = digits.utf8Start[Int(byte >> 4)]
                out[o + 1] = digits.utf8Start[Int(byte & 0x0F)]
                o += 2
            }
            return 36
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood): a small, fast generator for identifiers that must be
/// unique but need not be unpredictable.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
