import Foundation

/// A data message's fields (string keys and values), as FCM, Push Kit and Web Push carry them.
public enum DataFields {
    /// The fields as one JSON object, keys sorted and slashes unescaped: the same data is always
    /// the same bytes (what Push Kit's `data`, a Web Push plaintext and a store's column hold).
    public static func json(_ fields: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a dictionary of strings cannot fail.
        return (try? encoder.encode(fields)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The fields of a JSON object of strings; nil when `json` is not one.
    public static func fields(_ json: String) -> [String: String]? {
        try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))
    }
}
