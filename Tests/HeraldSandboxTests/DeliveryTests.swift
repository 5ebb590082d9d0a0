import AsyncHTTPClient
import Foundation
import HeraldSandbox
import HummingbirdWSClient
import Logging
import NIOCore
import Testing

@Suite(.timeLimit(.minutes(2))) struct DeliveryTests {
    @Test func aConnectedDeviceReceivesEveryPushInOrder() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            var sent: [String] = []
            for index in 0..<30 {
                let reply = try await sandbox.push(
                    to: token,
                    payload: #"{"aps":{"alert":"n\#(index)"}}"#,
                    headers: [("apns-priority", "5"), ("apns-collapse-id", "thread-\(index % 3)")]
                )
                #expect(reply.status == 200)
                sent.append(try #require(reply.headers.first(name: "apns-id")))
            }
            var received: [SandboxNotification] = []
            for _ in 0..<30 { received.append(try #require(await events.nextNotification())) }
            #expect(received.map(\.apnsID) == sent)
            #expect(received.first?.payload == #"{"aps":{"alert":"n0"}}"#)
            #expect(
                received.allSatisfy { $0.priority == 5 && $0.pushType == .alert && $0.topic == SandboxHarness.bundleID }
            )
            #expect(received.map(\.collapseID) == (0..<30).map { "thread-\($0 % 3)" })
            #expect(sandbox.core.inspection(token: token).allSatisfy { $0.delivery == "delivered" })
        }
    }

    @Test func anOfflineDeviceGetsOnlyTheLastStoredNotificationOnReconnect() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            let future = String(SandboxHarness.now() + 3600)
            for text in ["first", "second", "last"] {
                let reply = try await sandbox.push(
                    to: token,
                    payload: #"{"aps":{"alert":"\#(text)"}}"#,
                    headers: [("apns-expiration", future)]
                )
                #expect(reply.status == 200)
            }
            #expect(sandbox.core.inspection(token: token).map(\.delivery) == ["stored", "stored", "stored"])
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            let stored = try #require(await events.nextNotification())
            #expect(stored.payload == #"{"aps":{"alert":"last"}}"#)
            // Nothing else was stored: the next event is a push sent now.
            #expect(try await sandbox.push(to: token, payload: #"{"aps":{"alert":"live"}}"#).status == 200)
            #expect(try #require(await events.nextNotification()).payload == #"{"aps":{"alert":"live"}}"#)
        }
    }

    @Test func expirationZeroAndPastExpirationsAreNeverStored() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            #expect(try await sandbox.push(to: token, headers: [("apns-expiration", "0")]).status == 200)
            let past = String(SandboxHarness.now() - 10)
            #expect(try await sandbox.push(to: token, headers: [("apns-expiration", past)]).status == 200)
            let deliveries = sandbox.core.inspection(token: token).compactMap(\.delivery)
            #expect(deliveries.count == 2)
            #expect(deliveries.allSatisfy { $0.hasPrefix("discarded") })
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            #expect(try await sandbox.push(to: token, payload: #"{"aps":{"alert":"now"}}"#).status == 200)
            #expect(try #require(await events.nextNotification()).payload == #"{"aps":{"alert":"now"}}"#)
        }
    }

    @Test func aStoredNotificationIsDroppedAtItsExpiration() async throws {
        let clock = SandboxClock()
        try await SandboxHarness.with(SandboxHarness.Setup { $0.clock = clock }) { sandbox in
            // Two offline devices get a notification that expires at the same second.
            let early = try sandbox.device()
            let late = try sandbox.device()
            let expiration = clock.epochMilliseconds / 1000 + 2
            for device in [early, late] {
                var connection = SandboxConnectionState()
                let token = try #require(device.messagingToken)
                #expect(sandbox.handle(to: token, expiration: expiration, connection: &connection)?.status == 200)
                #expect(sandbox.core.inspection(token: token).last?.delivery == "stored")
            }
            // Shortly before the expiration it is still kept for a device that connects. (The
            // sandbox's clock runs in real time beside its offset: a margin of one millisecond
            // was sometimes gone before the device connected on a loaded machine, and the
            // notification with it.)
            let margin: Int64 = 500
            clock.advance(by: .milliseconds(expiration * 1000 - clock.epochMilliseconds - margin))
            var earlyEvents = try sandbox.core.connect(deviceID: early.deviceID).makeAsyncIterator()
            #expect(try #require(await earlyEvents.nextNotification()).expiration == expiration)
            // At the expiration it is gone: the first thing the other device gets is a new push.
            clock.advance(by: .milliseconds(margin))
            let token = try #require(late.messagingToken)
            var events = try sandbox.core.connect(deviceID: late.deviceID).makeAsyncIterator()
            #expect(try await sandbox.push(to: token, payload: #"{"aps":{"alert":"after"}}"#).status == 200)
            #expect(try #require(await events.nextNotification()).payload == #"{"aps":{"alert":"after"}}"#)
        }
    }

    @Test func tokensReachTheDeviceAfterTheirDelays() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.core.registerDevice(
                bundleID: SandboxHarness.bundleID,
                messagingTokenDelay: .milliseconds(300),
                voipTokenDelay: .zero
            )
            #expect(device.messagingToken == nil)
            #expect(device.messagingTokenReadyInMs > 0)
            #expect(device.voipToken != nil)
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            guard case .token(let firstKind, _) = try #require(await events.next()) else {
                Issue.record("expected a token first")
                return
            }
            #expect(firstKind == .voip)
            guard case .token(let secondKind, let messaging) = try #require(await events.next()) else {
                Issue.record("expected the messaging token")
                return
            }
            #expect(secondKind == .messaging)
            #expect(try sandbox.core.device(id: device.deviceID).messagingToken == messaging)
        }
    }

    @Test func uninstallingEndsTheDeviceConnection() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            _ = await events.next()
            _ = await events.next()
            try sandbox.core.uninstall(deviceID: device.deviceID)
            #expect(await events.next() == nil)
            #expect(throws: SandboxError.self) { try sandbox.core.connect(deviceID: device.deviceID) }
        }
    }

    /// The device connection over the network: WebSocket, JSON messages.
    @Test func theWebSocketCarriesTokensAndNotifications() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            let url =
                sandbox.endpoints.controlURL.replacingOccurrences(of: "http://", with: "ws://")
                + "/sandbox/devices/\(device.deviceID)/connect"
            let (messages, continuation) = AsyncStream.makeStream(of: String.self)
            let logger = Logger(label: "test.ws")
            let client = Task {
                try await WebSocketClient.connect(url: url, logger: logger) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { continuation.yield(text) }
                    }
                    continuation.finish()
                }
            }
            var iterator = messages.makeAsyncIterator()
            var types: [String] = []
            for _ in 0..<2 {
                let text = try #require(await iterator.next())
                let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                types.append(try #require(object["type"] as? String))
            }
            #expect(types == ["token", "token"])
            // The device is connected once both tokens arrived; now a push travels over the socket.
            #expect(try sandbox.core.device(id: device.deviceID).connected)
            let reply = try await sandbox.push(to: token, payload: #"{"aps":{"alert":"over ws"}}"#)
            #expect(reply.status == 200)
            let text = try #require(await iterator.next())
            let event = try JSONDecoder().decode(SandboxDeviceEvent.self, from: Data(text.utf8))
            guard case .notification(let notification) = event else {
                Issue.record("expected a notification, got \(text)")
                return
            }
            #expect(notification.payload == #"{"aps":{"alert":"over ws"}}"#)
            #expect(notification.apnsID == reply.headers.first(name: "apns-id"))
            client.cancel()
        }
    }
}
