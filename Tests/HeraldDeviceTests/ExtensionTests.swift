import Foundation
import HeraldCrypto
import HeraldDevice
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Testing

/// A device's app-group store and the relay's side of its agreement, without a network.
struct Pairing {
    let store: AppGroupStore
    let sealer: EnvelopeSealer
    let deviceID = "device-1"
    let directory: String

    init(policy: ContentPolicy = .full) throws {
        directory = NSTemporaryDirectory() + "herald-device-\(UUID().uuidString)"
        store = try AppGroupStore(directory: directory)
        let device = KeyPair.generate()
        let relay = KeyPair.generate()
        let keyID = try store.saveKeys(device, relayPublicKey: relay.publicKey)
        sealer = EnvelopeSealer(sessionKeys: try KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey))
        try store.save(
            AppGroupStore.Registration(
                deviceID: deviceID,
                userID: "u",
                app: "com.example.chat",
                relayURL: "http://127.0.0.1:1",
                keyID: keyID.hex,
                previousKeyID: nil,
                contentPolicy: policy
            )
        )
    }

    func messagePayload(text: String = "Your order shipped", policy: ContentPolicy = .full) throws -> String {
        let app = AppRecord(id: "com.example.chat", teamID: "T", contentPolicy: policy)
        let content = MessageContent(
            messageID: "m-1",
            conversationID: "c-1",
            senderID: "agent-7",
            senderName: "Dana",
            text: text,
            sentAt: 1
        )
        return try PushPayload.message(
            content,
            app: app,
            for: PushTarget(deviceID: deviceID, pushID: "push-1"),
            sealer: sealer
        ).body
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

@Suite("Notification Service Extension emulator", .timeLimit(.minutes(1)))
struct ExtensionTests {
    @Test("opens the sealed content and shows sender and text instead of the generic text")
    func opens() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let result = await NotificationServiceEmulator(store: pairing.store)
            .receive(payload: try pairing.messagePayload(), pushType: "alert")
        #expect(result.ranExtension && result.opened && result.diagnostic == nil)
        #expect(result.notification?.title == "Dana")
        #expect(result.notification?.body == "Your order shipped")
        #expect(result.notification?.thread == "c-1")
        #expect(result.notification?.fetchOnTap == false)
    }

    @Test("content policy none: the generic text stays and the tap fetches the message id")
    func policyNone() async throws {
        let pairing = try Pairing(policy: .none)
        defer { pairing.remove() }
        let result = await NotificationServiceEmulator(store: pairing.store)
            .receive(payload: try pairing.messagePayload(policy: .none), pushType: "alert")
        #expect(result.ranExtension && !result.opened && result.diagnostic == nil)
        #expect(result.notification?.title == "New message")
        #expect(result.notification?.messageID == "m-1")
        #expect(result.notification?.fetchOnTap == true)
    }

    @Test("an unknown key id shows the generic text and a diagnostic, never a crash")
    func unknownKey() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let payload = try pairing.messagePayload()
        pairing.store.removeKeys(except: [])
        let result = await NotificationServiceEmulator(store: pairing.store).receive(
            payload: payload,
            pushType: "alert"
        )
        #expect(!result.opened)
        #expect(result.notification?.title == "New message")
        #expect(result.diagnostic?.contains("no key") == true)
    }

    @Test("a tampered envelope shows the generic text and says it did not open")
    func tampered() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        var payload = try pairing.messagePayload()
        let marker = "\"sealed\":\""
        let start = try #require(payload.range(of: marker)).upperBound
        let index = payload.index(start, offsetBy: 40)
        let replacement: Character = payload[index] == "A" ? "B" : "A"
        payload.replaceSubrange(index...index, with: String(replacement))
        let result = await NotificationServiceEmulator(store: pairing.store).receive(
            payload: payload,
            pushType: "alert"
        )
        #expect(!result.opened)
        #expect(result.notification?.body == "You have a new message")
        #expect(result.diagnostic?.contains("authenticationFailed") == true)
    }

    @Test("past the time budget the original content is shown")
    func timeout() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let slow = NotificationServiceEmulator(store: pairing.store, budget: .milliseconds(50), delay: .seconds(5))
        let started = ContinuousClock.now
        let result = await slow.receive(payload: try pairing.messagePayload(), pushType: "alert")
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(!result.opened && result.ranExtension)
        #expect(result.notification?.title == "New message")
        #expect(result.diagnostic?.contains("budget") == true)
    }

    @Test("silent and non-mutable pushes skip the extension")
    func skipsExtension() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let extensionEmulator = NotificationServiceEmulator(store: pairing.store)
        let silent = await extensionEmulator.receive(
            payload: #"{"aps":{"content-available":1}}"#,
            pushType: "background"
        )
        #expect(silent.notification == nil && !silent.ranExtension)
        let plain = await extensionEmulator.receive(
            payload: #"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#,
            pushType: "alert"
        )
        #expect(!plain.ranExtension && plain.notification?.body == "there")
        let garbage = await extensionEmulator.receive(payload: "not json", pushType: "alert")
        #expect(garbage.notification == nil && garbage.diagnostic != nil)
    }
}

@Suite("PushKit and CallKit emulators", .timeLimit(.minutes(1)))
struct PushKitTests {
    @Test("a reported VoIP push rings with the sealed caller's name; the user answers")
    func reported() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let call = CallContent(callID: "call-9", callerID: "a", callerName: "Dana", media: .video, startedAt: 1)
        let payload = try PushPayload.call(
            call,
            for: PushTarget(deviceID: pairing.deviceID, pushID: "push-1"),
            sealer: pairing.sealer
        )
        let callKit = CallKitEmulator()
        let pushKit = PushKitEmulator(callKit: callKit)
        let delivery = await pushKit.deliver(
            VoIPPush(apnsID: "id", payload: payload),
            to: PushKitEmulator.reportingHandler(store: pairing.store)
        )
        #expect(delivery == .reported)
        #expect(callKit.calls.first?.callerName == "Dana" && callKit.calls.first?.video == true)
        #expect(callKit.answer(callID: "call-9"))
        #expect(callKit.calls.first?.state == .answered)
        #expect(!callKit.decline(callID: "call-9"))
    }

    @Test("unreported VoIP pushes are violations; past the limit PushKit stops delivering")
    func violations() async throws {
        let callKit = CallKitEmulator()
        let pushKit = PushKitEmulator(callKit: callKit, violationLimit: 2)
        let ignore: PushKitEmulator.Handler = { _, _ in }
        #expect(await pushKit.deliver(VoIPPush(apnsID: "1", payload: "{}"), to: ignore) == .violation(count: 1))
        #expect(await pushKit.deliver(VoIPPush(apnsID: "2", payload: "{}"), to: ignore) == .violation(count: 2))
        let reporting: PushKitEmulator.Handler = { push, callKit in
            callKit.reportIncomingCall(callID: push.apnsID, callerName: "x", video: false)
        }
        #expect(await pushKit.deliver(VoIPPush(apnsID: "3", payload: "{}"), to: reporting) == .suppressed)
        #expect(callKit.calls.isEmpty)
    }

    @Test("a VoIP push that does not open is still reported, as an unknown caller")
    func unknownCaller() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let callKit = CallKitEmulator()
        let delivery = await PushKitEmulator(callKit: callKit).deliver(
            VoIPPush(apnsID: "id-7", payload: #"{"herald":{"v":1,"kind":"call","call_id":"c","sealed":"AAAA"}}"#),
            to: PushKitEmulator.reportingHandler(store: pairing.store)
        )
        #expect(delivery == .reported)
        #expect(callKit.calls.first?.callerName == "Unknown caller")
    }
}
