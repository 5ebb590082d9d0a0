import HeraldStore

// The field rules are the configuration's (its limits), not the context's: planners check
// requests without a context.

extension RelayConfiguration {
    enum FieldPattern {
        /// Printable text without control characters.
        case identifier
        /// Letters, digits, dots and hyphens (bundle ids, topics).
        case bundleID
    }

    /// Checks an id-like field: present, not too long, of the expected shape.
    func check(_ value: String, _ field: String, pattern: FieldPattern) throws(RelayError) {
        guard !value.isEmpty else { throw .invalidField(field, "must not be empty") }
        guard value.utf8.count <= maximumFieldBytes else {
            throw .invalidField(field, "is longer than \(maximumFieldBytes) bytes")
        }
        switch pattern {
        case .identifier:
            guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw .invalidField(field, "must not contain control characters")
            }
        case .bundleID:
            guard
                value.utf8.allSatisfy({ $0.isASCIILetterOrDigit || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") })
            else { throw .invalidField(field, "may hold letters, digits, '.' and '-' only") }
        }
    }

    /// Checks display text (names, alert texts): not too long, no control characters.
    func checkText(_ value: String, _ field: String, allowEmpty: Bool = false) throws(RelayError) {
        if !allowEmpty, value.isEmpty { throw .invalidField(field, "must not be empty") }
        guard value.utf8.count <= maximumFieldBytes else {
            throw .invalidField(field, "is longer than \(maximumFieldBytes) bytes")
        }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidField(field, "must not contain control characters")
        }
    }

    /// Checks a push token: APNs tokens are hex; FCM tokens are URL-safe text.
    func checkToken(_ token: String?, _ field: String, platform: DevicePlatform) throws(RelayError) {
        guard let token else { return }
        switch platform {
        case .ios:
            guard (16...200).contains(token.utf8.count), token.utf8.allSatisfy(\.isHexDigit) else {
                throw .invalidField(field, "must be an APNs device token (16 to 200 hex digits)")
            }
        case .android:
            let allowed = token.utf8.allSatisfy {
                $0.isASCIILetterOrDigit || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
                    || $0 == UInt8(ascii: ":")
            }
            guard (16...4096).contains(token.utf8.count), allowed else {
                throw .invalidField(field, "must be an FCM registration token")
            }
        case .huawei:
            // Push Kit tokens are printable ASCII (letters, digits and a few symbols), up to a
            // few hundred characters.
            guard (16...1024).contains(token.utf8.count), token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw .invalidField(field, "must be a Huawei Push Kit token")
            }
        case .web:
            // A browser's token is its subscription's endpoint, checked with the subscription's
            // keys (`WebPushSubscription`), never alone.
            throw .invalidField(field, "is not used by a browser: send its Web Push `subscription`")
        }
    }
}

extension UInt8 {
    var isASCIILetterOrDigit: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }

    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
