/// A protobuf `Duration` in its JSON form (`"86400s"`, `"3.5s"`): the `ttl` FCM and Huawei Push
/// Kit read.
public enum DurationText {
    /// Whole seconds of `text`; nil if malformed (no `s`, a sign, more than 12 digits, a fraction
    /// of more than 9).
    public static func seconds(_ text: String) -> Int64? {
        guard text.hasSuffix("s") else { return nil }
        let parts = text.dropLast().split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.utf8.count <= 12, isDigits(whole) else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].utf8.count), isDigits(parts[1]) else { return nil }
        }
        return Int64(whole)
    }

    private static func isDigits(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }
}
