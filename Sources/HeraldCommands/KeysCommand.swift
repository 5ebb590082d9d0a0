import ArgumentParser
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
import HeraldEncoding
import HeraldFCMCore
import HeraldSandbox
import HeraldServer

/// `herald keys`: development keys.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract:
            "Make keys: the master key, APNs-style auth keys, FCM service accounts, VAPID keys for Web Push, and the backends' API keys.",
        subcommands: [Master.self, APNs.self, FCM.self, VAPID.self, Token.self, API.self]
    )
}

extension KeysCommand {
    /// `herald keys vapid`: an app's VAPID key for Web Push.
    struct VAPID: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "vapid",
            abstract: "Make a VAPID key for Web Push (ES256, PKCS#8 PEM, mode 0600).",
            discussion: """
                The key signs every Web Push request of the apps it serves (RFC 8292); its public \
                half is the applicationServerKey browsers subscribe with, printed here and served \
                by GET /v1/apps/{id}/web-push. A subscription is bound to that key, so an existing \
                file is never replaced without --force. Name it in the configuration's vapid_keys \
                (docs/webpush.md).
                """
        )

        @Option(name: .shortAndLong, help: "The PEM file to write.")
        var out: String = "keys/vapid.pem"

        @Flag(help: "Replace an existing file (every browser must subscribe again).")
        var force = false

        func run() async throws {
            let key = try DevelopmentKeys.makeVAPIDKey(at: out, overwrite: force)
            print("wrote \(out) (mode 0600)")
            print("application server key \(key.applicationServerKey)")
        }
    }
}

extension KeysCommand {
    /// `herald keys master`: the master key that seals device keys at rest.
    struct Master: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "master",
            abstract: "Make a master key file (32 random bytes, mode 0600).",
            discussion: """
                The master key seals the relay's stored device keys. Losing it makes every \
                activated device unreadable, so an existing file is never replaced without --force. \
                Instead of a file, the relay also reads HERALD_MASTER_KEY (base64).
                """
        )

        @Option(name: .shortAndLong, help: "Where to write the key.")
        var out: String = "keys/master.key"

        @Flag(help: "Replace an existing key file (every device key sealed with it is lost).")
        var force = false

        func run() async throws {
            try KeyFiles.makeParentDirectory(of: out)
            let key = MasterKey.generate()
            try key.write(to: out, overwrite: force)
            print("wrote master key \(out) (mode 0600)")
        }
    }

    /// `herald keys apns`: an ES256 key in the form of Apple's `AuthKey_<KEYID>.p8`.
    struct APNs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apns",
            abstract: "Make an APNs-style ES256 auth key (AuthKey_<KEYID>.p8) for the sandbox and tests.",
            discussion: """
                Writes AuthKey_<KEYID>.p8 (a P-256 private key, PKCS#8 PEM, mode 0600), \
                AuthKey_<KEYID>.pub.pem (its public key, to register with the sandbox) and \
                AuthKey_<KEYID>.json (key id, team id and public key).
                """
        )

        @Option(name: .shortAndLong, help: "The directory to write into.")
        var out: String = "keys"

        @Option(name: .customLong("key-id"), help: "The 10-character key id (A–Z, 0–9); random when omitted.")
        var keyID: String?

        @Option(name: .customLong("team-id"), help: "The 10-character team id (A–Z, 0–9); random when omitted.")
        var teamID: String?

        @Flag(help: "Replace existing files with the same key id.")
        var force = false

        func validate() throws {
            for (name, value) in [("--key-id", keyID), ("--team-id", teamID)] {
                if let value, !AppleIdentifier.isValid(value) {
                    throw ValidationError(
                        "\(name) must be 10 characters from A–Z and 0–9, like Apple's (got '\(value)')"
                    )
                }
            }
        }

        func run() async throws {
            let metadata = try DevelopmentKeys.makeAPNsKey(in: out, keyID: keyID, teamID: teamID, overwrite: force)
            let base = (out as NSString).appendingPathComponent("AuthKey_\(metadata.keyID)")
            print("wrote \(base).p8 (mode 0600), \(base).pub.pem and \(base).json")
            print("key id \(metadata.keyID), team id \(metadata.teamID)")
        }

    }
}

extension KeysCommand {
    /// `herald keys fcm`: a Google service-account key file for the sandbox's FCM side.
    struct FCM: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fcm",
            abstract: "Make an FCM service-account JSON file (RSA 2048) for the sandbox and tests.",
            discussion: """
                Writes fcm-service-account.json (the form the Firebase console downloads: project_id, \
                private_key_id, private_key, client_email, token_uri; mode 0600) and \
                fcm-service-account.pub.json (client_email, private_key_id, project_id and the public \
                key, to register with the sandbox). The token URI points at the sandbox's token endpoint.
                """
        )

        @Option(name: .shortAndLong, help: "The directory to write into.")
        var out: String = "keys"

        @Option(help: "The Firebase project id.")
        var project: String = "herald-sandbox"

        @Option(name: .customLong("token-uri"), help: "Where the sender exchanges assertions for access tokens.")
        var tokenURI: String = "https://127.0.0.1:2196/token"

        @Flag(help: "Replace existing files.")
        var force = false

        func validate() throws {
            let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
            guard (6...30).contains(project.count), project.allSatisfy(allowed.contains) else {
                throw ValidationError("--project must be 6 to 30 characters from a–z, 0–9 and '-', like Google's")
            }
            guard tokenURI.hasPrefix("https://") || tokenURI.hasPrefix("http://") else {
                throw ValidationError("--token-uri must be an http(s) URL")
            }
        }

        func run() async throws {
            let account = try DevelopmentKeys.makeFCMServiceAccount(
                in: out,
                projectID: project,
                tokenURI: tokenURI,
                overwrite: force
            )
            print(
                "wrote \(DevelopmentKeys.fcmServiceAccountPath(in: out)) (mode 0600) and \(DevelopmentKeys.fcmPublicPath(in: out))"
            )
            print("project \(account.projectID), account \(account.clientEmail), key id \(account.privateKeyID)")
        }

    }
}

extension KeysCommand {
    /// `herald keys token`: a provider token for curl, h2load and other hand-made requests.
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print an APNs provider token (ES256 JWT) signed with a .p8 key.",
            discussion: """
                For requests made by hand. APNs (and the sandbox) refuse a second token for the same \
                key within 20 minutes (429 TooManyProviderTokenUpdates), so the token is shared with \
                `herald provider` through --token-cache (the provider's default, data/provider-token): \
                a token of this key younger than 50 minutes found there is printed again, and a new \
                one is written there, where the provider takes it up when it starts.
                """
        )

        @Option(help: "The AuthKey_<KEYID>.p8 file.")
        var key: String

        @Option(name: .customLong("key-id"), help: "The key id; read from the file name when omitted.")
        var keyID: String?

        @Option(name: .customLong("team-id"), help: "The team id.")
        var teamID: String

        @Option(
            name: .customLong("token-cache"),
            help:
                "The provider's token file, shared so hand-made requests and `herald provider` use one token; '' for none."
        )
        var tokenCache: String = "data/provider-token"

        func run() async throws {
            let name = (key as NSString).lastPathComponent
            let derived =
                name.hasPrefix("AuthKey_") && name.hasSuffix(".p8")
                ? String(name.dropFirst("AuthKey_".count).dropLast(".p8".count)) : nil
            guard let keyID = keyID ?? derived else {
                throw ValidationError("--key-id is needed when the file is not named AuthKey_<KEYID>.p8")
            }
            guard let pem = try? String(contentsOfFile: key, encoding: .utf8) else {
                throw ValidationError("cannot read \(key)")
            }
            let signer: ProviderTokenSigner
            do {
                signer = try ProviderTokenSigner(privateKeyPEM: pem, keyID: keyID, teamID: teamID)
            } catch {
                throw ValidationError("\(key) is not a P-256 private key in PEM form")
            }
            let now = Int64(Date().timeIntervalSince1970)
            if !tokenCache.isEmpty, let text = try? String(contentsOfFile: tokenCache, encoding: .utf8),
                let kept = signer.restore(text), now - kept.issuedAt >= 0,
                Duration.seconds(now - kept.issuedAt) < ProviderTokenManager.defaultRefreshAfter
            {
                print(kept.text)
                return
            }
            let token = try signer.makeToken(issuedAt: now)
            if !tokenCache.isEmpty {
                do {
                    let directory = FilePathText.parent(of: tokenCache)
                    if !directory.isEmpty {
                        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    }
                    try SecretFile.write(Array((token.text + "\n").utf8), to: tokenCache, mode: 0o600, overwrite: true)
                } catch {
                    throw ValidationError("cannot keep the token in \(tokenCache): \(error)")
                }
            }
            print(token.text)
        }
    }
}

/// What `herald keys apns` records beside the key, for registering it with the sandbox.
