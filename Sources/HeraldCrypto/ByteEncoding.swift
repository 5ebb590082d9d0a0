import CSodium
import HeraldEncoding

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
