/// A JWS in compact serialization (RFC 7515 §7.1): `header.claims.signature`, each part
/// base64url. APNs provider tokens and FCM's OAuth2 assertions are both JWTs of this form and
/// differ only in their algorithm and claims, so the joining and splitting live here once.
public struct CompactJWS: Sendable, Hashable {
    /// The header's JSON bytes.
    public let header: [UInt8]
    /// The claims' JSON bytes.
    public let claims: [UInt8]
    /// The signature bytes.
    public let signature: [UInt8]
    /// What the signature covers: the encoded header, a dot and the encoded claims, as written.
    public let signingInput: [UInt8]

    /// Splits `text`; nil unless it is three parts of valid base64url.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let header = Base64URL.decode(Substring(parts[0])),
            let claims = Base64URL.decode(Substring(parts[1])),
            let signature = Base64URL.decode(Substring(parts[2]))
        else { return nil }
        self.header = header
        self.claims = claims
        self.signature = signature
        signingInput = Array(text.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
    }

    /// The compact text of `header` and `claims` (JSON bytes), signed by `sign` over the signing
    /// input.
    public static func sign<Failure: Error>(
        header: [UInt8],
        claims: [UInt8],
        with sign: ([UInt8]) throws(Failure) -> [UInt8]
    ) throws(Failure) -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        return signingInput + "." + Base64URL.encode(try sign(Array(signingInput.utf8)))
    }
}
