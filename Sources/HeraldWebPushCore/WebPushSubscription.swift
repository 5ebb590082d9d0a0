import Crypto
import Foundation
import HeraldEncoding
public import HeraldPush

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A browser's push subscription as the application server keeps it: where to post (the
/// endpoint) and what to encrypt for (the keys).
public struct WebPushSubscription: Sendable, Hashable {
    /// The push service URL the browser was given (`PushSubscription.endpoint`).
    public var endpoint: String
    public var keys: WebPushKeys

    /// The longest endpoint taken: browsers' are under 600 characters.
    public static let maxEndpointLength = 2048

    public init(endpoint: String, keys: WebPushKeys) {
        self.endpoint = endpoint
        self.keys = keys
    }

    /// The subscription of `PushSubscription.toJSON()`'s fields, checked: `endpoint` an
    /// absolute `https` URL with a host, at most 2,048 characters, without user info, and
    /// unless `allowPrivateEndpoints` not on a loopback, private, link-local or unspecified
    /// address nor `localhost`; `p256dh` a 65-byte uncompressed P-256 point and `auth` 16
    /// bytes, each base64url with or without padding (browsers differ; an app that encoded
    /// `getKey()` itself with `btoa` gives the standard alphabet, which is taken too).
    /// The error's `field` names the refused one.
    public static func parse(
        endpoint: String,
        p256dh: String,
        auth: String,
        allowPrivateEndpoints: Bool
    ) throws(WebPushError) -> WebPushSubscription {
        try checkEndpoint(endpoint, allowPrivate: allowPrivateEndpoints)
        guard let publicKey = decodeKey(p256dh), publicKey.count == 65, publicKey.first == 4 else {
            throw .invalid("subscription.keys.p256dh", "must be a 65-byte uncompressed P-256 key in base64url")
        }
        guard (try? P256.KeyAgreement.PublicKey(x963Representation: publicKey)) != nil else {
            throw .invalid("subscription.keys.p256dh", "is not a point on P-256")
        }
        guard let secret = decodeKey(auth), secret.count == 16 else {
            throw .invalid("subscription.keys.auth", "must be 16 bytes in base64url")
        }
        // Both lengths were checked above.
        return WebPushSubscription(endpoint: endpoint, keys: WebPushKeys(p256dh: publicKey, auth: secret)!)
    }

    /// base64url with or without padding, or standard base64.
    static func decodeKey(_ text: String) -> [UInt8]? {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        var padding = 0
        while trimmed.hasSuffix("=") {
            trimmed.removeLast()
            padding += 1
        }
        // Padding, when present, must make a whole number of 4-character groups.
        guard padding == 0 || (padding <= 2 && (trimmed.utf8.count + padding) % 4 == 0) else { return nil }
        let urlSafe = String(trimmed.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
        return Base64URL.decode(Substring(urlSafe))
    }

    /// Throws (`subscription.endpoint`) unless `endpoint` is one the sender may post to.
    public static func checkEndpoint(_ endpoint: String, allowPrivate: Bool) throws(WebPushError) {
        let field = "subscription.endpoint"
        guard !endpoint.isEmpty else { throw .invalid(field, "must not be empty") }
        guard endpoint.count <= maxEndpointLength else {
            throw .invalid(field, "must be at most \(maxEndpointLength) characters")
        }
        guard let components = URLComponents(string: endpoint), components.scheme?.lowercased() == "https" else {
            throw .invalid(field, "must be an absolute https URL")
        }
        guard let host = components.host, !host.isEmpty else { throw .invalid(field, "must name a host") }
        guard components.user == nil, components.password == nil else {
            throw .invalid(field, "must not carry user info")
        }
        if !allowPrivate, PrivateAddress.isPrivate(host: host) {
            throw .invalid(field, "must not be a loopback, private, link-local or unspecified address")
        }
    }
}

/// Hosts a sender must not be made to post to (server-side request forgery): loopback, private
/// (RFC 1918, fc00::/7), link-local, unspecified addresses and `localhost`.
public enum PrivateAddress {
    /// Whether `host` (a name or an address literal, IPv6 with or without brackets) is one.
    public static func isPrivate(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        // RFC 6761 §6.3: localhost and every name under it.
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if let v4 = address(name, family: AF_INET, length: 4) { return isPrivateIPv4(v4) }
        if let v6 = address(name, family: AF_INET6, length: 16) { return isPrivateIPv6(v6) }
        // A numeric name that is no dotted quad (`127.1`, `0x7f.1`, `2130706433`) is an address
        // to some resolvers: refused rather than guessed.
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            if label.hasPrefix("0x") { return label.dropFirst(2).allSatisfy(\.isHexDigit) }
            return !label.isEmpty && label.allSatisfy { $0.isASCII && $0.isNumber }
        }
    }

    static func isPrivateIPv4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        // 0/8 "this network" (0.0.0.0 unspecified), 127/8 loopback, 10/8 private.
        case (0, _), (127, _), (10, _): true
        // RFC 1918 and 169.254/16 link-local.
        case (172, 16...31), (192, 168), (169, 254): true
        default: false
        }
    }

    static func isPrivateIPv6(_ a: [UInt8]) -> Bool {
        let zeros = a[0..<15].allSatisfy { $0 == 0 }
        // :: unspecified, ::1 loopback.
        if zeros && (a[15] == 0 || a[15] == 1) { return true }
        // fc00::/7 unique local, fe80::/10 link-local.
        if a[0] & 0xFE == 0xFC || (a[0] == 0xFE && a[1] & 0xC0 == 0x80) { return true }
        // ::ffff:a.b.c.d: the IPv4 address it maps.
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF { return isPrivateIPv4(Array(a[12...])) }
        return false
    }

    /// The bytes of an address literal of `family`, nil when `text` is not one.
    private static func address(_ text: String, family: Int32, length: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: length)
        let parsed = bytes.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return parsed == 1 ? bytes : nil
    }
}
