import Foundation
import HeraldSandbox
import HeraldServer
import Synchronization
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

    @Test("nodes starting at once on an empty keys directory all get the same keys, made once")
    func keysMadeOnceWhenNodesStartTogether() throws {
        let root = NSTemporaryDirectory() + "herald-race-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/keys"
        let starts = 8
        let results = Mutex<[Int: Result<[String], any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: starts) { index in
            let outcome = Result { () throws -> [String] in
                let keys = ServerKeys(keysDirectory: directory, environment: [:])
                let master = try keys.masterKey()
                let api = try keys.apiKey()
                let apns = try DevelopmentKeys.developmentAPNsKey(in: directory)
                let account = try DevelopmentKeys.developmentServiceAccount(in: directory)
                return [
                    master.source, try Data(contentsOf: URL(fileURLWithPath: master.source)).base64EncodedString(),
                    api.key, apns.keyID,
                    try String(contentsOfFile: account, encoding: .utf8),
                ]
            }
            results.withLock { $0[index] = outcome }
        }
        let all = try results.withLock { results in try (0..<starts).map { try #require(results[$0]).get() } }
        #expect(Set(all.map { $0.joined(separator: "|") }).count == 1, "every start read the same keys")
        let p8s = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".p8") }
        #expect(p8s.count == 1, "\(p8s)")
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
