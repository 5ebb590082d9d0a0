public import CryptoExtras
public import Foundation

/// A Google service-account key file, the JSON the Firebase console downloads: what the sender
/// signs its OAuth2 assertions with.
public struct FCMServiceAccount: Sendable, Hashable, Codable {
    /// Always `service_account`.
    public var type: String
    /// The Firebase project messages are sent for (`/v1/projects/{project_id}/messages:send`).
    public var projectID: String
    /// The key's id: the `kid` of every assertion.
    public var privateKeyID: String
    /// The RSA private key, PKCS#8 PEM.
    public var privateKey: String
    /// The account (`iss` of every assertion).
    public var clientEmail: String
    public var clientID: String?
    public var authURI: String?
    /// Where assertions are exchanged for access tokens (`aud` of every assertion).
    public var tokenURI: String
    public var authProviderX509CertURL: String?
    public var clientX509CertURL: String?
    public var universeDomain: String?

    /// The OAuth2 scope that lets an access token send FCM messages.
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The `grant_type` of the exchange of an assertion for an access token (RFC 7523).
    public static let jwtBearerGrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google's token endpoint.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    public init(
        projectID: String,
        privateKeyID: String,
        privateKey: String,
        clientEmail: String,
        tokenURI: String = FCMServiceAccount.googleTokenURI
    ) {
        self.type = "service_account"
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
    }

    enum CodingKeys: String, CodingKey {
        case type
        case projectID = "project_id"
        case privateKeyID = "private_key_id"
        case privateKey = "private_key"
        case clientEmail = "client_email"
        case clientID = "client_id"
        case authURI = "auth_uri"
        case tokenURI = "token_uri"
        case authProviderX509CertURL = "auth_provider_x509_cert_url"
        case clientX509CertURL = "client_x509_cert_url"
        case universeDomain = "universe_domain"
    }

    /// Reads and checks a service-account file.
    public static func load(path: String) throws -> FCMServiceAccount {
        try decode(try contents(of: path), path: path)
    }

    /// The bytes of the file at `path`, for `load(path:)` and for readers that look at a file
    /// before deciding it is a Google key file (the sandbox's).
    public static func contents(of path: String) throws(FCMCoreError) -> Data {
        do {
            return try Data(contentsOf: URL(filePath: path))
        } catch {
            throw FCMCoreError.serviceAccount("cannot read \(path)")
        }
    }

    /// Reads and checks the contents of a service-account file; `path` names it in errors.
    public static func decode(_ data: Data, path: String) throws -> FCMServiceAccount {
        let account: FCMServiceAccount
        do {
            account = try JSONDecoder().decode(FCMServiceAccount.self, from: data)
        } catch {
            throw FCMCoreError.serviceAccount("\(path) is not a service-account JSON file (\(error))")
        }
        try account.check()
        return account
    }

    /// Throws unless the fields a sender needs are present and the key is an RSA key.
    public func check() throws {
        guard type == "service_account" else {
            throw FCMCoreError.serviceAccount("type is \"\(type)\", not \"service_account\"")
        }
        for (name, value) in [
            ("project_id", projectID), ("private_key_id", privateKeyID), ("client_email", clientEmail),
            ("token_uri", tokenURI),
        ] where value.isEmpty {
            throw FCMCoreError.serviceAccount("\(name) is empty")
        }
        _ = try signingKey()
    }

    /// The private key, parsed.
    public func signingKey() throws -> _RSA.Signing.PrivateKey {
        do {
            return try _RSA.Signing.PrivateKey(pemRepresentation: privateKey)
        } catch {
            throw FCMCoreError.serviceAccount("private_key is not an RSA private key in PEM form")
        }
    }

    /// A new account with a fresh 2048-bit key, for the sandbox (`herald keys fcm`): the file to
    /// give the sender, and the public key to register with the sandbox.
    public static func generate(
        projectID: String,
        tokenURI: String
    ) throws -> (account: FCMServiceAccount, publicKeyPEM: String) {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        var generator = SystemRandomNumberGenerator()
        // 20 random bytes in lowercase hex, the form of Google's own key ids.
        let keyID = (0..<20).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
        var account = FCMServiceAccount(
            projectID: projectID,
            privateKeyID: keyID,
            privateKey: key.pkcs8PEMRepresentation + "\n",
            clientEmail: "herald-sender@\(projectID).iam.gserviceaccount.com",
            tokenURI: tokenURI
        )
        account.clientID = String(UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999))
        return (account, key.publicKey.pemRepresentation)
    }
}

/// A service-account file or assertion that cannot be used.
public struct FCMCoreError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case serviceAccount
        case signing
    }

    private let code: Code
    public let message: String

    public var description: String {
        switch code {
        case .serviceAccount: "service account: \(message)"
        case .signing: "assertion: \(message)"
        }
    }

    static func serviceAccount(_ message: String) -> Self { Self(code: .serviceAccount, message: message) }
    static func signing(_ message: String) -> Self { Self(code: .signing, message: message) }
}
