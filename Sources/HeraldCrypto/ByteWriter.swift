/// Appends the fixed-width big-endian integers and length-prefixed strings of Herald's encodings.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func append(_ byte: UInt8) { bytes.append(byte) }

    mutating func append(_ other: [UInt8]) { bytes.append(contentsOf: other) }

    mutating func append(_ value: Int64) {
        let raw = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: raw >> UInt64(shift)))
        }
    }

    /// A UTF-8 string behind its length as a big-endian UInt16.
    mutating func appendString(_ string: String) throws(HeraldCryptoError) {
        let count = string.utf8.count
        guard count <= Int(UInt16.max) else { throw .fieldTooLong }
        bytes.append(UInt8(truncatingIfNeeded: count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: count))
        bytes.append(contentsOf: string.utf8)
    }
}

/// Reads what `ByteWriter` writes; every read is bounds-checked.
struct ByteReader {
    private let bytes: [UInt8]
    private var index: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        index = 0
    }

    var isAtEnd: Bool { index == bytes.count }

    mutating func readByte() throws(HeraldCryptoError) -> UInt8 {
        guard index < bytes.count else { throw .malformedContent }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func readInt64() throws(HeraldCryptoError) -> Int64 {
        guard bytes.count - index >= 8 else { throw .malformedContent }
        var raw: UInt64 = 0
        for offset in 0..<8 { raw = (raw << 8) | UInt64(bytes[index + offset]) }
        index += 8
        return Int64(bitPattern: raw)
    }

    mutating func readString() throws(HeraldCryptoError) -> String {
        guard bytes.count - index >= 2 else { throw .malformedContent }
        let count = Int(bytes[index]) << 8 | Int(bytes[index + 1])
        index += 2
        guard bytes.count - index >= count else { throw .malformedContent }
        defer { index += count }
        // Strict: invalid UTF-8 is an error, not silently repaired. Validating a contiguous
        // buffer takes the standard library's fast path; an ArraySlice does not.
        let start = index
        let string = bytes.withUnsafeBufferPointer { buffer in
            String(validating: UnsafeBufferPointer(rebasing: buffer[start..<(start + count)]), as: UTF8.self)
        }
        guard let string else { throw .malformedContent }
        return string
    }
}
