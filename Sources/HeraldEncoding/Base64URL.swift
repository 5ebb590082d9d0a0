/// base64url (RFC 4648 §5) without padding, strict: a character outside the alphabet, padding,
/// a length of 4n+1 or non-zero unused bits are refused, so one byte string has one text.
///
/// Table-driven: envelopes and JWTs are encoded on every push, where libsodium's constant-time
/// codec costs more than the work; keep secrets out of it (HeraldCrypto encodes those itself).
public enum Base64URL {
    private static let alphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8
    )

    /// 0xFF for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    /// The text of `input`.
    public static func encode(_ input: UnsafeRawBufferPointer) -> String {
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

    /// The bytes of the text in `input` (its UTF-8), or nil if it is not strict base64url.
    public static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
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

    /// The text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// The bytes of `text`, or nil if it is not strict base64url.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }
}
