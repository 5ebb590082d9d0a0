import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import Logging
import NIOCore

/// `herald simulate messaging|telephony|android|callback|dual-channel|gms-chat|escalation`: the
/// flows end to end, with a timeline.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract:
            "Play a flow end to end (messaging, telephony, Android, callback, dual channel, GMS chat, escalation) and print its timeline.",
        subcommands: [
            Messaging.self, Telephony.self, Android.self, Web.self, Callback.self, DualChannel.self, GMSChat.self,
            Escalation.self,
        ]
    )

    /// Options both flows take.
    struct Options: ParsableArguments {
        @Option(help: "A running relay's URL; without it, sandbox, relay and provider run in-process.")
        var relay: String?

        @Option(help: "The running sandbox's control URL (with --relay).")
        var sandbox: String?

        @Option(name: .customLong("api-key-file"), help: "The running relay's API key file (with --relay).")
        var apiKeyFile: String = "keys/api.key"

        @Option(help: "The app's bundle id at a running relay (with --relay).")
        var bundle: String = "com.example.herald"

        @Option(help: "Write the timeline as JSON to this file.")
        var json: String?

        @Option(help: "Write the timeline as an HTML page with a sequence diagram to this file.")
        var html: String?

        @Flag(help: "Print nothing but the summary.")
        var quiet = false

        func validate() throws {
            if (relay == nil) != (sandbox == nil) { throw ValidationError("--relay and --sandbox go together") }
        }
    }

    /// The shared options and the phone's platform, for a flow that runs on an iPhone or, with
    /// `--android`, on an Android phone.
    struct PhoneOptions: ParsableArguments {
        @OptionGroup var options: Options

        @Flag(help: "An Android phone (FCM data messages) instead of an iPhone.")
        var android = false

        /// Plays `flow` on the chosen phone.
        func play(_ flow: String, named name: String, _ body: @escaping Simulation.Flow) async throws {
            try await Simulation.play(flow, named: name, platform: android ? .android : .ios, options: options, body)
        }
    }

    struct Messaging: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "messaging",
            abstract: "First launch with late tokens, three agent messages over ten simulated minutes, a tap.",
            discussion: """
                The phone starts before iOS hands out its tokens (the SDK session is stopped, \
                recreated and started as each arrives), goes to the background, and an agent \
                sends three messages over ten simulated minutes (a simulated clock: it takes \
                seconds). Each becomes a priority-5 alert that the Notification Service Extension \
                opens; the user sees sender and text, taps the last, and the conversation opens.
                """
        )

        @OptionGroup var options: Options

        func run() async throws {
            try await Simulation.play("messaging", named: "messaging", options: options) {
                try await Simulation.messaging(phone: $0, backend: $1, clock: $2)
            }
        }
    }

    struct Android: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "android",
            abstract: "The messaging flow on Android: a late FCM token, three data messages opened by the app, a tap.",
            discussion: """
                An Android phone starts before Firebase hands out its registration token (the SDK \
                session is stopped, recreated and started when it arrives), goes to the background, \
                and an agent sends three messages over ten simulated minutes. Each becomes an FCM \
                data message (priority HIGH, string values only, the content sealed); the app's \
                messaging service opens it with the app-group key and shows sender and text; the \
                user taps the last.
                """
        )

        @OptionGroup var options: Options

        func run() async throws {
            try await Simulation.play("android", named: "messaging", platform: .android, options: options) {
                try await Simulation.messaging(phone: $0, backend: $1, clock: $2)
            }
        }
    }

    struct Web: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "web",
            abstract: "The messaging flow in a browser: a late subscription, three Web Push messages, a tap.",
            discussion: """
                A browser starts before its push service hands out the subscription's endpoint \
                (the SDK session is stopped, recreated and started when it arrives), goes to the \
                background, and an agent sends three messages over ten simulated minutes. Each \
                becomes a Web Push message (urgency normal, the body encrypted for the \
                subscription, RFC 8291); the service worker decrypts it, opens the sealed envelope \
                with the app's key and shows sender and text; the user taps the last.
                """
        )

        @OptionGroup var options: Options

        func run() async throws {
            try await Simulation.play("web", named: "messaging", platform: .web, options: options, Simulation.messaging)
        }
    }

    struct Telephony: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "telephony",
            abstract: "Calls from ring to end on two devices of one user: answered elsewhere, hung up, missed.",
            discussion: """
                An agent calls the user, who has a phone and a pad: the relay sends each a \
                priority-10 VoIP push to the .voip topic, PushKit hands it to the app, which opens \
                the sealed caller and reports the call to CallKit; the SDK session connects its \
                live channel and reports the call ringing. The user answers on the phone; the pad \
                is told over its channel to stop (answered elsewhere). A second call rings on both \
                and the caller hangs up (remote ended). A third rings until its time to live \
                passes: both stop (unanswered) and each gets the missed-call alert, opened by the \
                Notification Service Extension. With --android, the same on two Android devices \
                (FCM data messages, the incoming-call screen).
                """
        )

        @OptionGroup var options: Options

        @Flag(help: "Two Android devices instead of an iPhone and an iPad.")
        var android = false

        func run() async throws {
            try await Simulation.play(
                "telephony",
                named: "telephony",
                platform: android ? .android : .ios,
                options: options
            ) {
                try await Simulation.telephony(phone: $0, backend: $1, clock: $2)
            }
        }
    }
}

/// The backend's side of a simulation: messages and calls posted to the relay.
struct SimulatedBackend: Sendable {
    let http: HTTPClient
    let relayURL: String
    let apiKey: String
    let timeline: Timeline

    /// Posts a message or a call: the relay answers 202 and an ingest receipt.
    func post(_ path: String, _ body: String) async throws -> IngestReceipt {
        try await request(.POST, path, body, expect: 202)
    }

    /// Posts a message or a call and records the request on the timeline, once answered, at the
    /// time it was sent: the push can reach the phone before the 202 reaches the backend.
    func postRecorded(
        _ path: String,
        _ body: String,
        detail: (IngestReceipt) -> String
    ) async throws -> IngestReceipt {
        let sent = timeline.time
        let receipt = try await post(path, body)
        timeline.record(
            "backend",
            "relay",
            "POST \(path) → 202",
            detail: detail(receipt),
            subject: receipt.id,
            stage: .requested,
            at: sent
        )
        return receipt
    }

    func status(_ pushID: String) async throws -> PushStatusView {
        try await request(.GET, "/v1/pushes/" + pushID, nil, expect: 200)
    }

    /// Records when APNs or FCM (the sandbox) accepted a push, as the relay reports it on its own
    /// clock: the relay records the answer once the sender returns, which can be after the phone
    /// got the push, and a running relay's clock knows nothing of the simulated minutes; the
    /// timeline places the step before the push's delivery (`subject`, `stage`). `priority` is
    /// the APNs priority the push was sent with when the flow knows it (an escalation's 10): the
    /// relay's status shows its queue's, 10 for calls and callbacks, 5 for messages.
    func recordAccepted(
        _ pushID: String,
        subject: String,
        pushType: String,
        topic: String?,
        network: String = "apns",
        priority: Int? = nil
    ) async throws {
        // The phone may show a push before the relay has recorded the network's answer (the
        // dispatcher records a batch's outcomes after the sender returns): ask until it has.
        var status = try await self.status(pushID)
        let deadline = ContinuousClock.now + .seconds(10)
        while !status.state.isFinal, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            status = try await self.status(pushID)
        }
        guard let accepted = status.history.first(where: { $0.state == .delivered }) else { return }
        timeline.record(
            "relay",
            network,
            "push accepted by \(Self.networkName[network] ?? "APNs")",
            pushType: pushType,
            priority: Self.priority(network: network, priority ?? status.priority),
            topic: topic,
            detail: network == "apns" ? "apns-id \(status.apnsID)" : "push id \(status.pushID)",
            subject: subject,
            stage: .accepted,
            reportedAt: accepted.at
        )
    }

    private static let networkName = ["apns": "APNs", "fcm": "FCM", "push-service": "the push service"]

    /// The priority as `network` names it: FCM has HIGH and NORMAL, the provider sending priority
    /// 5 and above as HIGH; Web Push's urgency is high from 10, normal from 5, else low
    /// (ProviderBatch).
    private static func priority(network: String, _ priority: Int) -> TimelinePriority {
        switch network {
        case "fcm": .fcm(priority >= 5 ? "HIGH" : "NORMAL")
        case "push-service": .fcm(priority >= 10 ? "high" : priority >= 5 ? "normal" : "low")
        default: .apns(priority)
        }
    }

    /// `recordAccepted` for alert pushes to `phone`: APNs alerts on iOS, FCM messages on Android.
    func recordAlertsAccepted(
        _ pushIDs: [String],
        subject: String,
        phone: EmulatedPhone,
        priority: Int? = nil
    ) async throws {
        let (pushType, network) =
            switch phone.configuration.platform {
            case .ios: ("alert", "apns")
            case .web: ("webpush", "push-service")
            case .android, .huawei: ("fcm", "fcm")
            }
        for pushID in pushIDs {
            try await recordAccepted(
                pushID,
                subject: subject,
                pushType: pushType,
                topic: phone.configuration.bundleID,
                network: network,
                priority: priority
            )
        }
    }
}

extension SimulationEndpoints {
    /// A phone of `userID` and the backend that drives it, against these endpoints, on one
    /// timeline; the app's timers (heartbeats) run on `clock`, the one the relay shares.
    func phoneAndBackend(
        userID: String,
        storeDirectory: String,
        clock: TestClock,
        timeline: Timeline,
        http: HTTPClient,
        logger: Logger,
        configure: (inout PhoneConfiguration) -> Void = { _ in }
    ) throws -> (phone: EmulatedPhone, backend: SimulatedBackend) {
        var configuration = PhoneConfiguration(
            relayURL: relayURL,
            sandboxURL: sandboxURL,
            apiKey: apiKey,
            userID: userID,
            bundleID: bundleID,
            storeDirectory: storeDirectory
        )
        configuration.clock = clock
        configure(&configuration)
        let phone = try EmulatedPhone(configuration: configuration, http: http, timeline: timeline, logger: logger)
        let backend = SimulatedBackend(http: http, relayURL: relayURL, apiKey: apiKey, timeline: timeline)
        return (phone, backend)
    }
}

enum Simulation {
    typealias Flow = @Sendable (EmulatedPhone, SimulatedBackend, TestClock) async throws -> Void
    /// Where the running flow's relay and sandbox are (the callback flow reads its webhook events).
    @TaskLocal static var endpoints: SimulationEndpoints?

    /// Plays `body` (the flow `flow`, titled `name`) on an iPhone, or an Android phone, and writes
    /// and prints its timeline as `options` ask.
    static func play(
        _ flow: String,
        named name: String,
        platform: DevicePlatform = .ios,
        options: SimulateCommand.Options,
        _ body: @escaping Flow
    ) async throws {
        let timeline = try await run(options: options, flow: flow, platform: platform, body)
        let prefix =
            switch platform {
            case .ios: ""
            case .android: "Android "
            case .web: "web "
            case .huawei: "Huawei "
            }
        try finish(timeline, options: options, title: "Herald: " + prefix + name + " flow")
    }

    /// Sets up (or reaches) relay and sandbox, a phone and a backend, and plays `flow`.
    /// - Parameter observer: told of each step as it is recorded (the console draws its diagram so).
    static func run(
        options: SimulateCommand.Options,
        flow: String,
        platform: DevicePlatform = .ios,
        observer: @escaping @Sendable (TimelineEvent) -> Void = { _ in },
        _ body: @escaping Flow
    ) async throws -> Timeline {
        var logger = Logger(label: "herald.simulate")
        logger.logLevel = .critical
        let clock = TestClock()
        let quiet = options.quiet
        // Printed once played, in causal order: a step reported late (APNs's acceptance, as the
        // relay recorded it) takes its place before the delivery it caused.
        let timeline = Timeline(clock: clock, observer: observer)
        func printed() {
            guard !quiet else { return }
            for event in timeline.all { print(Timeline.line(event)) }
            fflush(nil)
        }
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let endpoints: (SimulationEndpoints) async throws -> Void = { endpoints in
                let store = NSTemporaryDirectory() + "herald-phone-\(UUID().uuidString)"
                defer { try? FileManager.default.removeItem(atPath: store) }
                let (phone, backend) = try endpoints.phoneAndBackend(
                    userID: "customer-42",
                    storeDirectory: store,
                    clock: clock,
                    timeline: timeline,
                    http: http,
                    logger: logger
                ) { configuration in
                    configuration.platform = platform
                    if flow != "telephony" && flow != "escalation" {
                        // Tokens come late: the SDK restarts as each arrives.
                        configuration.messagingTokenDelay = .milliseconds(600)
                        configuration.voipTokenDelay = .milliseconds(1200)
                    }
                }
                try await phone.launch()
                do {
                    try await phone.wait("a session started with every push token") { phone in
                        guard let session = phone.session else { return false }
                        return session.isStarted && session.tokens.messaging != nil
                            && (platform != .ios || session.tokens.voip != nil)
                    }
                    try await Simulation.$endpoints.withValue(endpoints) { try await body(phone, backend, clock) }
                } catch {
                    await phone.stop()
                    throw error
                }
                // The phone's loops end before the stack and the HTTP client they use.
                await phone.stop()
            }
            if let relay = options.relay, let sandbox = options.sandbox {
                guard let key = try? String(contentsOfFile: options.apiKeyFile, encoding: .utf8) else {
                    throw ValidationError("cannot read \(options.apiKeyFile)")
                }
                try await endpoints(
                    SimulationEndpoints(
                        relayURL: relay,
                        sandboxURL: sandbox,
                        apiKey: key.trimmingCharacters(in: .whitespacesAndNewlines),
                        bundleID: options.bundle
                    )
                )
            } else {
                try await SimulationStack.with(clock: clock, logger: logger) { try await endpoints($0) }
            }
        } catch {
            printed()
            try? await http.shutdown()
            throw error
        }
        printed()
        try await http.shutdown()
        return timeline
    }

    static func messaging(phone: EmulatedPhone, backend: SimulatedBackend, clock: TestClock) async throws {
        try await phone.presence(.background)
        let messages = [
            (0, "Hi, this is Dana from Acme support. I am looking at your order now."),
            (4, "Your replacement ships today; the tracking number is in your account."),
            (10, "Anything else I can help with? This chat stays open for 24 hours."),
        ]
        var minute = 0
        for (index, (at, text)) in messages.enumerated() {
            clock.advance(by: .seconds(Int64(at - minute) * 60))
            minute = at
            let body =
                #"{"to":"customer-42","from":{"id":"agent-dana","name":"Dana (Acme support)"},"conversation":"case-1001","text":"\#(text)","idempotency_key":"case-1001-\#(index)"}"#
            let receipt = try await backend.postRecorded("/v1/messages", body) {
                "message \(index + 1) of 3 at minute \(at), \($0.pushes.count) push(es)"
            }
            try await phone.wait("notification \(index + 1)") { $0.notifications.count >= index + 1 }
            try await backend.recordAlertsAccepted(receipt.pushes.map(\.pushID), subject: receipt.id, phone: phone)
        }
        if let last = phone.notifications.last {
            try await phone.tap(last)
        }
    }

    static func finish(_ timeline: Timeline, options: SimulateCommand.Options, title: String) throws {
        if let path = options.json {
            try timeline.json().write(to: URL(filePath: path))
            print("timeline written to \(path)")
        }
        if let path = options.html {
            let clock =
                options.relay == nil
                ? "Times are on a simulated clock the relay shares: its minutes of waiting pass at once."
                : "Times are on a simulated clock; the running relay's own times are placed by what they caused."
            try Data(timeline.html(title: title, clock: clock).utf8).write(to: URL(filePath: path))
            print("sequence diagram written to \(path)")
        }
        let events = timeline.all
        let pushes = events.filter { $0.step == "push delivered" || $0.step == "data message delivered" }
        print(
            "\(title): \(events.count) steps, \(pushes.count) push(es) delivered "
                + "(\(pushes.map { "\($0.pushType ?? "?")\($0.priority.map { " \($0)" } ?? "")" }.joined(separator: ", ")))"
        )
    }
}
