import Foundation
import HeraldWebPushCore
import Testing

@testable import HeraldSandbox

/// Browsers in the device registry: their subscriptions across a restart, and what the
/// registry keeps for them while offline.
@Suite(.timeLimit(.minutes(1)))
struct WebPushRegistryTests {
    static let key = VAPIDKey.generate()

    @Test func aRestartedRegistryKnowsTheSubscriptionsItMinted() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "registry-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/sandbox-devices.json"
        let before = DeviceRegistry(file: file)
        try before.load()
        func browser() throws -> SandboxDevice {
            try before.registerDevice(
                bundleID: "web-app",
                platform: .web,
                subscription: .init(
                    applicationServerKey: Self.key.applicationServerKey,
                    endpointBase: "https://127.0.0.1:2194"
                )
            )
        }
        let live = try browser()
        let gone = try browser()
        let expired = try browser()
        try before.uninstall(deviceID: gone.deviceID)
        try before.expire(token: try #require(expired.messagingToken))

        let after = DeviceRegistry(file: file)
        try after.load()
        for device in [live, gone, expired] {
            let endpoint = try #require(device.messagingToken)
            #expect(endpoint.hasPrefix("https://127.0.0.1:2194/wp/"))
            let id = try #require(DeviceRegistry.subscriptionID(of: endpoint))
            let subscription = try #require(after.webSubscription(id: id))
            #expect(subscription == before.webSubscription(id: id))
            #expect(subscription.applicationServerKey == Self.key.publicKey)
            #expect(try after.device(id: device.deviceID).platform == .web)
        }
        let states = [live, gone, expired].map { device in
            switch after.webSubscription(id: DeviceRegistry.subscriptionID(of: device.messagingToken!)!)?.state {
            case .active?: "active"
            case .unregistered?: "unregistered"
            case .expired?: "expired"
            case nil: "none"
            }
        }
        #expect(states == ["active", "unregistered", "expired"])
        #expect(throws: SandboxError.self) { try after.checkConnectable(deviceID: gone.deviceID) }
        #expect(throws: Never.self) { try after.checkConnectable(deviceID: expired.deviceID) }
    }

    @Test func anEndpointsIdIsItsLastSegmentAfterWp() {
        #expect(DeviceRegistry.subscriptionID(of: "https://127.0.0.1:2194/wp/abc") == "abc")
        #expect(DeviceRegistry.subscriptionID(of: "https://127.0.0.1:2194/wp/") == nil)
        #expect(DeviceRegistry.subscriptionID(of: "https://127.0.0.1:2194/wp/a/b") == nil)
        #expect(DeviceRegistry.subscriptionID(of: "abc") == nil)
    }

    @Test func theRegistryKeepsOneMessagePerTopicAndDropsTheOldestBeyondItsLimit() {
        var web = DeviceRegistry.WebPushDevices()
        func message(_ id: String, topic: String? = nil) -> SandboxWebPushMessage {
            SandboxWebPushMessage(id: id, endpoint: "e", body: "", ttl: 60, topic: topic, sentAt: 0)
        }
        web.store(.init(message: message("a", topic: "t"), expiresAt: 100), for: "d", now: 0)
        web.store(.init(message: message("b"), expiresAt: 100), for: "d", now: 0)
        web.store(.init(message: message("c", topic: "t"), expiresAt: 100), for: "d", now: 0)
        web.store(.init(message: message("old"), expiresAt: 10), for: "d", now: 0)
        #expect(web.takeStored(for: "d", now: 50).map(\.id) == ["b", "c"])
        #expect(web.takeStored(for: "d", now: 50).isEmpty)
        for index in 0..<(DeviceRegistry.storedMessageLimit + 5) {
            web.store(.init(message: message("\(index)"), expiresAt: 100), for: "d", now: 0)
        }
        let kept = web.takeStored(for: "d", now: 0)
        #expect(kept.count == DeviceRegistry.storedMessageLimit)
        #expect(kept.first?.id == "5")
    }
}
