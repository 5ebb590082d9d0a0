import CSodium

/// Hex and base64url (RFC 4648 §5, no padding) through libsodium's constant-time codecs.
public enum ByteEncoding {
    /// Lowercase hex of `bytes`.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        let length = input.count * 2 + 1
        var output = [CChar](repeating: 0, count: length)
        _ = sodium_bin2hex(&output, length, input, input.count)
        return String(decoding: output.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Bytes from hex (either case); nil if `text` is not hex or has odd length.
    public static func bytes(hex text: String) -> [UInt8]? {
        decode(text, maxLength: text.utf8.count / 2) { out, capacity, inp, inputLength, written, end in
            sodium_hex2bin(out, capacity, inp, inputLength, nil, written, end)
        }
    }

    /// base64url without padding, the envelope's text form.
    ///
    /// Table-driven rather than libsodium's constant-time codec: envelope bytes are public (the
    /// push network sees them), and this is on the push path, where the constant-time codec cost
    /// more than the cipher.
    public static func base64URL(_ bytes: some Collection<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ Base64URL.encode(UnsafeRawBufferPointer($0)) }) {
            return text
        }
        return Array(bytes).withUnsafeBytes { Base64URL.encode($0) }
    }

    /// Bytes from base64url without padding; nil on any other character, on padding, on a length
    /// that leaves one character over, or when the last character has unused bits set.
    public static func bytes(base64URL text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { Base64URL.decode(UnsafeRawBufferPointer($0)) }
    }

    /// Bytes from standard base64 with padding; nil otherwise.
    public static func bytes(base64 text: String) -> [UInt8]? {
        decode(text, maxLength: text.utf8.count * 3 / 4 + 1) { out, capacity, inp, inputLength, written, end in
            sodium_base642bin(out, capacity, inp, inputLength, nil, written, end, sodium_base64_VARIANT_ORIGINAL)
        }
    }

    /// Standard base64 with padding.
    public static func base64(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        let variant = sodium_base64_VARIANT_ORIGINAL
        let length = sodium_base64_encoded_len(input.count, variant)
        var output = [CChar](repeating: 0, count: length)
        _ = sodium_bin2base64(&output, length, input, input.count, variant)
        return String(decoding: output.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Length of the base64url (no padding) text for `byteCount` bytes.
    public static func base64URLLength(forByteCount byteCount: Int) -> Int {
        (byteCount * 4 + 2) / 3
    }

    private typealias Decoder = (
        UnsafeMutablePointer<UInt8>, Int, UnsafePointer<CChar>, Int,
        UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafePointer<CChar>?>
    ) -> Int32

    private static func decode(_ text: String, maxLength: Int, _ decoder: Decoder) -> [UInt8]? {
        Sodium.ensureInitialized()
        var input = Array(text.utf8CString)
        input.removeLast()  // the terminating NUL
        if input.isEmpty { return [] }
        var output = [UInt8](repeating: 0, count: max(maxLength, 1))
        var written = 0
        var end: UnsafePointer<CChar>? = nil
        let status = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { inp in
                let rc = decoder(out.baseAddress!, out.count, inp.baseAddress!, inp.count, &written, &end)
                // libsodium stops at the first character it cannot decode; require that it consumed
                // all of the input so that "abc!" is an error, not "abc".
                if rc == 0, let end, end != inp.baseAddress! + inp.count { return Int32(-1) }
                return rc
            }
        }
        guard status == 0 else { return nil }
        output.removeSubrange(written...)
        return output
    }
}

/// RFC 4648 §5 without padding, strict.
enum Base64URL {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0xFF for bytes outside the alphabet.
    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    static func encode(_ input: UnsafeRawBufferPointer) -> String {
        let length = (input.count * 4 + 2) / 3
        if length == 0 { return "" }
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: length) { out in
                var i = 0
                var o = 0
                while i + 3 <= input.count {
                    let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                    out[o] = alphabet[Int(v >> 18)]
                    out[o + 1] = alphabet[Int(v >> 12 & 0x3F)]
                    out[o + 2] = alphabet[Int(v >> 6 & 0x3F)]
                    out[o + 3] = alphabet[Int(v & 0x3F)]
                    i += 3
                    o += 4
                }
                switch input.count - i {
                case 1:
                    let v = UInt32(input[i]) << 16
                    out[o] = alphabet[Int(v >> 18)]
                    out[o + 1] = alphabet[Int(v >> 12 & 0x3F)]
                case 2:
                    let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                    out[o] = alphabet[Int(v >> 18)]
                    out[o + 1] = alphabet[Int(v >> 12 & 0x3F)]
                    out[o + 2] = alphabet[Int(v >> 6 & 0x3F)]
                default:
                    break
                }
                return length
            }
        }
    }

    static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        let remainder = input.count % 4
        guard remainder != 1 else { return nil }
        let length = input.count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        let output = values.withUnsafeBufferPointer { values in
            [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
                var i = 0
                var o = 0
                while i + 4 <= input.count {
                    let a = values[Int(input[i])]
                    let b = values[Int(input[i + 1])]
                    let c = values[Int(input[i + 2])]
                    let d = values[Int(input[i + 3])]
                    if (a | b | c | d) & 0xC0 != 0 {
                        valid = false
                        break
                    }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[o] = UInt8(truncatingIfNeeded: v >> 16)
                    out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    o += 3
                }
                if valid && remainder >= 2 {
                    let a = values[Int(input[i])]
                    let b = values[Int(input[i + 1])]
                    let c = remainder == 3 ? values[Int(input[i + 2])] : 0
                    if (a | b | c) & 0xC0 != 0 {
                        valid = false
                    } else if remainder == 2 {
                        // One byte: the second character's low 4 bits are unused and must be zero.
                        if b & 0x0F != 0 { valid = false }
                        out[o] = a << 2 | b >> 4
                    } else {
                        // Two bytes: the third character's low 2 bits are unused and must be zero.
                        if c & 0x03 != 0 { valid = false }
                        out[o] = a << 2 | b >> 4
                        out[o + 1] = b << 4 | c >> 2
                    }
                }
                initialized = valid ? length : 0
            }
        }
        return valid ? output : nil
    }
}
