import Foundation
import HeraldFCMCore
import HeraldSandbox
import HummingbirdWSClient
import Logging
import NIOCore
import Testing

/// Accepted `messages:send` requests reaching Android devices: at once, or stored while offline.
@Suite(.timeLimit(.minutes(2))) struct FCMDeliveryTests {
    /// The whole path over the network: token endpoint, messages:send over HTTP/2, and the
    /// device WebSocket.
    @Test func aSendReachesAConnectedAndroidDeviceOverTheWebSocket() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let device = try sandbox.androidDevice(project: nil)  // the only account's project
            #expect(device.platform == .android)
            #expect(device.projectID == FCMFixtures.project)
            #expect(device.voipToken == nil)
            let token = try #require(device.messagingToken)
            let url =
                sandbox.endpoints.controlURL.replacingOccurrences(of: "http://", with: "ws://")
                + "/sandbox/devices/\(device.deviceID)/connect"
            let (messages, continuation) = AsyncStream.makeStream(of: String.self)
            let client = Task {
                try await WebSocketClient.connect(url: url, logger: Logger(label: "test.ws")) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { continuation.yield(text) }
                    }
                    continuation.finish()
                }
            }
            defer { client.cancel() }
            var iterator = messages.makeAsyncIterator()
            // One token, the registration token, and no VoIP token.
            let first = try #require(await iterator.next())
            let tokenEvent = try JSONDecoder().decode(SandboxDeviceEvent.self, from: Data(first.utf8))
            #expect(tokenEvent == .token(kind: .messaging, token: token))
            #expect(try sandbox.core.device(id: device.deviceID).connected)

            let bearer = try await sandbox.accessToken()
            let data = ["sealed": "AAEC/+==", "kind": "message", "text": "héllo ✓ \"quoted\""]
            let reply = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(
                    to: token,
                    data: data,
                    android: ["priority": "HIGH", "ttl": "60s", "collapse_key": "chat"]
                ),
                bearer: bearer
            )
            #expect(reply.status == 200)
            let name = try #require(reply.json?["name"] as? String)
            #expect(name.wholeMatch(of: /projects\/herald-test\/messages\/0:\d{13}%[0-9a-f]{16}/) != nil)

            let text = try #require(await iterator.next())
            let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(object["type"] as? String == "fcm_message")
            let message = try #require(object["message"] as? [String: Any])
            #expect(message["name"] as? String == name)
            #expect(message["token"] as? String == token)
            #expect(message["data"] as? [String: String] == data)
            #expect(message["priority"] as? String == "HIGH")
            #expect(message["ttl"] as? String == "60s")
            #expect(message["collapse_key"] as? String == "chat")
            #expect((message["sent_at"] as? Int).map { $0 > 1_600_000_000_000 } == true)
            #expect(sandbox.core.fcmInspection(token: token).last?.delivery == "delivered")
        }
    }

    @Test func messagesForAnOfflineDeviceArriveInOrderWhenItConnects() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let device = try sandbox.androidDevice()
            let token = try #require(device.messagingToken)
            let bearer = try await sandbox.accessToken()
            for index in 0..<3 {
                let reply = try await sandbox.fcmSend(
                    SandboxHarness.fcmMessage(to: token, data: ["n": "\(index)"]),
                    bearer: bearer
                )
                #expect(reply.status == 200)
            }
            #expect(sandbox.core.fcmInspection(token: token).map(\.delivery) == ["stored", "stored", "stored"])
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            #expect(await events.next() == .token(kind: .messaging, token: token))
            var received: [String?] = []
            for _ in 0..<3 { received.append(try #require(await events.nextFCMMessage()).data["n"]) }
            #expect(received == ["0", "1", "2"])
            // A message without android options: NORMAL priority, FCM's default ttl.
            let live = try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token), bearer: bearer)
            #expect(live.status == 200)
            let message = try #require(await events.nextFCMMessage())
            #expect(message.priority == .normal)
            #expect(message.ttl == nil)
            #expect(message.name == live.json?["name"] as? String)
        }
    }

    @Test func aCollapseKeyReplacesAndTTLZeroIsDiscarded() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let device = try sandbox.androidDevice()
            let token = try #require(device.messagingToken)
            let bearer = try await sandbox.accessToken()
            let sends: [(String, [String: String])] = [
                ("a", ["collapse_key": "x"]),
                ("b", ["collapse_key": "y"]),
                ("c", ["collapse_key": "x"]),
                ("now-or-never", ["ttl": "0s"]),
            ]
            for (text, android) in sends {
                let reply = try await sandbox.fcmSend(
                    SandboxHarness.fcmMessage(to: token, data: ["text": text], android: android),
                    bearer: bearer
                )
                #expect(reply.status == 200)
            }
            let deliveries = sandbox.core.fcmInspection(token: token).map(\.delivery)
            #expect(deliveries == ["stored", "stored", "stored", "discarded: device offline and ttl is 0s"])
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            #expect(try #require(await events.nextFCMMessage()).data["text"] == "b")
            #expect(try #require(await events.nextFCMMessage()).data["text"] == "c")
            // Nothing else was kept: the next message is one sent now.
            let live = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: token, data: ["text": "live"]),
                bearer: bearer
            )
            #expect(live.status == 200)
            #expect(try #require(await events.nextFCMMessage()).data["text"] == "live")
        }
    }

    @Test func atMostAHundredMessagesAreKeptPerDevice() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let device = try sandbox.androidDevice()
            let token = try #require(device.messagingToken)
            let bearer = try await sandbox.accessToken()
            for index in 0..<102 {
                let reply = try await sandbox.fcmSend(
                    SandboxHarness.fcmMessage(to: token, data: ["n": "\(index)"]),
                    bearer: bearer
                )
                #expect(reply.status == 200)
            }
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            // The two oldest were dropped.
            #expect(try #require(await events.nextFCMMessage()).data["n"] == "2")
            for index in 3..<102 {
                #expect(try #require(await events.nextFCMMessage()).data["n"] == "\(index)")
            }
            let live = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: token, data: ["n": "live"]),
                bearer: bearer
            )
            #expect(live.status == 200)
            #expect(try #require(await events.nextFCMMessage()).data["n"] == "live")
        }
    }

    @Test func validateOnlyAnswersWithoutDelivering() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let device = try sandbox.androidDevice()
            let token = try #require(device.messagingToken)
            let bearer = try await sandbox.accessToken()
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            #expect(await events.next() == .token(kind: .messaging, token: token))
            let dryRun = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: token, data: ["text": "dry"], validateOnly: true),
                bearer: bearer
            )
            #expect(dryRun.status == 200)
            #expect(dryRun.json?["name"] as? String == "projects/\(FCMFixtures.project)/messages/fake_message_id")
            #expect(sandbox.core.fcmInspection(token: token).last?.delivery == "validate_only")
            // validate_only still checks everything.
            let invalid = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: token, data: ["from": "x"], validateOnly: true),
                bearer: bearer
            )
            #expect(invalid.status == 400)
            // The first message the device gets is the real one sent after.
            let real = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: token, data: ["text": "real"]),
                bearer: bearer
            )
            #expect(real.status == 200)
            #expect(try #require(await events.nextFCMMessage()).data["text"] == "real")
        }
    }

    @Test func aDelayedRegistrationTokenReachesTheDeviceLater() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let device = try sandbox.core.registerDevice(
                bundleID: FCMFixtures.packageName,
                messagingTokenDelay: .milliseconds(200),
                platform: .android
            )
            #expect(device.messagingToken == nil)
            #expect(device.messagingTokenReadyInMs > 0)
            #expect(device.voipTokenReadyInMs == 0)
            var events = try sandbox.core.connect(deviceID: device.deviceID).makeAsyncIterator()
            guard case .token(let kind, let token) = try #require(await events.next()) else {
                Issue.record("expected the registration token")
                return
            }
            #expect(kind == .messaging)
            #expect(token.wholeMatch(of: /[A-Za-z0-9_-]{22}:APA91b[A-Za-z0-9_-]{134}/) != nil)
            #expect(try sandbox.core.device(id: device.deviceID).messagingToken == token)
        }
    }

    @Test func theDeviceEventJSONCarriesEveryField() throws {
        let message = SandboxFCMMessage(name: "projects/p/messages/0:1%0", token: "t", data: ["a": "b"], sentAt: 5)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(SandboxDeviceEvent.fcmMessage(message)), as: UTF8.self)
        #expect(
            text == #"{"message":{"collapse_key":null,"data":{"a":"b"},"name":"projects/p/messages/0:1%0","#
                + #""priority":"NORMAL","sent_at":5,"token":"t","ttl":null},"type":"fcm_message"}"#
        )
        #expect(try JSONDecoder().decode(SandboxDeviceEvent.self, from: Data(text.utf8)) == .fcmMessage(message))
    }
}
