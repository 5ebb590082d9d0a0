import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCrypto
import HeraldDevice
import HeraldDomain
import HeraldSimulation
import HeraldStore
import Logging
import Testing

@testable import HeraldCommands

/// The emulated phone against a real sandbox, relay and provider (in-process, loopback).
@Suite("Emulated phone, end to end", .timeLimit(.minutes(3)))
struct DeviceFlowTests {
    /// What a test changes in the phone's configuration.
    struct Tweaks {
        var messagingTokenDelay: Duration = .zero
        var voipTokenDelay: Duration = .zero
        var tokenTimeout: Duration = .seconds(10)
        var reportsCalls = true
        var violationLimit = 3
        var platform: DevicePlatform = .ios
    }

    static func withPhone(
        _ tweaks: Tweaks = Tweaks(),
        store: String? = nil,
        _ body: (EmulatedPhone, SimulationEndpoints, SimulatedBackend) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var logger = Logger(label: "test.device")
        logger.logLevel = .critical
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let directory = store ?? NSTemporaryDirectory() + "herald-phone-\(UUID().uuidString)"
        defer {
            if store == nil { try? FileManager.default.removeItem(atPath: directory) }
        }
        do {
            try await SimulationStack.with(clock: clock, logger: logger) { endpoints in
                let (phone, backend) = try endpoints.phoneAndBackend(
                    userID: "u1",
                    storeDirectory: directory,
                    clock: clock,
                    timeline: Timeline(clock: clock),
                    http: http,
                    logger: logger
                ) { configuration in
                    configuration.messagingTokenDelay = tweaks.messagingTokenDelay
                    configuration.voipTokenDelay = tweaks.voipTokenDelay
                    configuration.tokenTimeout = tweaks.tokenTimeout
                    configuration.reportsCalls = tweaks.reportsCalls
                    configuration.violationLimit = tweaks.violationLimit
                    configuration.platform = tweaks.platform
                    // These flows keep the app's timers on real time, as they always have.
                    configuration.clock = WallClock()
                }
                try await phone.launch()
                defer { phone.shutdown() }
                try await body(phone, endpoints, backend)
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    static func started(_ phone: EmulatedPhone, messaging: Bool = true, voip: Bool = true) -> Bool {
        guard let session = phone.session, session.isStarted else { return false }
        return (session.tokens.messaging != nil) == messaging && (session.tokens.voip != nil) == voip
    }

    /// Sends `text` to u1 in conversation c and waits for the phone's `shown` receipt of its one
    /// push; returns the push's id.
    static func sendShown(_ text: String, to phone: EmulatedPhone, _ backend: SimulatedBackend) async throws -> String {
        let sent = try await backend.post(
            "/v1/messages",
            #"{"to":"u1","from":{"id":"a","name":"Agent"},"conversation":"c","text":"\#(text)"}"#
        )
        let pushID = try #require(sent.pushes.first?.pushID)
        try await phone.wait("the shown receipt") { phone in
            phone.receipts.contains { $0.pushID == pushID && $0.stage == .shown }
        }
        return pushID
    }

    /// `phone`'s app launched again (a new process on the same store and timeline), launched.
    static func relaunch(_ phone: EmulatedPhone, _ backend: SimulatedBackend) async throws -> EmulatedPhone {
        let again = try EmulatedPhone(
            configuration: phone.configuration,
            http: backend.http,
            timeline: phone.timeline,
            logger: Logger(label: "test")
        )
        try await again.launch()
        return again
    }

    @Test("late tokens: push unavailable at first, one restart per token, tokens persisted")
    func lateTokens() async throws {
        try await Self.withPhone(Tweaks(messagingTokenDelay: .milliseconds(300), voipTokenDelay: .milliseconds(600))) {
            phone,
            _,
            _ in
            try await phone.wait("both tokens") { Self.started($0) }
            let steps = phone.timeline.all.map(\.step)
            #expect(steps.contains("Push service not available"))
            #expect(phone.sessionCount == 3)
            #expect(steps.filter { $0.hasPrefix("session") && $0.hasSuffix("stopped") }.count == 2)
            #expect(phone.pushAvailable)
            let persisted = phone.store.tokens()
            #expect(persisted.messaging != nil && persisted.voip != nil)
            #expect(phone.store.registration() != nil && phone.store.credential() != nil)
        }
    }

    @Test("no token within the timeout: the app keeps saying push is not available")
    func noTokenInTime() async throws {
        try await Self.withPhone(
            Tweaks(messagingTokenDelay: .seconds(60), voipTokenDelay: .seconds(60), tokenTimeout: .milliseconds(200))
        ) { phone, _, _ in
            try await phone.wait("the timeout") { phone in
                phone.timeline.all.filter { $0.step == "Push service not available" }.count == 2
            }
            #expect(!phone.pushAvailable)
            #expect(phone.sessionCount == 1)
            #expect(phone.session?.tokens.isEmpty == true)
        }
    }

    @Test("a later launch starts with the persisted tokens; a stale one is replaced with a restart")
    func staleTokenReplaced() async throws {
        let directory = NSTemporaryDirectory() + "herald-phone-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.withPhone(store: directory) { phone, _, backend in
            try await phone.wait("both tokens") { Self.started($0) }
            // The next launch finds a messaging token iOS has since replaced.
            var tokens = phone.store.tokens()
            tokens.messaging = "00112233445566778899aabbccddeeff"
            try phone.store.save(tokens)
            phone.shutdown()

            let relaunched = try await Self.relaunch(phone, backend)
            defer { relaunched.shutdown() }
            try await relaunched.wait("the replaced token") { phone in
                Self.started(phone) && phone.session?.tokens.messaging != "00112233445566778899aabbccddeeff"
            }
            #expect(relaunched.sessionCount == 2)
            #expect(relaunched.store.tokens().messaging != "00112233445566778899aabbccddeeff")
        }
    }

    @Test("after a key rotation, a push sealed before it still opens with the previous key")
    func rotation() async throws {
        let directory = NSTemporaryDirectory() + "herald-phone-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.withPhone(store: directory) { phone, _, backend in
            try await phone.wait("both tokens") { Self.started($0) }
            let before = try #require(phone.store.registration()?.keyID)
            // Offline: the push waits at the sandbox, sealed with the current keys. Stopped and
            // waited for: a device connection still closing must not take the push (CI caught it).
            await phone.stop()
            _ = try await backend.post(
                "/v1/messages",
                #"{"to":"u1","from":{"id":"a","name":"Agent"},"conversation":"c","text":"sealed before"}"#
            )
            try await phone.rotateKeys()
            let registration = try #require(phone.store.registration())
            #expect(registration.previousKeyID == before && registration.keyID != before)
            #expect(phone.store.keyIDs().count == 2)

            let back = try await Self.relaunch(phone, backend)
            defer { back.shutdown() }
            try await back.wait("the stored push") { !$0.notifications.isEmpty }
            #expect(back.notifications.first?.body == "sealed before")
            #expect(back.notifications.first?.title == "Agent")
        }
    }

    @Test(
        "the phone's receipts: delivered, opened, shown for a push it opened; failed: unknown_key for one it holds no key for"
    )
    func receipts() async throws {
        let directory = NSTemporaryDirectory() + "herald-phone-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.withPhone(store: directory) { phone, _, backend in
            try await phone.wait("both tokens") { Self.started($0) }
            let first = try await Self.sendShown("first", to: phone, backend)
            #expect(try await backend.status(first).receipts.map(\.stage) == [.delivered, .opened, .shown])

            // Sealed with keys the phone then loses: it cannot open it, and says why.
            await phone.stop()
            let lost = try await backend.post(
                "/v1/messages",
                #"{"to":"u1","from":{"id":"a","name":"Agent"},"conversation":"c","text":"second"}"#
            )
            let second = try #require(lost.pushes.first?.pushID)
            try await phone.rotateKeys()
            let current = try #require(phone.store.registration().flatMap { KeyID(hex: $0.keyID) })
            phone.store.removeKeys(except: [current])
            let back = try await Self.relaunch(phone, backend)
            defer { back.shutdown() }
            try await back.wait("the failed receipt") { phone in
                phone.receipts.contains { $0.pushID == second && $0.stage == .failed }
            }
            let receipts = try await backend.status(second).receipts
            #expect(receipts.map(\.stage) == [.delivered, .failed])
            #expect(receipts.last?.failure == .unknownKey)
        }
    }

    @Test("an Android phone's messaging service sends the same receipts, naming the push by its FCM push_id")
    func androidReceipts() async throws {
        try await Self.withPhone(Tweaks(platform: .android)) { phone, _, backend in
            try await phone.wait("the FCM token") { Self.started($0, voip: false) }
            let pushID = try await Self.sendShown("on Android", to: phone, backend)
            let status = try await backend.status(pushID)
            #expect(status.receipts.map(\.stage) == [.delivered, .opened, .shown])
            #expect(status.deviceStage == .shown)
        }
    }

    @Test("waiting on the phone ends when the waiting task is cancelled (herald device stops on SIGTERM)")
    func waitIsCancellable() async throws {
        try await Self.withPhone { phone, _, _ in
            let waiting = Task { try await phone.wait("never", timeout: .seconds(3600)) { _ in false } }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
        }
    }

    @Test("content policy none: the tap fetches the message from the relay")
    func tapFetches() async throws {
        try await Self.withPhone { phone, endpoints, backend in
            try await phone.wait("both tokens") { Self.started($0) }
            var request = HTTPClientRequest(url: endpoints.relayURL + "/v1/apps/" + endpoints.bundleID)
            request.method = .PUT
            request.headers.add(name: "authorization", value: "Bearer " + endpoints.apiKey)
            let team = try #require(try await Self.teamID(endpoints))
            request.body = .bytes(.init(string: #"{"team_id":"\#(team)","content_policy":"none"}"#))
            #expect(try await backend.http.execute(request, timeout: .seconds(10)).status.code == 200)
            _ = try await backend.post(
                "/v1/messages",
                #"{"to":"u1","from":{"id":"a","name":"Agent"},"conversation":"c","text":"Code 424242"}"#
            )
            try await phone.wait("the notification") { !$0.notifications.isEmpty }
            let shown = try #require(phone.notifications.first)
            #expect(shown.title == "New message" && shown.fetchOnTap)
            #expect(try await phone.tap(shown) == "Code 424242")
        }
    }

    @Test("an app that does not report VoIP pushes to CallKit stops getting them")
    func unreportedCalls() async throws {
        try await Self.withPhone(Tweaks(reportsCalls: false, violationLimit: 1)) { phone, _, backend in
            try await phone.wait("both tokens") { Self.started($0) }
            _ = try await backend.post("/v1/calls", #"{"to":"u1","from":{"id":"a","name":"A"},"call_id":"one"}"#)
            try await phone.wait("the violation") { $0.pushKit.violationCount == 1 }
            _ = try await backend.post("/v1/calls", #"{"to":"u1","from":{"id":"a","name":"A"},"call_id":"two"}"#)
            try await phone.wait("the suppression") { phone in
                phone.timeline.all.contains { $0.step.hasPrefix("VoIP push not delivered") }
            }
            #expect(phone.callKit.calls.isEmpty)
        }
    }

    static func teamID(_ endpoints: SimulationEndpoints) async throws -> String? {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }
        var request = HTTPClientRequest(url: endpoints.relayURL + "/v1/apps")
        request.headers.add(name: "authorization", value: "Bearer " + endpoints.apiKey)
        let response = try await http.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        return (object?["apps"] as? [[String: Any]])?.first?["team_id"] as? String
    }
}

/// `herald simulate` and `herald extension`, run as a user runs them.
@Suite("Simulations and the extension harness", .timeLimit(.minutes(3)))
struct SimulationCommandTests {
    static func temporary(_ name: String) -> String {
        NSTemporaryDirectory() + "herald-\(name)-\(UUID().uuidString)"
    }

    static func timeline(_ path: String) throws -> [TimelineEvent] {
        try JSONDecoder().decode([TimelineEvent].self, from: Data(contentsOf: URL(filePath: path)))
    }

    @Test("herald simulate messaging: restarts for late tokens, three priority-5 alerts opened, a tap")
    func messaging() async throws {
        let json = Self.temporary("messaging") + ".json"
        let html = Self.temporary("messaging") + ".html"
        defer {
            try? FileManager.default.removeItem(atPath: json)
            try? FileManager.default.removeItem(atPath: html)
        }
        let command = try SimulateCommand.Messaging.parse(["--json", json, "--html", html, "--quiet"])
        try await command.run()
        let events = try Self.timeline(json)
        let pushes = events.filter { $0.step == "push delivered" }
        #expect(pushes.count == 3)
        #expect(
            pushes.allSatisfy { $0.pushType == "alert" && $0.priority == .apns(5) && $0.topic == "com.example.herald" }
        )
        #expect(events.filter { $0.step.hasSuffix("stopped") && $0.from == "app" }.count >= 2)
        let shown = events.filter { $0.step == "notification shown" }.compactMap(\.userSees)
        #expect(shown.count == 3 && shown.allSatisfy { $0.contains("Dana (Acme support)") })
        #expect(events.filter { $0.step == "extension opened the sealed content" }.count == 3)
        #expect(events.contains { $0.step == "conversation opened" })
        // Ten simulated minutes between the first message and the last, in a few real seconds.
        let posts = events.filter { $0.step.hasPrefix("POST /v1/messages") }.map(\.elapsedMs)
        #expect(posts.count == 3 && (posts.last ?? 0) - (posts.first ?? 0) >= 600_000)
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains("<svg") && page.contains("notification shown"))
    }

    @Test("herald simulate android: a late FCM token, three HIGH data messages opened by the app, a tap")
    func android() async throws {
        let json = Self.temporary("android") + ".json"
        defer { try? FileManager.default.removeItem(atPath: json) }
        let command = try SimulateCommand.Android.parse(["--json", json, "--quiet"])
        try await command.run()
        let events = try Self.timeline(json)
        #expect(events.contains { $0.step == "FCM registration token received" })
        #expect(!events.contains { $0.step.contains("VoIP") })
        let pushes = events.filter { $0.step == "data message delivered" }
        #expect(pushes.count == 3)
        #expect(pushes.allSatisfy { $0.pushType == "fcm" && $0.priority == .fcm("HIGH") })
        #expect(events.filter { $0.step == "messaging service opened the sealed content" }.count == 3)
        let shown = events.filter { $0.step == "notification shown" }
        #expect(
            shown.count == 3 && shown.allSatisfy { $0.from == "fcm-service" && $0.userSees?.contains("Dana") == true }
        )
        #expect(events.filter { $0.step == "push accepted by FCM" }.count == 3)
        #expect(events.contains { $0.step == "conversation opened" })
    }

    @Test("herald simulate telephony: answered elsewhere, hung up, missed with the alert, on two devices")
    func telephony() async throws {
        let json = Self.temporary("telephony") + ".json"
        defer { try? FileManager.default.removeItem(atPath: json) }
        let command = try SimulateCommand.Telephony.parse(["--json", json, "--quiet"])
        try await command.run()
        let events = try Self.timeline(json)
        let push = try #require(events.first { $0.step == "push delivered" })
        #expect(push.pushType == "voip" && push.priority == .apns(10) && push.topic == "com.example.herald.voip")
        #expect(events.contains { $0.step == "incoming call reported" && $0.detail?.contains("Dana") == true })
        #expect(events.contains { $0.step == "phone rings" })
        #expect(events.contains { $0.step == "user answers" })
        // The pad stops over its live channel each time, with CallKit's reason; never by a push.
        let stops = events.filter { $0.step.hasPrefix("call ended: ") }
        #expect(
            stops.map { "\($0.subject ?? ""): \($0.step)" }.sorted() == [
                "call-7781 · pad: call ended: answered elsewhere",
                "call-7782 · pad: call ended: remote ended",
                "call-7782: call ended: remote ended",
                "call-7783 · pad: call ended: unanswered",
                "call-7783: call ended: unanswered",
            ]
        )
        #expect(events.filter { $0.step == "call ringing reported" }.count == 6)
        #expect(events.filter { $0.pushType == "voip" && $0.step == "push delivered" }.count == 6)
        // Nobody answered the third: each device's extension opened its missed-call alert.
        let missed = events.filter { $0.step == "notification shown" && $0.detail == "thread call:call-7783" }
        #expect(missed.count == 2 && missed.allSatisfy { $0.userSees == "Missed call: Dana (Acme support)" })
        #expect(!events.contains { $0.step.hasPrefix("violation") })
    }

    @Test("herald simulate telephony --android: the same three endings on two Android devices, the alert opened")
    func androidTelephony() async throws {
        let json = Self.temporary("android-telephony") + ".json"
        defer { try? FileManager.default.removeItem(atPath: json) }
        let command = try SimulateCommand.Telephony.parse(["--android", "--json", json, "--quiet"])
        try await command.run()
        let events = try Self.timeline(json)
        let calls = events.filter { $0.step == "data message delivered" && $0.pushType == "fcm" }
        #expect(calls.filter { $0.priority == .fcm("HIGH") }.count == 6)
        #expect(calls.filter { $0.priority == .fcm("NORMAL") }.count == 2)
        let stops = events.filter { $0.step.hasPrefix("call ended: ") }.map { "\($0.subject ?? ""): \($0.step)" }
        #expect(
            stops.sorted() == [
                "call-7781 · pad: call ended: answered elsewhere",
                "call-7782 · pad: call ended: remote ended",
                "call-7782: call ended: remote ended",
                "call-7783 · pad: call ended: unanswered",
                "call-7783: call ended: unanswered",
            ]
        )
        let missed = events.filter { $0.step == "notification shown" && $0.detail == "thread call:call-7783" }
        #expect(missed.count == 2 && missed.allSatisfy { $0.from.hasPrefix("fcm-service") })
        #expect(missed.allSatisfy { $0.userSees == "Missed call: Dana (Acme support)" })
    }

    @Test("herald extension decrypt: 0 when it opens, 1 when it cannot, a clear error for bad input")
    func decrypt() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let capture = Self.temporary("capture") + ".json"
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let record: [String: Any] = ["payload": try pairing.messagePayload(), "push_type": "alert", "status": 200]
        try JSONSerialization.data(withJSONObject: record).write(to: URL(filePath: capture))

        let opened = try ExtensionCommand.Decrypt.parse(["--store", pairing.directory, capture])
        try await opened.run()

        let stranger = try Pairing()
        defer { stranger.remove() }
        let refused = try ExtensionCommand.Decrypt.parse(["--store", stranger.directory, capture])
        await #expect(throws: ExitCode(1)) { try await refused.run() }

        let notAStore = try ExtensionCommand.Decrypt.parse(["--store", "/nonexistent", capture])
        await #expect(throws: ValidationError.self) { try await notAStore.run() }
    }

    @Test("herald extension test: a folder of captures against expectations")
    func harness() async throws {
        let pairing = try Pairing()
        defer { pairing.remove() }
        let folder = Self.temporary("cases")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func write(_ name: String, _ object: [String: Any]) throws {
            try JSONSerialization.data(withJSONObject: object).write(to: URL(filePath: folder + "/" + name))
        }
        try write(
            "ok.json",
            ["payload": try pairing.messagePayload(text: "Parcel arrives Monday"), "push_type": "alert"]
        )
        try write("ok.expected.json", ["title": "Dana", "body": "Parcel arrives Monday"])
        var tampered = try pairing.messagePayload()
        tampered = tampered.replacingOccurrences(of: "\"sealed\":\"A", with: "\"sealed\":\"B")
        try write("tampered.json", ["payload": tampered, "push_type": "alert"])
        try write("tampered.expected.json", ["error": "sealed content"])

        let passing = try ExtensionCommand.Test.parse([folder, "--store", pairing.directory])
        try await passing.run()

        try write("wrong.json", ["payload": try pairing.messagePayload(text: "A"), "push_type": "alert"])
        try write("wrong.expected.json", ["title": "Dana", "body": "B"])
        let failing = try ExtensionCommand.Test.parse([folder, "--store", pairing.directory])
        await #expect(throws: ExitCode(1)) { try await failing.run() }
    }
}
