import Foundation
import Testing

@testable import HeraldSandbox

/// The registry kept in a file: a restarted sandbox still knows the devices and tokens it
/// issued, with their states, and refuses a file that is not a registry.
@Suite(.timeLimit(.minutes(1)))
struct DeviceRegistryFileTests {
    static let app = SandboxApp(bundleID: "com.example.chat", teamID: "TEAM123456")

    static func temporaryFile() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appending(path: "registry-\(UUID().uuidString)").path
        return directory + "/data/sandbox-devices.json"
    }

    @Test func aRestartedRegistryKnowsTheTokensIssuedBefore() async throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (file as NSString).deletingLastPathComponent) }
        let before = DeviceRegistry(apps: [Self.app], file: file)
        try before.load()
        let phone = try before.registerDevice(bundleID: Self.app.bundleID)
        let pending = try before.registerDevice(bundleID: Self.app.bundleID, messagingTokenDelay: .seconds(600))
        let gone = try before.registerDevice(bundleID: Self.app.bundleID)
        try before.uninstall(deviceID: gone.deviceID)
        let android = try before.registerDevice(bundleID: "com.example.android", platform: .android, projectID: "p1")
        try before.register(app: SandboxApp(bundleID: "com.example.other", teamID: "TEAM999999"))

        // A new registry on the same file: what the first issued, as it was.
        let after = DeviceRegistry(file: file)
        try after.load()
        let messaging = try #require(phone.messagingToken)
        let voip = try #require(phone.voipToken)
        #expect(after.apnsToken(messaging) == before.apnsToken(messaging))
        #expect(after.apnsToken(messaging)?.state == .active)
        #expect(after.apnsToken(voip)?.topic == Self.app.bundleID + ".voip")
        #expect(after.apnsToken(voip)?.kind == .voip)
        let goneToken = try #require(gone.messagingToken)
        guard case .unregistered = after.apnsToken(goneToken)?.state else {
            Issue.record(
                "the uninstalled device's token came back as \(String(describing: after.apnsToken(goneToken)))"
            )
            return
        }
        let fcmToken = try #require(android.messagingToken)
        #expect(after.fcmToken(fcmToken) == FCMTokenRecord(deviceID: android.deviceID, projectID: "p1"))
        #expect(after.team(ofApp: Self.app.bundleID) == Self.app.teamID)
        #expect(after.team(ofApp: "com.example.other") == "TEAM999999")
        // A token not handed out yet is still not handed out.
        let waiting = try after.device(id: pending.deviceID)
        #expect(waiting.messagingToken == nil)
        #expect(waiting.messagingTokenReadyInMs > 590_000)
        // The device can connect again, and its tokens come first.
        var events = try after.connect(deviceID: phone.deviceID).makeAsyncIterator()
        #expect(await events.next() == .token(kind: .messaging, token: messaging))
    }

    @Test("a production device's tokens stay production ones across a restart; development is the default")
    func environmentsSurviveARestart() throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (file as NSString).deletingLastPathComponent) }
        let before = DeviceRegistry(apps: [Self.app], file: file)
        try before.load()
        let store = try before.registerDevice(bundleID: Self.app.bundleID, apnsEnvironment: .production)
        let debug = try before.registerDevice(bundleID: Self.app.bundleID)
        #expect(store.apnsEnvironment == .production && debug.apnsEnvironment == .development)
        #expect(throws: SandboxError.self) {
            try before.registerDevice(
                bundleID: "com.example.android",
                platform: .android,
                projectID: "p1",
                apnsEnvironment: .production
            )
        }

        let after = DeviceRegistry(file: file)
        try after.load()
        #expect(after.apnsToken(try #require(store.messagingToken))?.environment == .production)
        #expect(after.apnsToken(try #require(store.voipToken))?.environment == .production)
        #expect(after.apnsToken(try #require(debug.messagingToken))?.environment == .development)
        #expect(try after.device(id: store.deviceID).apnsEnvironment == .production)
    }

    @Test("a change appends one line, never rewrites the file; a restart compacts it to a line per device")
    func changesAreAppended() throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (file as NSString).deletingLastPathComponent) }
        func lines() throws -> [String] {
            try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        }
        let registry = DeviceRegistry(apps: [Self.app], file: file)
        try registry.load()
        let first = try registry.registerDevice(bundleID: Self.app.bundleID)
        // The first change writes the file whole: its header, the app, the device.
        #expect(try lines().count == 3)
        let inode = try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int
        for _ in 0..<200 { _ = try registry.registerDevice(bundleID: Self.app.bundleID) }
        try registry.uninstall(deviceID: first.deviceID)
        #expect(try lines().count == 3 + 200 + 1)
        // Appended in place (an atomic rewrite would have made a new file).
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int == inode)

        let restarted = DeviceRegistry(file: file)
        try restarted.load()
        #expect(try lines().count == 1 + 1 + 201)
        guard case .unregistered = restarted.apnsToken(try #require(first.messagingToken))?.state else {
            Issue.record("the uninstall, a later line of the same device, did not win")
            return
        }
    }

    @Test func aFileThatIsNotARegistryIsRefusedNotOverwritten() throws {
        let file = try Self.temporaryFile()
        let directory = (file as NSString).deletingLastPathComponent
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(#"{"devices": 3}"#.utf8).write(to: URL(filePath: file))
        let registry = DeviceRegistry(file: file)
        #expect(throws: SandboxError.registryFile("")) { try registry.load() }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == #"{"devices": 3}"#)
    }
}
