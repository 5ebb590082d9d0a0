/// Compares the clear routing fields of a push with what its envelope authenticated.
///
/// The push network (and anything between it and the phone) can rewrite the clear fields; only
/// the sealed content and the additional data are the relay's word. A disagreement means the
/// push was tampered with on the way, so the emulators keep the generic text and say so.
enum RoutingCheck {
    /// One clear field: its name in the payload, its clear value (nil when missing) and the
    /// value the envelope authenticated.
    typealias Field = (name: String, clear: String?, authenticated: String)

    /// The tampering diagnostic, or nil when every clear field is present and equals its
    /// authenticated value. Names the fields, never their values (a conversation id a carrier
    /// chose does not belong in logs).
    static func mismatch(_ fields: [Field]) -> String? {
        let missing = fields.filter { $0.clear == nil }.map(\.name)
        let different = fields.filter { $0.clear != nil && $0.clear != $0.authenticated }.map(\.name)
        guard !missing.isEmpty || !different.isEmpty else { return nil }
        var parts: [String] = []
        if !different.isEmpty { parts.append(different.joined(separator: ", ") + " not as sealed") }
        if !missing.isEmpty { parts.append(missing.joined(separator: ", ") + " missing") }
        return "tampered: the clear routing fields disagree with the sealed content ("
            + parts.joined(separator: "; ") + "); the generic text is shown"
    }
}
