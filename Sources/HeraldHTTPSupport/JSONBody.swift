import Foundation
public import HeraldEncoding

/// Request bodies as every Herald listener reads them: checked against `JSONLimits` first
/// (`JSONCheck`: strict JSON, one object, bounded depth, values and numbers, no key twice, and for
/// a type that is `KnownJSONFields`, no key it does not have), then
/// decoded, every failure named by the field at fault. One path, so no listener parses what
/// another would refuse, and none lets a small body cost a large amount of memory.
public enum JSONBody {
    /// `bytes` decoded as `T`, or the field at fault and why.
    public static func decode<T: Decodable>(
        _ type: T.Type,
        from bytes: [UInt8],
        limits: JSONLimits = .request
    ) throws(JSONBodyError) -> T {
        do throws(JSONCheckError) {
            // A type that knows its fields refuses any other key (a misspelt one included).
            try JSONCheck.check(bytes, limits: limits, fields: (T.self as? any KnownJSONFields.Type)?.jsonFields)
        } catch {
            throw JSONBodyError(field: error.path.isEmpty ? "body" : error.path, reason: error.reason)
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let DecodingError.keyNotFound(key, context) {
            throw JSONBodyError(field: path(context.codingPath + [key]), reason: "is missing")
        } catch let DecodingError.typeMismatch(expected, context) {
            throw JSONBodyError(field: path(context.codingPath), reason: "must be \(name(of: expected))")
        } catch let DecodingError.valueNotFound(expected, context) {
            throw JSONBodyError(field: path(context.codingPath), reason: "must be \(name(of: expected))")
        } catch let DecodingError.dataCorrupted(context) {
            if context.codingPath.isEmpty { throw JSONBodyError(field: "body", reason: "is not valid JSON") }
            throw JSONBodyError(field: path(context.codingPath), reason: "has a value that is not allowed")
        } catch {
            throw JSONBodyError(field: "body", reason: "is not valid JSON")
        }
    }

    /// `pushes[1].id` for the coding path; `body` for the document itself.
    static func path(_ keys: [any CodingKey]) -> String {
        var path = ""
        for key in keys {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                if !path.isEmpty { path += "." }
                path += key.stringValue
            }
        }
        return path.isEmpty ? "body" : path
    }

    static func name(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is Bool.Type: "true or false"
        case let described as any DescribedJSONValue.Type: described.jsonDescription
        default: "a JSON value of another type"
        }
    }
}

/// A request body refused: the field at fault (`to`, `pushes[1].id`, or `body` for the whole
/// document) and why, in words that name no content.
public struct JSONBodyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path of the field at fault, or `body`.
    public let field: String
    /// Why: "is missing", "must be a string", "is given twice", ….
    public let reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { field == "body" ? "the body \(reason)" : "the field '\(field)' \(reason)" }
}
