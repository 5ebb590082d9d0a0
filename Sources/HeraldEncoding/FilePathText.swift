/// Paths as text, for what Foundation gets wrong on Linux: `NSString.deletingLastPathComponent`
/// traps on a path with no slash but a trailing one (`"data"`, `"data/"`, swift-corelibs-foundation
/// in Swift 6.3), which made `herald serve --data data` crash at start.
public enum FilePathText {
    /// The directory that holds `path`'s last component: `"a/b"` → `"a"`, `"/a"` → `"/"`,
    /// `"a"` → `""` (the working directory), `"a/b/"` → `"a"`; trailing slashes are not a component.
    public static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
        return parent.isEmpty ? "/" : String(parent)
    }
}
