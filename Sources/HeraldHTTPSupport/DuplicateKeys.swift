/// Finds a key given twice in one JSON object. `JSONDecoder` keeps one of the two without a word,
/// so `{"to":"a","to":"b"}` would reach someone the sender may not have meant; a request that
/// repeats a key is refused instead, naming it.
public enum DuplicateKeys {
    /// The path of the first key that appears twice in the same object (`to`, `from.name`,
    /// `pushes[1].id`), compared after unescaping (`"\u0074o"` is `to`); nil when there is none.
    /// Malformed JSON answers nil: the decoder reports it. Bytes, not any collection: a generic
    /// function is not specialized across modules, and every request body passes through here.
    public static func first(in json: [UInt8]) -> String? {
        var scanner = Scanner(bytes: json)
        return scanner.firstDuplicate()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        /// A container being read: an object's keys so far, or an array's element count.
        enum Frame {
            case object(keys: Set<String>, path: String, key: String?)
            case array(path: String, count: Int)
        }

        mutating func firstDuplicate() -> String? {
            var stack: [Frame] = []
            // Whether the next string in an object is a key (true) or a value (false).
            var expectKey = false
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "{"):
                    stack.append(.object(keys: [], path: path(of: stack), key: nil))
                    expectKey = true
                    index += 1
                case UInt8(ascii: "["):
                    stack.append(.array(path: path(of: stack), count: 0))
                    expectKey = false
                    index += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    _ = stack.popLast()
                    expectKey = false
                    index += 1
                case UInt8(ascii: ","):
                    if case .object(let keys, let path, _) = stack.last {
                        stack[stack.count - 1] = .object(keys: keys, path: path, key: nil)
                        expectKey = true
                    } else if case .array(let path, let count) = stack.last {
                        stack[stack.count - 1] = .array(path: path, count: count + 1)
                    }
                    index += 1
                case UInt8(ascii: "\""):
                    guard let text = readString() else { return nil }
                    if expectKey, case .object(var keys, let path, _) = stack.last {
                        guard keys.insert(text).inserted else {
                            return path.isEmpty ? text : path + "." + text
                        }
                        stack[stack.count - 1] = .object(keys: keys, path: path, key: text)
                        expectKey = false
                    }
                default:
                    index += 1
                }
            }
            return nil
        }

        /// Where a value that starts now sits.
        func path(of stack: [Frame]) -> String {
            switch stack.last {
            case .object(_, let path, let key?): path.isEmpty ? key : path + "." + key
            case .array(let path, let count): path + "[\(count)]"
            case .object, nil: ""
            }
        }

        /// Reads a string starting at its opening quote, unescaped; nil if it never ends.
        mutating func readString() -> String? {
            index += 1
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            var pendingHigh: UInt32?
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                    return String(scalars)
                }
                guard byte == UInt8(ascii: "\\") else {
                    raw.append(byte)
                    index += 1
                    continue
                }
                guard index + 1 < bytes.count else { return nil }
                let escaped = bytes[index + 1]
                index += 2
                var character: UInt32
                switch escaped {
                case UInt8(ascii: "b"): character = 0x08
                case UInt8(ascii: "f"): character = 0x0C
                case UInt8(ascii: "n"): character = 0x0A
                case UInt8(ascii: "r"): character = 0x0D
                case UInt8(ascii: "t"): character = 0x09
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count,
                        let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                    else { return nil }
                    index += 4
                    character = value
                default: character = UInt32(escaped)
                }
                // Escapes become scalars; a surrogate pair becomes one.
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll(keepingCapacity: true)
                if (0xD800...0xDBFF).contains(character) {
                    pendingHigh = character
                    continue
                }
                if let high = pendingHigh, (0xDC00...0xDFFF).contains(character) {
                    character = 0x10000 + ((high - 0xD800) << 10) + (character - 0xDC00)
                }
                pendingHigh = nil
                scalars.append(Unicode.Scalar(character) ?? "\u{FFFD}")
            }
            return nil
        }
    }
}
