import HeraldMacros

/// What one JSON document may hold before Herald decodes it. Every listener checks a body against
/// its limits before `JSONDecoder` or `JSONSerialization` sees it, so the work and memory a
/// request can cause (authenticated or not) are bounded by its size: nesting is what makes a small
/// body expensive (each level is a container, a coding path and a stack frame in the decoders),
/// and a flood of members is what makes a set of keys expensive.
@MemberwiseInit
public struct JSONLimits: Sendable, Hashable {
    /// The deepest nesting of objects and arrays; the top-level object is level 1.
    public var maximumDepth: Int
    /// The most values in the whole document: members of objects and elements of arrays, at
    /// every level.
    public var maximumValues: Int
    /// The longest number, in characters (a number of 100,000 digits is valid JSON).
    public var maximumNumberLength: Int
    /// Whether a key given twice in one object is refused. `JSONDecoder` keeps one of the two
    /// without a word, so `{"to":"a","to":"b"}` would reach someone the sender may not have meant.
    public var refusesDuplicateKeys: Bool

    /// A request to one of Herald's APIs (relay, adapters, sandbox control, webhook receivers):
    /// 32 levels (the deepest body Herald takes has 4), 4,096 values (a broadcast to 1,000 users
    /// holds about 1,010), numbers of at most 40 characters, no key twice.
    public static let request = JSONLimits(
        maximumDepth: 32,
        maximumValues: 4096,
        maximumNumberLength: 40,
        refusesDuplicateKeys: true
    )
}

/// A strict RFC 8259 check of one JSON object that builds nothing but what it must compare (the
/// keys of the objects being read, when duplicates are refused), and stops at the first byte
/// past a limit: its time is linear in the body and its memory bounded by the depth.
public enum JSONCheck {
    /// Checks that `bytes` is exactly one JSON object (surrounding whitespace allowed), in valid
    /// UTF-8, within `limits`.
    /// With `fields`, a key the object (or an object inside it) does not have is refused too.
    public static func check(
        _ bytes: UnsafeRawBufferPointer,
        limits: JSONLimits,
        fields: JSONFields? = nil
    ) throws(JSONCheckError) {
        var scanner = Scanner(bytes: bytes, limits: limits)
        scanner.next = fields
        try scanner.document()
    }

    /// Checks that `bytes` is exactly one JSON object within `limits` (and of `fields`).
    public static func check(_ bytes: [UInt8], limits: JSONLimits, fields: JSONFields? = nil) throws(JSONCheckError) {
        let result = bytes.withUnsafeBytes { buffer -> JSONCheckError? in
            do throws(JSONCheckError) {
                try check(buffer, limits: limits, fields: fields)
                return nil
            } catch {
                return error
            }
        }
        if let result { throw result }
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        let limits: JSONLimits
        var index = 0
        var count = 0
        /// The containers open around `index`, outermost first (never deeper than the limit).
        var open: [Container] = []
        /// The fields of the value about to be read, if it is an object or an array to check.
        var next: JSONFields?

        init(bytes: UnsafeRawBufferPointer, limits: JSONLimits) {
            self.bytes = bytes
            self.limits = limits
            open.reserveCapacity(min(limits.maximumDepth, 64))
        }

        struct Container {
            var isObject: Bool
            /// The keys read so far (only when duplicates are refused).
            var keys: Set<String> = []
            /// The current member's key, as the bytes between its quotes (for the path).
            var key: Range<Int>? = nil
            /// The current element's index, in an array.
            var element = 0
            /// What this container may hold; nil: anything.
            var fields: JSONFields? = nil
        }

        mutating func document() throws(JSONCheckError) {
            skipWhitespace()
            guard index < bytes.count else { throw JSONCheckError.notObject }
            // Any value is read to the end, so the answer says whether it was JSON at all.
            let isObject = peek() == UInt8(ascii: "{")
            try readAll()
            skipWhitespace()
            guard index == bytes.count else { throw fault(.malformed) }
            guard isObject else { throw JSONCheckError.notObject }
        }

        /// Reads the top-level value and everything inside it, without recursion: each pass reads
        /// one value, then the punctuation after it, closing containers as they end.
        mutating func readAll() throws(JSONCheckError) {
            repeat {
                try value()
                try afterValue()
            } while !open.isEmpty
        }

        /// One value at `index`: a scalar is read whole; a container is opened and its first
        /// member's key read, leaving `index` at that member's value (or the container closed).
        mutating func value() throws(JSONCheckError) {
            skipWhitespace()
            guard let byte = peek() else { throw fault(.malformed) }
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = byte == UInt8(ascii: "{")
                guard open.count < limits.maximumDepth else {
                    throw JSONCheckError(.tooDeep(limits.maximumDepth), path: "")
                }
                open.append(Container(isObject: isObject, fields: next.flatMap { $0.isChecked(asObject: isObject) }))
                index += 1
                skipWhitespace()
                if peek() == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    index += 1
                    open.removeLast()
                    return
                }
                try member()
                try value()
            case UInt8(ascii: "\""):
                _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: try number()
            }
        }

        /// The punctuation after a value: a comma starts the next member, a bracket closes its
        /// container (and the punctuation after that container is read next).
        mutating func afterValue() throws(JSONCheckError) {
            // Only the kind is read: a copy of the container would share its key set, and the
            // next insert would copy the whole set at every key (quadratic in the keys).
            while let isObject = open.last?.isObject {
                skipWhitespace()
                guard let byte = peek() else { throw fault(.malformed) }
                if byte == UInt8(ascii: ",") {
                    index += 1
                    if !isObject { open[open.count - 1].element += 1 }
                    try member()
                    return
                }
                guard byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw fault(.malformed) }
                index += 1
                open.removeLast()
            }
        }

        /// Counts the member starting at `index` and, in an object, reads its key and colon.
        mutating func member() throws(JSONCheckError) {
            count += 1
            guard count <= limits.maximumValues else {
                throw JSONCheckError(.tooManyValues(limits.maximumValues), path: "")
            }
            let fields = open[open.count - 1].fields
            next = nil
            guard open[open.count - 1].isObject else {
                if case .array(let element) = fields { next = element }
                return
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw fault(.malformed) }
            let (range, escaped) = try string()
            open[open.count - 1].key = range
            if limits.refusesDuplicateKeys || fields != nil {
                let key = escaped ? Self.unescape(bytes[range]) : String(decoding: bytes[range], as: UTF8.self)
                if limits.refusesDuplicateKeys {
                    guard open[open.count - 1].keys.insert(key).inserted else { throw fault(.duplicateKey) }
                }
                if case .object(let known) = fields {
                    guard let field = known[key] else { throw fault(.unknownKey) }
                    next = field
                }
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw fault(.malformed) }
            index += 1
        }

        /// A fault at the current member, with its path.
        func fault(_ code: JSONCheckError.Code) -> JSONCheckError {
            // Where JSON stops being JSON is a byte, not a field: the document is at fault.
            JSONCheckError(code, path: code == .malformed ? "" : path)
        }

        /// Where the value being read sits: `to`, `from.name`, `pushes[1].id`.
        var path: String {
            var path = ""
            for container in open {
                if container.isObject {
                    guard let key = container.key else { break }
                    if !path.isEmpty { path += "." }
                    path += Self.unescape(bytes[key])
                } else {
                    path += "[\(container.element)]"
                }
                // A path is for people: a megabyte of key is not.
                if path.utf8.count > 200 { return String(path.prefix(200)) + "…" }
            }
            return path
        }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func literal(_ text: StaticString) throws(JSONCheckError) {
            let count = text.utf8CodeUnitCount
            guard bytes.count - index >= count else { throw fault(.malformed) }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { throw fault(.malformed) }
            index += count
        }

        mutating func number() throws(JSONCheckError) {
            let start = index
            if peek() == UInt8(ascii: "-") { index += 1 }
            guard let first = peek(), first.isDigit else { throw fault(.malformed) }
            index += 1
            if first != UInt8(ascii: "0") {
                while let byte = peek(), byte.isDigit { index += 1 }
            }
            if peek() == UInt8(ascii: ".") {
                index += 1
                guard let byte = peek(), byte.isDigit else { throw fault(.malformed) }
                while let byte = peek(), byte.isDigit { index += 1 }
            }
            if let byte = peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                index += 1
                if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
                guard let byte = peek(), byte.isDigit else { throw fault(.malformed) }
                while let byte = peek(), byte.isDigit { index += 1 }
            }
            guard index - start <= limits.maximumNumberLength else {
                throw fault(.numberTooLong(limits.maximumNumberLength))
            }
        }

        /// A string from its opening quote: escapes checked, UTF-8 validated. Answers the bytes
        /// between the quotes and whether any escape is among them.
        mutating func string() throws(JSONCheckError) -> (Range<Int>, Bool) {
            index += 1
            let start = index
            var escaped = false
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return (start..<index - 1, escaped)
                case UInt8(ascii: "\\"):
                    escaped = true
                    index += 1
                    guard let next = peek() else { throw fault(.malformed) }
                    switch next {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        guard bytes.count - index >= 5 else { throw fault(.malformed) }
                        for offset in 1...4 where !bytes[index + offset].isHexDigit { throw fault(.malformed) }
                        index += 5
                    default:
                        throw fault(.malformed)
                    }
                case 0x00..<0x20:
                    throw fault(.malformed)
                case 0x20..<0x80:
                    index += 1
                default:
                    guard utf8Sequence() else { throw fault(.invalidUTF8) }
                }
            }
            throw fault(.malformed)
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

        /// The text of a string's checked bytes, escapes resolved (a surrogate pair is one scalar;
        /// a lone surrogate is U+FFFD, as `JSONDecoder` reads it).
        static func unescape(_ raw: Slice<UnsafeRawBufferPointer>) -> String {
            var scalars = String.UnicodeScalarView()
            var plain: [UInt8] = []
            var pendingHigh: UInt32?
            var index = raw.startIndex
            func flush() {
                scalars.append(contentsOf: String(decoding: plain, as: UTF8.self).unicodeScalars)
                plain.removeAll(keepingCapacity: true)
            }
            while index < raw.endIndex {
                let byte = raw[index]
                guard byte == UInt8(ascii: "\\") else {
                    plain.append(byte)
                    index += 1
                    continue
                }
                flush()
                let escape = raw[index + 1]
                index += 2
                var scalar: UInt32
                switch escape {
                case UInt8(ascii: "b"): scalar = 0x08
                case UInt8(ascii: "f"): scalar = 0x0C
                case UInt8(ascii: "n"): scalar = 0x0A
                case UInt8(ascii: "r"): scalar = 0x0D
                case UInt8(ascii: "t"): scalar = 0x09
                case UInt8(ascii: "u"):
                    scalar = 0
                    for offset in 0..<4 { scalar = scalar << 4 | UInt32(raw[index + offset].hexValue) }
                    index += 4
                default: scalar = UInt32(escape)
                }
                if (0xD800...0xDBFF).contains(scalar) {
                    if pendingHigh != nil { scalars.append("\u{FFFD}") }
                    pendingHigh = scalar
                    continue
                }
                if let high = pendingHigh {
                    pendingHigh = nil
                    if (0xDC00...0xDFFF).contains(scalar) {
                        scalar = 0x10000 + ((high - 0xD800) << 10) + (scalar - 0xDC00)
                    } else {
                        scalars.append("\u{FFFD}")
                    }
                }
                scalars.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
            }
            if pendingHigh != nil { scalars.append("\u{FFFD}") }
            flush()
            return String(scalars)
        }
    }
}

/// Why a JSON document was refused, and where.
public struct JSONCheckError: Error, Sendable, Hashable, CustomStringConvertible {
    fileprivate enum Code: Sendable, Hashable {
        case malformed
        case notObject
        case invalidUTF8
        case duplicateKey
        case unknownKey
        case tooDeep(Int)
        case tooManyValues(Int)
        case numberTooLong(Int)
    }

    private let code: Code
    /// The path of the value at fault (`to`, `from.name`, `pushes[1].id`); empty when the fault
    /// is the document's (malformed, too deep, too many values).
    public let path: String

    fileprivate init(_ code: Code, path: String) {
        self.code = code
        self.path = path
    }

    /// The document is JSON, but not an object.
    static let notObject = JSONCheckError(.notObject, path: "")

    /// Why, in words that name no content: "is not valid JSON", "is given twice", ….
    public var reason: String {
        switch code {
        case .malformed: "is not valid JSON"
        case .notObject: "must be a JSON object"
        case .invalidUTF8: "is not valid UTF-8"
        case .duplicateKey: "is given twice"
        case .unknownKey: "is not a field of this request"
        case .tooDeep(let limit): "nests objects and arrays deeper than \(limit) levels"
        case .tooManyValues(let limit): "holds more than \(limit) values"
        case .numberTooLong(let limit): "is a number longer than \(limit) characters"
        }
    }

    public var description: String { (path.isEmpty ? "the body" : path) + " " + reason }
}

extension UInt8 {
    fileprivate var isDigit: Bool { self >= 0x30 && self <= 0x39 }

    fileprivate var isHexDigit: Bool {
        isDigit || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66)
    }

    fileprivate var hexValue: UInt8 {
        isDigit ? self - 0x30 : (self | 0x20) - 0x61 + 10
    }
}
