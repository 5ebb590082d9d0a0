import Foundation
import HeraldCrypto
import HeraldDevice
import HeraldRelay
import HeraldSimulation
import HeraldStore
import Testing

@testable import HeraldCommands

extension Pairing {
    /// The FCM data the relay sends this device for message m-1 in conversation c-1.
    func messageData() throws -> [String: String] {
        let content = MessageContent(
            messageID: "m-1",
            conversationID: "c-1",
            senderID: "agent-7",
            senderName: "Dana",
            text: "Your order shipped",
            sentAt: 1
        )
        let app = AppRecord(id: "com.example.chat", teamID: "T")
        return try PushPayload.fcmMessage(
            content,
            app: app,
            for: PushTarget(deviceID: deviceID, pushID: "push-1"),
            sealer: sealer
        ).data
    }

    func callData() throws -> [String: String] {
        let call = CallContent(callID: "call-9", callerID: "a", callerName: "Dana", media: .audio, startedAt: 1)
        return try PushPayload.fcmCall(call, for: PushTarget(deviceID: deviceID, pushID: "push-1"), sealer: sealer)
    }
}

/// Issue 14, item 2: the carrier of a push can rewrite its clear fields; the device routes by
/// what the envelope authenticates and reports a disagreement as tampering.
@Suite("Clear routing fields against the sealed content", .timeLimit(.minutes(1)))
struct ClearRoutingTests {
    static let clearConversation = #","conversation_id":"c-1""#

    /// The generic text, under the sealed conversation, to fetch on tap, reported as tampered.
    static func expectTampered(_ shown: DisplayedNotification?, opened: Bool, diagnostic: String?) {
        #expect(!opened)
        #expect(diagnostic?.contains("tampered") == true, "diagnostic: \(diagnostic ?? "none")")
        #expect(shown?.title == "New message" && shown?.body == "You have a new message")
        #expect(shown?.conversationID == "c-1" && shown?.thread == "c-1")
        #expect(shown?.messageID == "m-1" && shown?.fetchOnTap == true)
    }

    @Test("iOS: a changed or removed clear conversation_id or thread-id shows the generic text, reported tampered")
    func iosConversation() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let sent = try pairing.messagePayload()
        let cases = [
            sent.replacingOccurrences(of: Self.clearConversation, with: #","conversation_id":"evil-thread""#),
            sent.replacingOccurrences(of: Self.clearConversation, with: ""),
            sent.replacingOccurrences(of: #""thread-id":"c-1""#, with: #""thread-id":"evil-thread""#),
            sent.replacingOccurrences(of: #","thread-id":"c-1""#, with: ""),
        ]
        for payload in cases {
            #expect(payload != sent)
            let extensionEmulator = NotificationServiceEmulator(store: pairing.store, rememberedPushes: 0)
            let result = await extensionEmulator.receive(payload: payload, pushType: "alert")
            #expect(result.ranExtension)
            Self.expectTampered(result.notification, opened: result.opened, diagnostic: result.diagnostic)
        }
        // The untouched push still opens, threaded by the sealed conversation.
        let result = await NotificationServiceEmulator(store: pairing.store).receive(payload: sent, pushType: "alert")
        #expect(
            result.opened && result.notification?.thread == "c-1" && result.notification?.body == "Your order shipped"
        )
    }

    @Test("Android: a changed or removed clear conversation_id shows the generic text, reported tampered")
    func androidConversation() throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let sent = try pairing.messageData()
        var changed = sent
        changed["conversation_id"] = "evil-thread"
        var removed = sent
        removed["conversation_id"] = nil
        let service = FirebaseMessagingServiceEmulator(
            store: pairing.store,
            rememberedPushes: 0,
            clock: TestClock(frozenAt: 1)
        )
        for data in [changed, removed] {
            guard case .notification(let shown, let opened, let diagnostic, _) = service.onMessageReceived(data) else {
                Issue.record("a tampered message did not become a notification")
                continue
            }
            Self.expectTampered(shown, opened: opened, diagnostic: diagnostic)
        }
        guard case .notification(let shown, true, nil, nil) = service.onMessageReceived(sent) else {
            Issue.record("the untouched message did not open")
            return
        }
        #expect(shown.thread == "c-1" && shown.title == "Dana")
    }

    @Test("herald extension decrypt: tampered captures of both networks do not open and say tampered")
    func harness() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        var data = try pairing.messageData()
        data["conversation_id"] = "evil-thread"
        let fcm = try JSONSerialization.data(withJSONObject: ["data": data])
        let payload = try pairing.messagePayload().replacingOccurrences(of: Self.clearConversation, with: "")
        let apns = try JSONSerialization.data(withJSONObject: ["payload": payload, "push_type": "alert"])
        for capture in [fcm, apns] {
            let outcome = try await ExtensionCommand.open(capture, store: pairing.store, budget: .seconds(5))
            Self.expectTampered(outcome.notification, opened: outcome.opened, diagnostic: outcome.diagnostic)
        }
    }

    /// docs/test-vectors/envelope-v1.json's `routing` entries, through the emulators.
    @Test("the test vectors' routing entries: opened, tampered or refused as the file says")
    func vectorRouting() async throws {
        let url = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "docs/test-vectors/envelope-v1.json")
        let file = try JSONDecoder().decode(EnvelopeVectorFile.self, from: Data(contentsOf: url))
        #expect(file.routing.contains { $0.expect == "tampered" && $0.network == "apns" })
        #expect(file.routing.contains { $0.expect == "tampered" && $0.network == "fcm" })
        let bases = Dictionary(uniqueKeysWithValues: file.vectors.map { ($0.name ?? "", $0) })
        for entry in file.routing {
            let vector = try #require(bases[entry.base])
            let directory = NSTemporaryDirectory() + "herald-routing-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try AppGroupStore(directory: directory)
            let secret = try #require(ByteEncoding.bytes(hex: vector.deviceSecretKey))
            let relayKey = try PublicKey(bytes: try #require(ByteEncoding.bytes(hex: vector.relayPublicKey)))
            let keyID = try store.saveKeys(KeyPair(secretKey: SecureBytes(copying: secret)), relayPublicKey: relayKey)
            try store.save(
                AppGroupStore.Registration(
                    deviceID: vector.deviceID,
                    userID: "u",
                    app: "com.example.chat",
                    relayURL: "http://127.0.0.1:1",
                    keyID: keyID.hex,
                    previousKeyID: nil,
                    contentPolicy: .full
                )
            )
            var opened = false
            var diagnostic: String?
            if entry.network == "apns" {
                let result = await NotificationServiceEmulator(store: store, rememberedPushes: 0)
                    .receive(payload: try #require(entry.payload), pushType: entry.pushType ?? "alert")
                (opened, diagnostic) = (result.opened, result.diagnostic)
            } else {
                let service = FirebaseMessagingServiceEmulator(
                    store: store,
                    rememberedPushes: 0,
                    clock: TestClock(frozenAt: 1)
                )
                switch service.onMessageReceived(try #require(entry.data)) {
                case .notification(_, let isOpened, let why, _): (opened, diagnostic) = (isOpened, why)
                case .call(_, _, _, let why): (opened, diagnostic) = (why == nil, why)
                case .ignored(let why), .duplicate(let why): (opened, diagnostic) = (false, why)
                }
            }
            let outcome = opened ? "opened" : diagnostic?.contains("tampered") == true ? "tampered" : "refused"
            #expect(outcome == entry.expect, "routing entry \(entry.name): \(diagnostic ?? "opened")")
        }
    }
}

/// Issue 14, item 9: the relay sends at least once, so after a crash a phone can get a push
/// again; it shows each push once.
@Suite("Repeated pushes", .timeLimit(.minutes(1)))
struct RepeatedPushTests {
    @Test("iOS: a re-delivered message is shown once, also by the next extension process")
    func ios() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let payload = try pairing.messagePayload()
        let first = await NotificationServiceEmulator(store: pairing.store).receive(payload: payload, pushType: "alert")
        #expect(first.opened && first.notification != nil && !first.duplicate)
        let again = await NotificationServiceEmulator(store: pairing.store).receive(payload: payload, pushType: "alert")
        #expect(again.duplicate && again.notification == nil)
        #expect(again.diagnostic?.contains("message:m-1") == true)
        #expect(pairing.store.shownPushIDs() == ["message:m-1"])
    }

    @Test("iOS, content policy none: a re-delivered push is shown once")
    func iosPolicyNone() async throws {
        let pairing = try Pairing(policy: .none)
        defer { pairing.remove() }
        let payload = try pairing.messagePayload(policy: .none)
        let emulator = NotificationServiceEmulator(store: pairing.store)
        #expect(await emulator.receive(payload: payload, pushType: "alert").notification != nil)
        let again = await emulator.receive(payload: payload, pushType: "alert")
        #expect(again.duplicate && again.notification == nil)
    }

    @Test("Android: a re-delivered message or call is shown once")
    func android() throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let service = FirebaseMessagingServiceEmulator(store: pairing.store, clock: TestClock(frozenAt: 1))
        let message = try pairing.messageData()
        guard case .notification(_, true, nil, nil) = service.onMessageReceived(message) else {
            Issue.record("the message did not open")
            return
        }
        #expect(service.onMessageReceived(message) == .duplicate("message:m-1"))
        let call = try pairing.callData()
        guard case .call(_, "Dana", _, nil) = service.onMessageReceived(call) else {
            Issue.record("the call did not ring")
            return
        }
        #expect(service.onMessageReceived(call) == .duplicate("call:call-9"))
    }

    @Test("iOS: a re-delivered VoIP push is reported to CallKit but does not ring an answered call again")
    func iosCall() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let call = CallContent(callID: "call-9", callerID: "a", callerName: "Dana", media: .audio, startedAt: 1)
        let push = VoIPPush(
            apnsID: "id",
            payload: try PushPayload.call(
                call,
                for: PushTarget(deviceID: pairing.deviceID, pushID: "push-1"),
                sealer: pairing.sealer
            )
        )
        let callKit = CallKitEmulator()
        let pushKit = PushKitEmulator(callKit: callKit)
        let handler = PushKitEmulator.reportingHandler(store: pairing.store)
        #expect(await pushKit.deliver(push, to: handler) == .reported)
        #expect(callKit.answer(callID: "call-9"))
        #expect(await pushKit.deliver(push, to: handler) == .reported)
        #expect(callKit.calls.count == 1 && callKit.calls.first?.state == .answered)
        #expect(callKit.reportCount == 2)
    }

    @Test("a push that does not open is not remembered: the genuine one still shows")
    func unopenedNotRemembered() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let payload = try pairing.messagePayload()
        let forged = payload.replacingOccurrences(of: "\"sealed\":\"A", with: "\"sealed\":\"B")
        #expect(forged != payload)
        let emulator = NotificationServiceEmulator(store: pairing.store)
        #expect(!(await emulator.receive(payload: forged, pushType: "alert")).opened)
        #expect(pairing.store.shownPushIDs().isEmpty)
        #expect(await emulator.receive(payload: payload, pushType: "alert").opened)
    }

    @Test("the memory is bounded: the newest ids are kept, the oldest forgotten")
    func bounded() throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        for id in ["a", "b", "c", "d"] { #expect(try pairing.store.recordShown(id, capacity: 3)) }
        #expect(pairing.store.shownPushIDs() == ["b", "c", "d"])
        #expect(try !pairing.store.recordShown("d", capacity: 3))
        #expect(try pairing.store.recordShown("a", capacity: 3))
    }
}
