import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldDomain
import HeraldPush
import HeraldStore
import Logging
import ServiceLifecycle

/// `herald device`: one emulated iPhone or Android phone against a relay and a sandbox.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Run one emulated phone: tokens from the sandbox, activation, and what the user sees.",
        discussion: """
            The phone gets its tokens from the sandbox (with iOS's delays if asked), follows the \
            SDK's late-token rule (stop / recreate / start the session as tokens arrive), \
            activates with the relay (the API key stands in for the app backend's login), and \
            prints every step and every notification as the user would see it. Its app-group \
            store (--store) keeps keys, credential and tokens across runs, so a second run \
            starts with the persisted tokens. VoIP pushes are reported to CallKit; --calls says \
            whether the user answers or declines. With --platform android the phone has one FCM \
            token, and the app's messaging service opens Herald's data messages and shows the \
            notification or the incoming-call screen. With --platform web it is a browser: it \
            makes its subscription keys, fetches the app's application server key, subscribes \
            at the sandbox's push service, and its service worker decrypts each Web Push \
            message (RFC 8291) and opens Herald's data as the Android app does. With --platform \
            huawei it is an Android phone without Google's services: one Push Kit token, and \
            the same messaging service for Push Kit's data messages. --life puts the app in the foreground \
            (with --conversation on screen: the live channel, a heartbeat every 30 s), the \
            background (the chat left) or terminated (the system still shows pushes; --tap \
            launches it); --notifications denied withholds every notification and reports it; \
            --logout-after logs out. SIGINT or SIGTERM stops it.
            """
    )

    @Option(help: "The relay's URL.")
    var relay: String = "http://127.0.0.1:8080"

    @Option(help: "The sandbox's control URL.")
    var sandbox: String = "http://127.0.0.1:2198"

    @Option(help: "The user this phone belongs to.")
    var user: String

    @Option(help: "The app's bundle id (Android: its package name).")
    var bundle: String = "com.example.herald"

    @Option(help: "ios, android, web (a browser: Web Push to its service worker) or huawei (Push Kit).")
    var platform: String = "ios"

    @Option(name: .customLong("api-key-file"), help: "The relay's API key, for the first activation.")
    var apiKeyFile: String = "keys/api.key"

    @Option(help: "The app-group store; data/device-<user> by default.")
    var store: String?

    @Option(
        name: .customLong("messaging-token-delay-ms"),
        help: "How long the system (iOS, or Firebase on Android) takes to hand out the messaging token."
    )
    var messagingTokenDelayMs: Int = 0

    @Option(name: .customLong("voip-token-delay-ms"), help: "How long iOS takes to hand out the VoIP token.")
    var voipTokenDelayMs: Int = 0

    @Option(help: "What the user does when the phone rings: ring (nothing), answer or decline.")
    var calls: String = "ring"

    @Option(
        help: "What the user picks when a callback's dialog shows: show (nothing), ready, snooze or cancel."
    )
    var callbacks: String = "show"

    @Option(
        name: .customLong("notification-log"),
        help: "Append what the notification center shows to this file, as JSON lines."
    )
    var notificationLog: String?

    @Flag(help: "Print the timeline as JSON lines.")
    var json = false

    @Option(help: "Where the app is once started: foreground, background or terminated.")
    var life: String = "foreground"

    @Option(help: "The conversation on screen in the foreground (live channel, heartbeats) and left in the background.")
    var conversation: String?

    @Option(help: "The notification permission the user gave: granted or denied (reported to the relay).")
    var notifications: String?

    @Option(
        name: .customLong("logout-after"),
        help: "Log out once this many messages reached the user (notifications and live messages)."
    )
    var logoutAfter: Int?

    @Flag(help: "Tap every notification shown: launches a terminated app, brings back one in the background.")
    var tap = false

    @Option(help: "iOS: the APNs environment of the build, development (debug) or production (TestFlight, App Store).")
    var environment: String?

    func validate() throws {
        guard DevicePlatform(rawValue: platform) != nil else {
            throw ValidationError("--platform must be ios, android, web or huawei")
        }
        guard ["ring", "answer", "decline"].contains(calls) else {
            throw ValidationError("--calls must be ring, answer or decline")
        }
        guard callbacks == "show" || CallbackChoice(rawValue: callbacks) != nil else {
            throw ValidationError("--callbacks must be show, ready, snooze or cancel")
        }
        guard (0...3_600_000).contains(messagingTokenDelayMs), (0...3_600_000).contains(voipTokenDelayMs) else {
            throw ValidationError("token delays must be between 0 and 3600000 ms")
        }
        guard PhoneService.Life(rawValue: life) != nil else {
            throw ValidationError("--life must be foreground, background or terminated")
        }
        if let notifications, NotificationPermission(rawValue: notifications) == nil {
            throw ValidationError("--notifications must be granted or denied")
        }
        if let logoutAfter, logoutAfter < 1 { throw ValidationError("--logout-after must be 1 or more") }
        if let environment {
            guard APNsEnvironment(rawValue: environment) != nil else {
                throw ValidationError("--environment must be development or production")
            }
            guard platform == "ios" else { throw ValidationError("--environment is for iOS (APNs) only") }
        }
    }

    func run() async throws {
        guard let key = try? String(contentsOfFile: apiKeyFile, encoding: .utf8) else {
            throw ValidationError("cannot read \(apiKeyFile) (the relay's API key; start `herald serve` first)")
        }
        var logger = Logger(label: "herald.device")
        logger.logLevel = .warning
        var configuration = PhoneConfiguration(
            relayURL: relay,
            sandboxURL: sandbox,
            apiKey: key.trimmingCharacters(in: .whitespacesAndNewlines),
            userID: user,
            bundleID: bundle,
            storeDirectory: store ?? "data/device-\(user)"
        )
        configuration.platform = DevicePlatform(rawValue: platform) ?? .ios
        configuration.messagingTokenDelay = .milliseconds(messagingTokenDelayMs)
        configuration.voipTokenDelay = .milliseconds(voipTokenDelayMs)
        configuration.notificationLogPath = notificationLog
        configuration.callbackChoice = CallbackChoice(rawValue: callbacks)
        configuration.notificationPermission = notifications.flatMap(NotificationPermission.init(rawValue:))
        configuration.apnsEnvironment = environment.flatMap(APNsEnvironment.init(rawValue:))
        let json = json
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let timeline = Timeline(
            clock: WallClock(),
            observer: { event in
                if json, let data = try? encoder.encode(event) {
                    print(String(decoding: data, as: UTF8.self))
                } else if !json {
                    print(Timeline.line(event))
                }
                fflush(nil)
            }
        )
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let phone = try EmulatedPhone(configuration: configuration, http: http, timeline: timeline, logger: logger)
        let service = PhoneService(
            phone: phone,
            calls: calls,
            life: PhoneService.Life(rawValue: life) ?? .foreground,
            conversation: conversation,
            tap: tap,
            logoutAfter: logoutAfter
        )
        let group = ServiceGroup(
            configuration: .init(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        do {
            try await group.run()
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }
}

/// The phone under a service group: launched on start, stopped on SIGINT / SIGTERM.
struct PhoneService: Service {
    let phone: EmulatedPhone
    /// `ring`, `answer` or `decline`.
    let calls: String
    var life: Life = .foreground
    var conversation: String?
    var tap = false
    var logoutAfter: Int?

    /// Where the app is once started (`--life`).
    enum Life: String {
        case foreground, background, terminated
    }

    func run() async throws {
        try await phone.launch(showing: conversation)
        if life != .foreground {
            // The tokens first: a terminated app would not hear them, and the relay must have them.
            let ios = phone.configuration.platform == .ios
            try await phone.wait("the push tokens", timeout: .seconds(60)) { phone in
                guard let session = phone.session, session.isStarted else { return false }
                return session.tokens.messaging != nil && (!ios || session.tokens.voip != nil)
            }
            if life == .background { try await phone.enterBackground() }
            if life == .terminated { try await phone.terminate() }
        }
        await cancelWhenGracefulShutdown {
            var tapped = 0
            var loggedOut = false
            while !Task.isCancelled {
                let (taps, logout) = (tap ? tapped : nil, loggedOut ? nil : logoutAfter)
                try? await phone.wait("something for the user", timeout: .seconds(3600)) { phone in
                    (calls != "ring" && phone.callKit.calls.contains { $0.state == .ringing })
                        || taps.map { phone.notifications.count > $0 } ?? false
                        || logout.map { Self.reached(phone) >= $0 } ?? false
                }
                // Through the phone, not CallKit alone: the relay must hear the answer or the
                // decline (else the call ends missed, with a missed-call alert).
                for call in phone.callKit.calls where call.state == .ringing {
                    do {
                        if calls == "answer" { try await phone.answerCall(call.callID) }
                        if calls == "decline" { try await phone.declineCall(call.callID) }
                    } catch {
                        Self.report(error)
                    }
                }
                if tap {
                    for notification in phone.notifications.dropFirst(tapped) {
                        do { try await phone.tap(notification) } catch { Self.report(error) }
                    }
                    tapped = phone.notifications.count
                }
                if let logoutAfter, !loggedOut, Self.reached(phone) >= logoutAfter {
                    loggedOut = true
                    do { try await phone.logout() } catch { Self.report(error) }
                }
            }
        }
        await phone.stop()
    }

    /// Messages that reached the user: notifications shown and messages received live.
    static func reached(_ phone: EmulatedPhone) -> Int {
        phone.notifications.count + phone.appMessages.count { $0.source == .live }
    }

    static func report(_ error: any Error) {
        FileHandle.standardError.write(Data("herald device: \(error)\n".utf8))
    }
}
