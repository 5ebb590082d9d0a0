import Foundation
public import HeraldFCMCore
import HeraldMacros

/// A Google service account as the sandbox knows it: the public half of its key, to check the
/// RS256 assertions its sender exchanges for access tokens, and the Firebase project it sends for.
@MemberwiseInit
public struct SandboxServiceAccount: Sendable, Hashable, Codable {
    /// The account (`iss` of its assertions), e.g. `sender@project.iam.gserviceaccount.com`.
    public var clientEmail: String
    /// The key's id (`kid` of its assertions).
    public var privateKeyID: String
    /// The Firebase project the account sends for.
    public var projectID: String
    /// The RSA public key, PEM (`-----BEGIN PUBLIC KEY-----`).
    public var publicKeyPEM: String

    /// The sandbox's view of a Google service-account key file: its public key, derived from
    /// `private_key`.
    public init(_ account: FCMServiceAccount) throws {
        self.init(
            clientEmail: account.clientEmail,
            privateKeyID: account.privateKeyID,
            projectID: account.projectID,
            publicKeyPEM: try account.signingKey().publicKey.pemRepresentation
        )
    }

    enum CodingKeys: String, CodingKey {
        case clientEmail = "client_email"
        case privateKeyID = "private_key_id"
        case projectID = "project_id"
        case publicKeyPEM = "public_key_pem"
    }

    /// Reads a service account from a JSON file: either a Google service-account key file (the
    /// public key is derived from its `private_key`) or this type's own JSON (`public_key_pem`).
    public static func load(path: String) throws -> SandboxServiceAccount {
        let data: Data
        do {
            data = try FCMServiceAccount.contents(of: path)
        } catch {
            throw SandboxError.invalidServiceAccount(error.message)
        }
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        guard let object else {
            throw SandboxError.invalidServiceAccount("\(path) is not a JSON object")
        }
        if object["private_key"] != nil {
            do {
                return try SandboxServiceAccount(FCMServiceAccount.decode(data, path: path))
            } catch {
                throw SandboxError.invalidServiceAccount("\(error)")
            }
        }
        do {
            return try JSONDecoder().decode(SandboxServiceAccount.self, from: data)
        } catch {
            throw SandboxError.invalidServiceAccount(
                "\(path) is neither a Google service-account key file nor a JSON object with "
                    + "client_email, private_key_id, project_id and public_key_pem"
            )
        }
    }
}
