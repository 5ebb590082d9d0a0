import Crypto
import Foundation
import HeraldCrypto
import HeraldEncoding
public import HeraldFCMCore
import HeraldMacros
import HeraldSandbox
public import HeraldWebPushCore

/// Small file helpers for key material: new files get their final mode before any byte is
/// written, and existing files are not replaced unless asked.
public enum KeyFiles {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Creates `path` and its missing parents, 0700 whatever the umask; an existing directory
    /// keeps its mode.
    public static func makeDirectory(_ path: String) throws {
        do {
            try SecretFile.makeDirectory(path)
        } catch {
            throw Failure(description: "cannot create directory \(path): \(error)")
        }
    }

    public static func makeParentDirectory(of path: String) throws {
        let parent = FilePathText.parent(of: path)
        if !parent.isEmpty { try makeDirectory(parent) }
    }

    /// Runs `body` holding an exclusive lock on `directory`/.herald-keys.lock (made, with the
    /// directory, when missing).
    ///
    /// Nodes started at the same moment on one keys directory would otherwise each find no key
    /// and make their own (two master keys, two development APNs keys), or one would read a key
    /// file the other is still writing. Under the lock the second finds the first's, whole.
    public static func withCreationLock<T>(in directory: String, _ body: () throws -> T) throws -> T {
        try makeDirectory(directory)
        let path = (directory as NSString).appendingPathComponent(".herald-keys.lock")
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw Failure(description: "cannot lock \(path): \(String(cString: strerror(errno)))")
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

/// Development credentials under `keys/`: an APNs-style key and an FCM service account, made by
/// `herald keys` and by `herald serve` in sandbox mode when there are none.
public enum DevelopmentKeys {
    /// Writes AuthKey_<KEYID>.p8 (0600), .pub.pem and .json into `directory`.
    public static func makeAPNsKey(
        in directory: String,
        keyID: String?,
        teamID: String?,
        overwrite: Bool
    ) throws
        -> APNsKeyMetadata
    {
        let keyID = keyID ?? AppleIdentifier.random()
        let teamID = teamID ?? AppleIdentifier.random()
        try KeyFiles.makeDirectory(directory)
        let key = P256.Signing.PrivateKey()
        let base = (directory as NSString).appendingPathComponent("AuthKey_\(keyID)")
        let metadata = APNsKeyMetadata(keyID: keyID, teamID: teamID, publicKeyPEM: key.publicKey.pemRepresentation)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try SecretFile.write(
            Array((key.pemRepresentation + "\n").utf8),
            to: base + ".p8",
            mode: 0o600,
            overwrite: overwrite
        )
        try SecretFile.write(
            Array((metadata.publicKeyPEM + "\n").utf8),
            to: base + ".pub.pem",
            mode: 0o644,
            overwrite: overwrite
        )
        try SecretFile.write(
            Array(try encoder.encode(metadata)) + [0x0A],
            to: base + ".json",
            mode: 0o644,
            overwrite: overwrite
        )
        return metadata
    }

    /// keys/fcm-service-account.json
    public static func fcmServiceAccountPath(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("fcm-service-account.json")
    }

    /// keys/fcm-service-account.pub.json: what the sandbox registers.
    public static func fcmPublicPath(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("fcm-service-account.pub.json")
    }

    /// Writes the account file (0600) and its public registration file into `directory`.
    public static func makeFCMServiceAccount(
        in directory: String,
        projectID: String,
        tokenURI: String,
        overwrite: Bool
    ) throws -> FCMServiceAccount {
        try KeyFiles.makeDirectory(directory)
        let (account, publicKeyPEM) = try FCMServiceAccount.generate(projectID: projectID, tokenURI: tokenURI)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try SecretFile.write(
            Array(try encoder.encode(account)) + [0x0A],
            to: fcmServiceAccountPath(in: directory),
            mode: 0o600,
            overwrite: overwrite
        )
        let registration = SandboxServiceAccount(
            clientEmail: account.clientEmail,
            privateKeyID: account.privateKeyID,
            projectID: account.projectID,
            publicKeyPEM: publicKeyPEM
        )
        try SecretFile.write(
            Array(try encoder.encode(registration)) + [0x0A],
            to: fcmPublicPath(in: directory),
            mode: 0o644,
            overwrite: overwrite
        )
        return account
    }

    /// The first AuthKey_*.json under `directory` with its .p8 beside it, made when there is none.
    public static func developmentAPNsKey(in directory: String) throws -> APNsKeyMetadata {
        if let found = findAPNsKey(in: directory) { return found }
        // Looked for again under the lock: another node starting now may have made one.
        return try KeyFiles.withCreationLock(in: directory) {
            try findAPNsKey(in: directory) ?? makeAPNsKey(in: directory, keyID: nil, teamID: nil, overwrite: false)
        }
    }

    private static func findAPNsKey(in directory: String) -> APNsKeyMetadata? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        for name in names where name.hasPrefix("AuthKey_") && name.hasSuffix(".json") {
            let path = (directory as NSString).appendingPathComponent(name)
            let p8 = String(path.dropLast(".json".count)) + ".p8"
            guard FileManager.default.fileExists(atPath: p8), let data = FileManager.default.contents(atPath: path),
                let metadata = try? JSONDecoder().decode(APNsKeyMetadata.self, from: data)
            else { continue }
            return metadata
        }
        return nil
    }

    /// Where a directory's development VAPID key is kept.
    public static func vapidKeyPath(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("vapid.pem")
    }

    /// Writes a VAPID key (ES256, PKCS#8 PEM, mode 0600) to `path`; answers it.
    public static func makeVAPIDKey(at path: String, overwrite: Bool) throws -> VAPIDKey {
        try KeyFiles.makeParentDirectory(of: path)
        let key = VAPIDKey.generate()
        try SecretFile.write(Array(key.pem.utf8) + [0x0A], to: path, mode: 0o600, overwrite: overwrite)
        return key
    }

    /// keys/vapid.pem, made when there is none: the sandbox mode's VAPID key.
    public static func developmentVAPIDKey(in directory: String) throws -> String {
        let path = vapidKeyPath(in: directory)
        if FileManager.default.fileExists(atPath: path) { return path }
        try KeyFiles.withCreationLock(in: directory) {
            if !FileManager.default.fileExists(atPath: path) { _ = try makeVAPIDKey(at: path, overwrite: false) }
        }
        return path
    }

    /// The sandbox mode's Huawei app id (the sandbox's Push Kit knows it by this id).
    public static let developmentHMSAppID = "100000001"

    /// keys/hms-client.secret (48 random base64url characters, mode 0600), made when there is
    /// none: the sandbox mode's Huawei app secret.
    public static func developmentHMSSecret(in directory: String) throws -> String {
        let path = (directory as NSString).appendingPathComponent("hms-client.secret")
        if FileManager.default.fileExists(atPath: path) { return path }
        try KeyFiles.withCreationLock(in: directory) {
            if !FileManager.default.fileExists(atPath: path) {
                var bytes = [UInt8](repeating: 0, count: 36)
                for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255) }
                try SecretFile.write(Array(Base64URL.encode(bytes).utf8) + [0x0A], to: path, mode: 0o600)
            }
        }
        return path
    }

    /// keys/fcm-service-account.json, made when there is none.
    public static func developmentServiceAccount(in directory: String) throws -> String {
        let path = fcmServiceAccountPath(in: directory)
        if FileManager.default.fileExists(atPath: path) { return path }
        try KeyFiles.withCreationLock(in: directory) {
            if !FileManager.default.fileExists(atPath: path) {
                _ = try makeFCMServiceAccount(
                    in: directory,
                    projectID: "herald-sandbox",
                    tokenURI: "https://127.0.0.1:2196/token",
                    overwrite: false
                )
            }
        }
        return path
    }
}

/// What `herald keys apns` writes beside a key: its ids and public key.
@MemberwiseInit
public struct APNsKeyMetadata: Codable, Equatable, Sendable {
    public var keyID: String
    public var teamID: String
    public var publicKeyPEM: String

    enum CodingKeys: String, CodingKey {
        case keyID = "key_id"
        case teamID = "team_id"
        case publicKeyPEM = "public_key_pem"
    }
}

/// Apple's key and team identifiers: 10 characters from A–Z and 0–9.
public enum AppleIdentifier {
    public static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

    public static func isValid(_ value: String) -> Bool {
        value.count == 10 && value.allSatisfy { alphabet.contains($0) }
    }

    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<10).map { _ in alphabet.randomElement(using: &generator)! })
    }
}
