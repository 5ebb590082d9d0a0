/// UUIDs in version 7 layout: 48 bits of Unix milliseconds, then random bits.
///
/// Push and message ids are primary keys; random (version 4) ids land on a random B-tree page
/// each, so every insert dirties a different page. Time-ordered ids append to the right edge of
/// the index instead. They are still canonical UUIDs, as APNs wants for `apns-id`.
enum TimeOrderedID {
    static func make(milliseconds: Int64) -> String {
        var generator = SystemRandomNumberGenerator()
        let time = UInt64(max(0, milliseconds)) & 0xFFFF_FFFF_FFFF
        let high = (time << 16) | 0x7000 | ((generator.next() as UInt64) & 0x0FFF)
        let low = ((generator.next() as UInt64) & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return format(high: high, low: low)
    }

    private static let digits = Array("0123456789abcdef".utf8)

    private static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[index] = digits[Int((value >> UInt64(shift)) & 0xF)]
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put((high >> 16) & 0xFFFF, nibbles: 4)
            dash()
            put(high & 0xFFFF, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low & 0xFFFF_FFFF_FFFF, nibbles: 12)
            return index
        }
    }
}
