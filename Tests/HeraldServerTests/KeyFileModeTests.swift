import Foundation
import HeraldSandbox
import HeraldServer
import Testing

/// Every file Herald writes with a secret is 0600, in a directory it made 0700, whatever the
/// umask; public halves may be read by others, but live in the same closed directory.
@Suite(.timeLimit(.minutes(1)))
struct KeyFileModeTests {
    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test("the master key, the API key and their directories, each missing level made 0700")
    func serverKeys() throws {
        let root = NSTemporaryDirectory() + "herald-keys-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let keys = ServerKeys(keysDirectory: root + "/deploy/keys", environment: [:])
        _ = try keys.masterKey()
        _ = try keys.apiKey()
        #expect(try Self.mode(root + "/deploy/keys/master.key") == 0o600)
        #expect(try Self.mode(root + "/deploy/keys/api.key") == 0o600)
        for directory in [root, root + "/deploy", root + "/deploy/keys"] {
            #expect(try Self.mode(directory) == 0o700, "\(directory)")
        }
    }

    @Test("`herald keys apns` and the FCM account: private keys 0600, in 0700 directories")
    func developmentKeys() throws {
        let root = NSTemporaryDirectory() + "herald-devkeys-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let metadata = try DevelopmentKeys.makeAPNsKey(in: root + "/a/keys", keyID: nil, teamID: nil, overwrite: false)
        _ = try DevelopmentKeys.makeFCMServiceAccount(
            in: root + "/b/keys",
            projectID: "herald-test",
            tokenURI: "https://127.0.0.1:1/token",
            overwrite: false
        )
        #expect(try Self.mode(root + "/a/keys/AuthKey_\(metadata.keyID).p8") == 0o600)
        #expect(try Self.mode(DevelopmentKeys.fcmServiceAccountPath(in: root + "/b/keys")) == 0o600)
        for directory in [root, root + "/a", root + "/a/keys", root + "/b", root + "/b/keys"] {
            #expect(try Self.mode(directory) == 0o700, "\(directory)")
        }
    }

    @Test("the sandbox's CA key and server key, in a keys directory it made 0700")
    func sandboxAuthority() throws {
        let root = NSTemporaryDirectory() + "herald-sandbox-ca-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let tls = try SandboxCertificateAuthority.ensure(directory: root + "/keys")
        #expect(try Self.mode(tls.privateKeyPath) == 0o600)
        for directory in [root, root + "/keys"] {
            #expect(try Self.mode(directory) == 0o700, "\(directory)")
        }
    }
}
