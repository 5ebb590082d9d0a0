import Foundation
import Yams

/// A YAML configuration turned into the JSON the configuration's decoder reads, so both formats
/// go through one decoder and one unknown-key check, with the line of every key kept for errors.
///
/// Scalars take YAML's core types (`4` is a number, `"4"` and `four` are strings, `true` a
/// boolean, `~` and an empty value null); anchors and aliases are followed.
enum YAMLConfiguration {
    /// The JSON for `data`, and for each key path (`dispatcher.workers`, `apps[0].id`) the line
    /// its key is on. An empty document is an empty configuration.
    static func json(from data: Data, path: String) throws(HeraldServerError) -> (Data, [String: Int]) {
        guard let text = String(data: data, encoding: .utf8) else {
            throw .configuration("\(path) is not UTF-8 text")
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw .configuration("\(path) is not valid YAML: \(describe(error))")
        } catch {
            throw .configuration("\(path) is not valid YAML: \(error)")
        }
        var lines: [String: Int] = [:]
        guard let root else { return (Data("{}".utf8), [:]) }
        guard case .mapping = root else {
            throw .configuration("\(path): the configuration must be a mapping of keys to values")
        }
        let object = try value(of: root, at: "", lines: &lines, file: path)
        do {
            return (try JSONSerialization.data(withJSONObject: object), lines)
        } catch {
            throw .configuration("\(path): \(error)")
        }
    }

    private static func value(
        of node: Node,
        at keyPath: String,
        lines: inout [String: Int],
        file: String
    ) throws(HeraldServerError) -> Any {
        switch node {
        case .mapping(let mapping):
            var object: [String: Any] = [:]
            for (key, value) in mapping {
                guard case .scalar(let scalar) = key else {
                    throw .configuration("\(file): a key\(where: key) is not a plain name")
                }
                let name = scalar.string
                let inner = keyPath.isEmpty ? name : keyPath + "." + name
                if let mark = key.mark { lines[inner] = mark.line }
                object[name] = try Self.value(of: value, at: inner, lines: &lines, file: file)
            }
            return object
        case .sequence(let sequence):
            var array: [Any] = []
            for (index, element) in sequence.enumerated() {
                let inner = "\(keyPath)[\(index)]"
                if let mark = element.mark { lines[inner] = mark.line }
                array.append(try value(of: element, at: inner, lines: &lines, file: file))
            }
            return array
        case .scalar(let scalar):
            // Only plain scalars take a type from their text: a quoted "4" stays a string.
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .null: return NSNull()
            case .bool: if let bool = node.bool { return bool }
            case .int: if let int = node.int { return int }
            case .float: if let float = node.float { return float }
            default: break
            }
            return scalar.string
        case .alias:
            throw .configuration("\(file): '\(keyPath)' is an alias that names no anchor\(where: node)")
        }
    }

    /// A YAML error on one line: where, and what.
    static func describe(_ error: YamlError) -> String {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let context = context.map { ", \($0.text)" } ?? ""
            return "line \(mark.line), column \(mark.column): \(problem)\(context)"
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            return "\(keys) given twice in the mapping at line \(context.mark.line)"
        default:
            return "\(error)".split(separator: "\n").first.map(String.init) ?? "\(error)"
        }
    }
}

extension DefaultStringInterpolation {
    /// ` (line N)` for a node that knows where it is.
    fileprivate mutating func appendInterpolation(where node: Node) {
        if let mark = node.mark { appendLiteral(" (line \(mark.line))") }
    }
}
