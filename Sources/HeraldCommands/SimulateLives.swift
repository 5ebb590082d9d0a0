import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore

extension SimulateCommand {
    struct DualChannel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dual-channel",
            abstract: "The dual channel: live while the app is open, pushed when backgrounded or closed.",
            discussion: """
                The participant's app is open on the quiz session: the app holds the live channel \
                and sends a presence heartbeat every 30 simulated seconds, and the session's news \
                arrives over the channel with no push. The app goes to the background: the next \
                message is a push the extension (Android: the messaging service) shows. The user \
                swipes the app away: the next one is a push too, shown while the app is not \
                running; a tap launches the app, which reconnects, resyncs and opens the channel \
                again, and the last message arrives live. Exits non-zero if any message takes the \
                wrong path.
                """
        )

        @OptionGroup var phone: PhoneOptions

        func run() async throws {
            try await phone.play("dual-channel", named: "dual-channel") {
                try await Simulation.dualChannel(phone: $0, backend: $1, clock: $2)
            }
        }
    }
}

extension Simulation {
    static let quiz = "quiz-session-42"

    /// Seed 003: live while open, push when backgrounded or closed, live again once reopened.
    static func dualChannel(phone: EmulatedPhone, backend: SimulatedBackend, clock: TestClock) async throws {
        try await phone.open(conversation: quiz)
        try await waitForLive(phone, activeIn: quiz)
        try await sendLive(1, "The quiz session has started: question 1 of 10.", phone: phone, backend: backend)
        // Thirty seconds on the session screen: one more heartbeat keeps the presence fresh.
        clock.advance(by: .seconds(30))
        try await phone.wait("the second heartbeat") { $0.heartbeats.count >= 2 }

        try await phone.enterBackground()
        try await waitForLive(phone, activeIn: nil)
        try await sendPushed(2, "Question 2 is open: 30 seconds to answer.", phone: phone, backend: backend)

        try await phone.terminate()
        try await sendPushed(3, "Question 3 is open: you are in third place.", phone: phone, backend: backend)
        guard let last = phone.notifications.last else { throw ValidationError("no notification to tap") }
        try await phone.tap(last)
        guard phone.life == .foreground else {
            throw ValidationError("the tap left the app \(phone.life.description), not in the foreground")
        }
        try await waitForLive(phone, activeIn: quiz)
        try await sendLive(4, "Question 4 is open: the last one.", phone: phone, backend: backend)
    }

    /// A quiz message from the session's host.
    static func quizMessage(_ number: Int, _ text: String) -> String {
        #"{"to":"customer-42","from":{"id":"agent-dana","name":"Dana (quiz host)"},"conversation":"\#(quiz)","text":"\#(text)","idempotency_key":"quiz-42-\#(number)"}"#
    }

    /// A message that must arrive over the live channel: no push, shown in the conversation.
    static func sendLive(_ number: Int, _ text: String, phone: EmulatedPhone, backend: SimulatedBackend) async throws {
        let sent = backend.timeline.time
        let receipt = try await backend.post("/v1/messages", quizMessage(number, text))
        // Named apart from the requests that lead to a push (`POST /v1/…` steps, each followed to
        // its notification): a message delivered live has no push to follow.
        backend.timeline.record(
            "backend",
            "relay",
            "message posted",
            detail: "POST /v1/messages → 202, message \(number): "
                + (receipt.pushes.isEmpty ? "no push, " : "\(receipt.pushes.count) push(es), ")
                + receipt.skipped.map(\.reason).joined(separator: ", "),
            at: sent
        )
        guard receipt.pushes.isEmpty, receipt.skipped.map(\.reason) == ["delivered_live"] else {
            throw ValidationError("message \(number) was not delivered live: \(receipt)")
        }
        try await phone.wait("message \(number) in the conversation") { phone in
            phone.appMessages.contains { $0.id == receipt.id && $0.source == .live }
        }
        try await waitForAcknowledgement(phone, messageID: receipt.id)
    }

    /// Waits until the in-process relay has the app's acknowledgement of a live message, before a
    /// flow moves the clock past its timeout (10 s) or the app closes the channel: either would
    /// have the relay push the message as unacknowledged.
    static func waitForAcknowledgement(_ phone: EmulatedPhone, messageID: String) async throws {
        guard let live = endpoints?.live, let device = phone.store.registration()?.deviceID else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        while live.isAwaitingAcknowledgement(deviceID: device, messageID: messageID) {
            guard ContinuousClock.now < deadline else {
                throw ValidationError("the relay did not get the acknowledgement of message \(messageID)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// A message that must be pushed and shown as a notification.
    static func sendPushed(
        _ number: Int,
        _ text: String,
        phone: EmulatedPhone,
        backend: SimulatedBackend
    ) async throws {
        let shown = phone.notifications.count
        let receipt = try await backend.postRecorded("/v1/messages", quizMessage(number, text)) {
            "message \(number): \($0.pushes.count) push(es), app \(phone.life.description)"
        }
        guard receipt.pushes.count == 1 else {
            throw ValidationError("message \(number) was not pushed: \(receipt)")
        }
        try await phone.wait("notification for message \(number)") { $0.notifications.count > shown }
        try await backend.recordAlertsAccepted(receipt.pushes.map(\.pushID), subject: receipt.id, phone: phone)
    }

    /// Waits until the relay holds the phone's channel active in `conversation` (nil: no channel
    /// active anywhere), when the simulation runs the relay in-process; a running relay is not
    /// asked (its frames are handled in order, the app's heartbeat after them).
    static func waitForLive(_ phone: EmulatedPhone, activeIn conversation: String?) async throws {
        guard let live = endpoints?.live, let device = phone.store.registration()?.deviceID else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let done =
                if let conversation {
                    live.isActive(deviceID: device, in: conversation)
                } else {
                    !live.isOpen(deviceID: device)
                }
            if done { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw ValidationError(
            "the relay did not see the live channel \(conversation.map { "active in " + $0 } ?? "closed")"
        )
    }
}
