/// A strict RFC 8259 syntax check that builds nothing: APNs only needs to know that a payload is
/// a JSON object, and parsing it into Foundation objects per push cost more than the rest of the
/// request.
public enum JSONSyntax {
    /// Whether `bytes` is exactly one JSON object (with optional surrounding whitespace).
    public static func isObject(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int = 64) -> Bool {
        var parser = Parser(bytes: bytes, maximumDepth: maximumDepth)
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "{"), parser.value(depth: 0) else { return false }
        parser.skipWhitespace()
        return parser.atEnd
    }

    /// Whether `bytes` is exactly one JSON object.
    public static func isObject(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isObject($0) }
    }

    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        let maximumDepth: Int
        var index = 0

        init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        var atEnd: Bool { index == bytes.count }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
            index += count
            return true
        }

        mutating func value(depth: Int) -> Bool {
            guard depth <= maximumDepth, let byte = peek() else { return false }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth + 1)
            case UInt8(ascii: "["): return array(depth: depth + 1)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return expect("true")
            case UInt8(ascii: "f"): return expect("false")
            case UInt8(ascii: "n"): return expect("null")
            default: return number()
            }
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return true
            }
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: "\""), string() else { return false }
                skipWhitespace()
                guard peek() == UInt8(ascii: ":") else { return false }
                index += 1
                skipWhitespace()
                guard value(depth: depth) else { return false }
                skipWhitespace()
                switch peek() {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                skipWhitespace()
                guard value(depth: depth) else { return false }
                skipWhitespace()
                switch peek() {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        /// A string, with escapes checked and UTF-8 validated.
        mutating func string() -> Bool {
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = peek() else { return false }
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        guard bytes.count - index >= 5 else { return false }
                        for offset in 1...4 where !bytes[index + offset].isHexDigit { return false }
                        index += 5
                    default:
                        return false
                    }
                case 0x00..<0x20:
                    return false
                case 0x20..<0x80:
                    index += 1
                default:
                    guard utf8Sequence() else { return false }
                }
            }
            return false
        }

        /// One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
        mutating func utf8Sequence() -> Bool {
            let lead = bytes[index]
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                upper = 0x9F
            case 0xF0:
                length = 4
                lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                upper = 0x8F
            default: return false
            }
            guard bytes.count - index >= length else { return false }
            guard (lower...upper).contains(bytes[index + 1]) else { return false }
            for offset in 2..<length where !(0x80...0xBF).contains(bytes[index + offset]) { return false }
            index += length
            return true
        }

        mutating func number() -> Bool {
            let start = index
            if peek() == UInt8(ascii: "-") { index += 1 }
            guard let first = peek(), first.isDigit else { return false }
            index += 1
            if first != UInt8(ascii: "0") {
                while let byte = peek(), byte.isDigit { index += 1 }
            }
            if peek() == UInt8(ascii: ".") {
                index += 1
                guard let byte = peek(), byte.isDigit else { return false }
                while let byte = peek(), byte.isDigit { index += 1 }
            }
            if let byte = peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                index += 1
                if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
                guard let byte = peek(), byte.isDigit else { return false }
                while let byte = peek(), byte.isDigit { index += 1 }
            }
            return index > start
        }
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { self >= 0x30 && self <= 0x39 }
}
