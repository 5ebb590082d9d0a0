public import HeraldCrypto
public import HeraldRelayAPI
import Synchronization

/// What the user picks in a callback's dialog (`herald device --callbacks ready|snooze|cancel`):
/// the dialog's action of that kind.
public enum CallbackChoice: String, Sendable, Hashable, CaseIterable {
    case ready
    case snooze
    case cancel

    /// The kind of action the choice picks.
    public var kind: CallbackActionKind {
        switch self {
        case .ready: .connect
        case .snooze: .snooze
        case .cancel: .cancel
        }
    }
}

/// The callbacks a phone was shown and what it answered, for tests and the emulator's output.
public final class PhoneCallbacks: Sendable {
    /// One dialog shown, and the relay's answer to the user's choice (nil when no choice was
    /// made or the relay refused it).
    public struct Entry: Sendable, Hashable {
        public var content: CallbackContent
        public var answer: CallbackAnswerView?
    }

    private let entries = Mutex<[Entry]>([])
    private let planned = Mutex<[CallbackChoice]>([])
    private let payloads = Mutex<[String]>([])

    init() {}

    /// Oldest first.
    public var all: [Entry] { entries.withLock { $0 } }

    /// The user's next choices, one per dialog, before the configuration's `callbackChoice`
    /// (a scripted flow: snooze, then ready).
    public func plan(_ choices: [CallbackChoice]) { planned.withLock { $0 = choices } }

    func nextPlanned() -> CallbackChoice? {
        planned.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    /// The APNs bodies of the callback pushes delivered, oldest first (for replay tests).
    public var deliveredPayloads: [String] { payloads.withLock { $0 } }

    func delivered(_ payload: String) { payloads.withLock { $0.append(payload) } }
}

extension DeviceHTTP {
    /// `POST /v1/callbacks/{id}/actions/{action}` with the device credential.
    public func answerCallback(
        relay: String,
        id: String,
        action: String,
        credential: String
    ) async throws
        -> CallbackAnswerView
    {
        try await call(
            .POST,
            relay + "/v1/callbacks/\(id)/actions/\(action)",
            bearer: credential,
            expect: 200,
            as: CallbackAnswerView.self,
            failure: DeviceError.relay
        )
    }
}

extension EmulatedPhone {
    /// The name a timeline gives one push of a callback: its stages are ordered per push.
    public static func callbackSubject(_ id: String, _ sequence: UInt16) -> String { "\(id) push \(sequence)" }

    /// Whether an APNs body or FCM data names a callback.
    public static func isCallback(payload: String) -> Bool {
        payload.contains("\"kind\":\"callback\"") && payload.contains("\"HERALD_CALLBACK\"")
    }

    /// Shows what the NSE or the messaging service made of a callback push, and answers it with
    /// the configured choice (with the device credential).
    func handleCallback(_ result: CallbackPushResult, component: String, subject: String?) async {
        if result.duplicate {
            timeline.record(component, component, "duplicate push dropped", detail: result.diagnostic)
            return
        }
        let named = result.callback.map { Self.callbackSubject($0.callbackID, $0.sequence) } ?? subject
        timeline.record(
            "app",
            component,
            result.callback != nil
                ? "\(component) opened the callback's dialog" : "\(component) kept the generic content",
            detail: result.diagnostic,
            subject: named,
            stage: .opened
        )
        if let diagnostic = result.diagnostic { recordCallbackDiagnostic(diagnostic) }
        guard let shown = result.notification else { return }
        showCallback(shown)
        guard let content = result.callback else {
            timeline.record(
                component,
                "notification-center",
                "notification shown",
                subject: named,
                stage: .shown,
                userSees: Self.seen(shown)
            )
            return
        }
        let buttons = content.dialog.actions.map(\.label).joined(separator: " | ")
        timeline.record(
            component,
            "notification-center",
            "notification shown",
            detail: "callback dialog, actions " + content.dialog.actions.map(\.id).joined(separator: ", "),
            subject: named,
            stage: .shown,
            userSees: Self.seen(shown) + " [" + buttons + "]"
        )
        await answerDialog(content, subject: named)
    }

    /// Picks the planned (or configured) action of a callback's dialog and posts it to the
    /// relay; the callback is kept with the relay's answer, if any.
    private func answerDialog(_ content: CallbackContent, subject named: String?) async {
        var entry = PhoneCallbacks.Entry(content: content, answer: nil)
        defer {
            callbacks.append(entry)
            callbackChanged()
        }
        guard let choice = callbacks.nextPlanned() ?? configuration.callbackChoice else { return }
        guard let action = content.dialog.actions.first(where: { $0.kind == choice.kind }) else {
            recordCallbackDiagnostic("the dialog offers no '\(choice.rawValue)' action")
            return
        }
        timeline.record(
            "user",
            "app",
            "picked \"\(action.label)\"",
            detail: "action \(action.id)",
            subject: named,
            stage: .acted
        )
        guard let registration = store.registration(), let credential = store.credential() else {
            recordCallbackDiagnostic("the phone is not activated: the callback cannot be answered")
            return
        }
        timeline.record(
            "app",
            "relay",
            "action posted",
            detail: "POST /v1/callbacks/\(content.callbackID)/actions/\(action.id) with the device credential",
            subject: named,
            stage: .acted
        )
        do {
            let answer = try await http.answerCallback(
                relay: registration.relayURL,
                id: content.callbackID,
                action: action.id,
                credential: credential
            )
            entry.answer = answer
            timeline.record(
                "relay",
                "app",
                "callback \(answer.state.rawValue)",
                detail: answer.nextPushAtMs.map { "next push at \(RequestTime.format($0))" },
                subject: named,
                stage: .acted
            )
        } catch {
            recordCallbackDiagnostic("\(error)")
        }
    }
}
