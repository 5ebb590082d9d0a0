public import AsyncHTTPClient
import Foundation
import HeraldCrypto
public import HeraldDomain
import HeraldPush
import HeraldRelayAPI
public import Logging
import Synchronization

/// One emulated phone with the vendor SDK: tokens from the sandbox with the system's delays, the
/// late-token rule, the app-group store and the notification center; on iOS the Notification
/// Service Extension, PushKit and CallKit, on Android the app's FCM messaging service and its
/// incoming-call screen.
public final class EmulatedPhone: Sendable {
    public let configuration: PhoneConfiguration
    public let store: AppGroupStore
    public let timeline: Timeline
    public let callKit: CallKitEmulator
    public let pushKit: PushKitEmulator
    public let serviceExtension: NotificationServiceEmulator
    /// The Android app's messaging service (Android mode).
    public let messagingService: FirebaseMessagingServiceEmulator
    let http: DeviceHTTP
    let logger: Logger
    /// The callback dialogs shown and their answers (EmulatedPhone+Callbacks.swift).
    public let callbacks = PhoneCallbacks()
    /// The SDK session's live channel for calls (`EmulatedPhone+Calls`).
    let callLink = CallLink()
    /// The app's life: foreground, background, terminated, logged out (`EmulatedPhone+Life`).
    let lifeLink: LifeLink
    /// The phone's long-lived loops, cancelled and awaited by `stop()`.
    let tasks = PhoneTasks()

    private struct State {
        var machine = LateTokenMachine()
        var session: SDKSession?
        var sessions = 0
        var pushAvailable = false
        var shown: [DisplayedNotification] = []
        /// The receipts the relay took, as it recorded them.
        var receipts: [PushReceipt] = []
        /// The pushes whose notification the user tapped (one `tapped` receipt each).
        var taps = TapReceipts()
        var duplicates = 0
        var diagnostics: [String] = []
        /// The device connection and the late-token timeout, until `shutdown()`.
        var loop: PhoneTasks.Handle?
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// Counts the changes, so a waiter knows whether one came since it last looked.
        var changes: UInt64 = 0
    }

    private let state = Mutex(State())

    public init(configuration: PhoneConfiguration, http: HTTPClient, timeline: Timeline, logger: Logger) throws {
        self.configuration = configuration
        self.store = try AppGroupStore(directory: configuration.storeDirectory)
        self.timeline = timeline
        self.http = DeviceHTTP(http: http)
        self.logger = logger
        lifeLink = LifeLink(saved: LifeLink.load(store), permission: configuration.notificationPermission)
        callKit =
            switch configuration.platform {
            case .ios: CallKitEmulator(timeline: timeline)
            // A browser has no call screen: its service worker shows the call as a notification
            // that stays until answered (`requireInteraction`, Answer and Decline actions).
            case .web: CallKitEmulator(timeline: timeline, reporter: "service-worker", screen: "call-notification")
            case .android, .huawei: CallKitEmulator(timeline: timeline, reporter: "fcm-service", screen: "call-screen")
            }
        pushKit = PushKitEmulator(callKit: callKit, violationLimit: configuration.violationLimit, timeline: timeline)
        serviceExtension = NotificationServiceEmulator(
            store: store,
            budget: configuration.extensionBudget,
            delay: configuration.extensionDelay,
            rememberedPushes: configuration.rememberedPushes,
            clock: timeline.clock
        )
        messagingService = FirebaseMessagingServiceEmulator(
            store: store,
            rememberedPushes: configuration.rememberedPushes,
            clock: timeline.clock
        )
    }

    /// The push network as the timeline names it.
    var network: String {
        switch configuration.platform {
        case .ios: "apns"
        case .web: "push-service"
        case .android, .huawei: "fcm"
        }
    }

    // MARK: What the user and tests see

    /// The notification center, oldest first.
    public var notifications: [DisplayedNotification] { state.withLock { $0.shown } }
    /// The receipts the relay took from this phone, in the order they were sent.
    public var receipts: [PushReceipt] { state.withLock { $0.receipts } }

    /// Keeps a receipt the relay recorded, for `receipts` and the phone's waiters.
    func recorded(_ receipt: PushReceipt) {
        state.withLock { $0.receipts.append(receipt) }
        changed()
    }
    /// The push whose `tapped` receipt a tap on `notification` sends, or nil (`TapReceipts`).
    func tapReceipt(for notification: DisplayedNotification) -> String? {
        state.withLock { $0.taps.tap(notification) }
    }
    /// Pushes dropped because they were shown before (re-sent by the relay, at least once).
    public var duplicatesDropped: Int { state.withLock { $0.duplicates } }
    /// What the extension or PushKit reported when they could not do their job.
    public var diagnostics: [String] { state.withLock { $0.diagnostics } }
    /// Whether a push token is known (else the app shows "Push service not available").
    public var pushAvailable: Bool { state.withLock { $0.pushAvailable } && !notificationsDenied }
    /// The running session, if any.
    public var session: SDKSession? { state.withLock { $0.session } }
    /// How many sessions this launch created.
    public var sessionCount: Int { state.withLock { $0.sessions } }

    /// Waits until `condition` holds, re-checking after every change on the phone; throws
    /// `CancellationError` when the waiting task is cancelled.
    public func wait(
        _ what: String,
        timeout: Duration = .seconds(20),
        until condition: @escaping @Sendable (EmulatedPhone) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Read before the condition: a change while it is evaluated is then not missed (the
            // wait below returns at once instead of sleeping until an unrelated change).
            let seen = state.withLock { $0.changes }
            if condition(self) { return }
            try Task.checkCancellation()
            guard ContinuousClock.now < deadline else { throw DeviceError.sandbox("timed out waiting for \(what)") }
            await nextChange(after: seen, before: deadline)
        }
    }

    /// Returns at the first change after the `seen`th (at once if it came already), or at
    /// `deadline`.
    private func nextChange(after seen: UInt64, before deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(until: deadline) }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let now = self.state.withLock { state -> Bool in
                            if Task.isCancelled || state.changes != seen { return true }
                            state.waiters[id] = continuation
                            return false
                        }
                        if now { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    func changed() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters.removeAll() }
            state.changes &+= 1
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Launch

    /// Starts the app: the late-token rule, then the device connection, until `shutdown()`.
    public func launch() async throws {
        try await launch(showing: nil)
    }

    /// Starts the phone and the app in the foreground, with `conversation` on screen if given
    /// (its live channel and heartbeats, `EmulatedPhone+Life`). The device connection is the
    /// system's: it stays up while the app is terminated, until `shutdown()`.
    public func launch(showing conversation: String?) async throws {
        let sandboxDevice = try await sandboxDeviceID()
        try await lifeEvent(.launch(conversation: conversation))
        guard state.withLock({ $0.loop == nil }) else { return }
        let inputs = AsyncStream.makeStream(of: SandboxEvent?.self)
        let sandbox = configuration.sandboxURL
        let timeout = configuration.tokenTimeout
        let logger = logger
        // The phone's loop until `shutdown()`, in the phone's group: the device connection and
        // the late-token timeout are its children.
        let loop = tasks.start {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    do {
                        try await SandboxLink.receive(sandbox: sandbox, deviceID: sandboxDevice, logger: logger) {
                            inputs.continuation.yield($0)
                        }
                    } catch  where !Task.isCancelled {
                        self.timeline.record(self.network, "app", "device connection ended", detail: "\(error)")
                    } catch {
                        // `shutdown()`: the phone ends the connection, nothing to record.
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    if !Task.isCancelled { inputs.continuation.yield(nil) }
                }
                for await input in inputs.stream {
                    if Task.isCancelled { break }
                    do {
                        try await self.handle(input)
                    } catch {
                        self.record(diagnostic: "\(error)")
                    }
                }
                group.cancelAll()
            }
        }
        state.withLock { $0.loop = loop }
    }

    /// The app's process starts (`AppLifeMachine`'s `startApp`): the late-token rule from the
    /// persisted tokens.
    func startAppProcess() async throws {
        timeline.record("user", "app", "app launched", detail: "persisted: \(store.tokens().summary)")
        try await perform(state.withLock { $0.machine.handle(.launched(persisted: store.tokens())) })
        timeline.record("app", network, "token retrieval started")
    }

    /// The app's process ends: its session and live channel; the device connection stays.
    func stopAppProcess() {
        closeCallChannel()
        let session = state.withLock { state -> SDKSession? in
            defer {
                state.machine = LateTokenMachine()
                state.session = nil
                state.sessions = 0
            }
            return state.session
        }
        session?.stop(phone: self)
        timeline.record("app", "app", "app terminated", detail: "the system still receives pushes")
    }

    /// Stops the app (the device connection closes; the sandbox stores what comes meanwhile).
    /// The phone's loops are cancelled; `stop()` also waits until they have ended.
    public func shutdown() {
        switchOff()
    }

    /// Stops the app as `shutdown()` does, and returns once the phone's loops (the device
    /// connection, the heartbeat timer, the live channel) and the life event in progress have
    /// ended.
    public func stop() async {
        let loops = switchOff()
        _ = await lifeLink.state.withLock { $0.tail }?.result
        // What the life event in progress started meanwhile (a live channel) ends too.
        let late = tasks.cancelAll()
        await loops?.value
        await late?.value
    }

    @discardableResult
    private func switchOff() -> Task<Void, Never>? {
        stopHeartbeatTimer()
        lifeEnded()
        state.withLock { state -> PhoneTasks.Handle? in
            defer { state.loop = nil }
            return state.loop
        }?.cancel()
        closeCallChannel()
        let loops = tasks.cancelAll()
        if let session = state.withLock({ $0.session }) { session.stop(phone: self) }
        // A later `launch()` starts over from the persisted tokens.
        state.withLock { $0.machine = LateTokenMachine() }
        return loops
    }

    private func sandboxDeviceID() async throws -> String {
        let file = store.path("sandbox-device")
        if let data = FileManager.default.contents(atPath: file) {
            let id = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty { return id }
        }
        let id = try await http.registerSandboxDevice(
            sandbox: configuration.sandboxURL,
            bundleID: configuration.bundleID,
            messagingDelay: configuration.messagingTokenDelay,
            voipDelay: configuration.voipTokenDelay,
            platform: configuration.platform,
            apnsEnvironment: configuration.platform == .ios ? configuration.apnsEnvironment : nil,
            applicationServerKey: try await applicationServerKey()
        )
        try? FileManager.default.removeItem(atPath: file)
        try SecretFile.write(Array((id + "\n").utf8), to: file, mode: 0o600)
        return id
    }

    private func handle(_ input: SandboxEvent?) async throws {
        switch input {
        case nil:
            try await perform(state.withLock { $0.machine.handle(.retrievalTimedOut) })
        case .token(let kind, let value)?:
            let name = kind == "voip" ? "VoIP token" : configuration.platform.messagingTokenName
            timeline.record(
                network,
                "app",
                configuration.platform == .web ? "push subscription received" : "\(name) received"
            )
            let event: LateTokenMachine.Event = kind == "voip" ? .voipToken(value) : .messagingToken(value)
            try await perform(state.withLock { $0.machine.handle(event) })
        case .notification(let push)?:
            await receive(push)
        case .fcmMessage(let message)?:
            await receive(message)
        case .webPush(let push)?:
            await receive(push)
        }
        changed()
    }

    private func perform(_ actions: [LateTokenMachine.Action]) async throws {
        for action in actions {
            switch action {
            case .startTokenRetrieval:
                break  // The device connection below is the retrieval.
            case .startSession(let tokens):
                let session = state.withLock { state -> SDKSession in
                    state.sessions += 1
                    let session = SDKSession(tokens: tokens, number: state.sessions)
                    state.session = session
                    return session
                }
                try await session.start(phone: self)
                await sessionStarted()
            case .stopSession:
                state.withLock { $0.session }?.stop(phone: self)
            case .persist(let tokens):
                try store.save(tokens)
                timeline.record("app", "app", "tokens persisted", detail: tokens.summary)
            case .reportPushUnavailable:
                state.withLock { $0.pushAvailable = false }
                timeline.record("app", "user", "Push service not available")
            case .reportPushAvailable:
                state.withLock { $0.pushAvailable = true }
                // Tokens came, but the user still denies notifications: nothing to announce.
                if !notificationsDenied { timeline.record("app", "user", "push service available") }
            }
            changed()
        }
        if case .running(let tokens) = state.withLock({ $0.machine.state }), !tokens.isEmpty {
            state.withLock { $0.pushAvailable = true }
        }
    }

    // MARK: Pushes

    private func receive(_ push: DeliveredPush) async {
        let subject = Self.subject(ofPayload: push.payload)
        timeline.record(
            "apns",
            "app",
            "push delivered",
            pushType: push.pushType,
            priority: .apns(push.priority),
            topic: push.topic,
            payloadBytes: push.payload.utf8.count,
            subject: subject,
            stage: .delivered
        )
        if push.pushType == "voip" {
            let handler: PushKitEmulator.Handler =
                configuration.reportsCalls
                ? PushKitEmulator.reportingHandler(store: store, timeline: timeline)
                : { @Sendable _, _ in }
            timeline.record("apns", "pushkit", "VoIP push handed to PushKit", subject: subject, stage: .delivered)
            let delivery = await pushKit.deliver(VoIPPush(apnsID: push.apnsID, payload: push.payload), to: handler)
            if case .violation(let count) = delivery {
                record(diagnostic: "VoIP push \(push.apnsID) was not reported to CallKit (\(count))")
            }
            // The app's receipts (docs/receipts.md, "The PushKit guard"): `delivered` as its handler
            // runs, `shown` once the call is reported to CallKit.
            let stages: [(ReceiptStage, ReceiptFailure?)] =
                switch delivery {
                case .reported: [(.delivered, nil), (.shown, nil)]
                case .violation: [(.delivered, nil)]
                case .suppressed: []
                }
            await sendReceipts(pushID: Self.pushID(ofPayload: push.payload), stages, subject: subject)
            if delivery == .reported, let call = PushKitEmulator.openCall(push.payload, store: store),
                callKit.call(call.callID)?.state == .ringing
            {
                await callReported(call.callID)
            }
            return
        }
        if notificationsDenied {
            withheld(by: "apns", subject: subject)
            return
        }
        if Self.isCallback(payload: push.payload) {
            callbacks.delivered(push.payload)
            let result = serviceExtension.receiveCallback(payload: push.payload, pushType: push.pushType)
            await handleCallback(result, component: "nse", subject: subject)
            return
        }
        let result = await serviceExtension.receive(payload: push.payload, pushType: push.pushType)
        if result.duplicate {
            dropped(by: "nse", result.diagnostic)
            return
        }
        if result.ranExtension {
            timeline.record(
                "app",
                "nse",
                result.opened ? "extension opened the sealed content" : "extension kept the generic content",
                detail: result.diagnostic,
                subject: subject,
                stage: .opened
            )
        }
        if let diagnostic = result.diagnostic { record(diagnostic: diagnostic) }
        if let shown = result.notification {
            show(shown, from: result.ranExtension ? "nse" : "apns", subject: subject)
        }
        await sendReceipts(pushID: Self.pushID(ofPayload: push.payload), Self.receiptStages(result), subject: subject)
    }

    /// `component` hands `shown` to the notification center: kept, written to the notification
    /// log, and on the timeline with what the user sees.
    func show(
        _ shown: DisplayedNotification,
        from component: String,
        to display: String = "notification-center",
        subject: String?
    ) {
        state.withLock { $0.shown.append(shown) }
        appendToLog(shown)
        timeline.record(
            component,
            display,
            "notification shown",
            detail: shown.thread.map { "thread \($0)" },
            subject: shown.messageID ?? subject,
            stage: .shown,
            userSees: Self.seen(shown)
        )
    }

    /// Counts and logs a repeat that was not shown; it is not a diagnostic (at least once is
    /// the relay's documented promise), but it is worth seeing.
    func dropped(by component: String, _ detail: String?) {
        state.withLock { $0.duplicates += 1 }
        timeline.record(component, component, "duplicate push dropped", detail: detail)
        logger.info("duplicate push dropped", metadata: ["detail": "\(detail ?? "")"])
        changed()
    }

    private func appendToLog(_ notification: DisplayedNotification) {
        guard let path = configuration.notificationLogPath else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let line = try? encoder.encode(notification) else { return }
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: line + Data([0x0A]))
    }

    /// A notification shown for a callback push (EmulatedPhone+Callbacks.swift).
    func showCallback(_ shown: DisplayedNotification) {
        state.withLock { $0.shown.append(shown) }
        appendToLog(shown)
        changed()
    }

    func recordCallbackDiagnostic(_ diagnostic: String) { record(diagnostic: diagnostic) }

    /// Wakes `wait(_:until:)` after a callback was answered.
    func callbackChanged() { changed() }

    func record(diagnostic: String) {
        state.withLock { $0.diagnostics.append(diagnostic) }
        logger.notice("device diagnostic", metadata: ["detail": "\(diagnostic)"])
        changed()
    }
}
