/// JSON written by hand where `JSONEncoder` would cost more than the work it serves (every
/// ingest answers a receipt and seals a push body).
public enum JSONText {
    /// `text` as a JSON string literal, quoted and escaped.
    public static func quoted(_ text: String) -> String {
        // Most text needs no escaping: copy it whole.
        var clean = true
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in text.utf8 {
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                || (previous == (0xE2, 0x80) && (byte == 0xA8 || byte == 0xA9))
            {
                clean = false
                break
            }
            previous = (previous.1, byte)
        }
        if clean { return "\"" + text + "\"" }
        var out = "\""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }
}
