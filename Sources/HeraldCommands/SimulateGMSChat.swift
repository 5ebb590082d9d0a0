import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore

extension SimulateCommand {
    struct GMSChat: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gms-chat",
            abstract: "A chat in the background: disconnect, the delayed first push, a tap that reconnects.",
            discussion: """
                The customer opens the chat (the app loads its transcript, holds the live channel \
                and sends heartbeats), then leaves the app: it disconnects from the chat with the \
                last transcript position it saw. The agent types (filtered: no push) and replies \
                twice; the relay's first-push timer (30 simulated seconds) sends one push with both \
                lines; a later reply is pushed at once. The user taps the notification: the app \
                comes back, reconnects (the relay answers every event since the disconnect) and \
                the agent's next line is not pushed: it arrives over the live channel (a chat_event \
                frame) and shows in the conversation. Exits non-zero if any step goes otherwise.
                """
        )

        @OptionGroup var phone: PhoneOptions

        func run() async throws {
            try await phone.play("gms-chat", named: "GMS chat") {
                try await Simulation.gmsChat(phone: $0, backend: $1, clock: $2)
            }
        }
    }
}

extension Simulation {
    /// A chat event the backend posted, kept until the push it led to is known.
    struct PostedEvent {
        var sent: Int64
        var detail: String
    }

    static let chat = "chat-1001"
    static let agent = #"{"id":"agent-dana","name":"Dana (Acme support)"}"#

    /// Seed 001: background, disconnect, the delayed first push, a tap, reconnect and resync.
    static func gmsChat(phone: EmulatedPhone, backend: SimulatedBackend, clock: TestClock) async throws {
        // The agent greets before the customer looks; opening the chat loads it.
        _ = try await postEvent("Message.Text", "Hi, this is Dana. I am looking at your order now.", backend)
            .record(backend)
        try await phone.open(conversation: chat)
        try await waitForLive(phone, activeIn: chat)
        guard phone.appMessages.contains(where: { $0.conversation == chat }) else {
            throw ValidationError("opening the chat did not show its transcript")
        }

        try await phone.enterBackground()
        try await waitForLive(phone, activeIn: nil)

        let typing = try await postEvent("Notice.TypingStarted", nil, backend)
        guard typing.receipt.filtered else { throw ValidationError("typing was not filtered: \(typing.receipt)") }
        _ = typing.record(backend)
        let first = try await postEvent("Message.Text", "Your replacement ships today.", backend)
        clock.advance(by: .seconds(10))
        let second = try await postEvent("Message.Text", "The tracking number is in your account.", backend)
        guard first.receipt.pushes.isEmpty, !first.receipt.scheduled.isEmpty, second.receipt.pushes.isEmpty else {
            throw ValidationError("the first agent lines did not wait for the first-push delay")
        }
        // The delay ends 30 s after the first line: one push with both.
        let shown = phone.notifications.count
        clock.advance(by: .seconds(20))
        try await phone.wait("the first push") { $0.notifications.count > shown }
        try await recordChatPush(after: [first, second], phone: phone, backend: backend)

        let third = try await postEvent("Message.Text", "Anything else I can help with?", backend)
        guard third.receipt.pushes.count == 1 else {
            throw ValidationError("a reply after the first push was not pushed at once: \(third.receipt)")
        }
        try await phone.wait("the second push") { $0.notifications.count > shown + 1 }
        try await recordChatPush(after: [third], phone: phone, backend: backend)

        guard let last = phone.notifications.last else { throw ValidationError("no notification to tap") }
        try await phone.tap(last)
        try await waitForLive(phone, activeIn: chat)
        let missed = phone.appMessages.filter { $0.conversation == chat && $0.source == .transcript }
        guard missed.contains(where: { $0.text == "Anything else I can help with?" }) else {
            throw ValidationError("the reconnect did not bring the events missed")
        }
        let after = try await postEvent("Message.Text", "Glad I could help. Bye!", backend)
        _ = after.record(backend)
        guard after.receipt.pushes.isEmpty, after.receipt.scheduled.isEmpty else {
            throw ValidationError("a reply while the app is back was pushed: \(after.receipt)")
        }
        // Back in the chat, the reply arrives over the live channel while the customer looks.
        try await phone.wait("the reply over the live channel") {
            $0.appMessages.contains { $0.source == .live && $0.text == "Glad I could help. Bye!" }
        }
    }

    /// One posted chat event and its receipt.
    struct ChatPost {
        var receipt: ChatEventReceipt
        var event: PostedEvent

        /// Records the post with no push to follow: named apart from the requests that lead to a
        /// push (`POST /v1/…` steps, each followed to the notification it caused).
        func record(_ backend: SimulatedBackend) -> Self {
            backend.timeline.record(
                "backend",
                "relay",
                "chat event posted",
                detail: "POST /v1/chats/\(chat)/events → 202: " + event.detail,
                at: event.sent
            )
            return self
        }
    }

    static func postEvent(_ type: String, _ text: String?, _ backend: SimulatedBackend) async throws -> ChatPost {
        let sent = backend.timeline.time
        let body =
            #"{"to":"customer-42","type":"\#(type)","from":\#(agent)"# + (text.map { #","text":"\#($0)""# } ?? "") + "}"
        let receipt: ChatEventReceipt = try await backend.request(.POST, "/v1/chats/\(chat)/events", body, expect: 202)
        let outcome =
            receipt.filtered
            ? "filtered, no push"
            : !receipt.pushes.isEmpty ? "pushed at once" : !receipt.scheduled.isEmpty ? "first push waits" : "no push"
        return ChatPost(
            receipt: receipt,
            event: PostedEvent(sent: sent, detail: "\(type) at position \(receipt.position): \(outcome)")
        )
    }

    /// Records the posts that led to the push just shown, under its message id, and when the
    /// network accepted it (the newest message push the relay lists for the user).
    static func recordChatPush(after posts: [ChatPost], phone: EmulatedPhone, backend: SimulatedBackend) async throws {
        guard let message = phone.notifications.last?.messageID else {
            throw ValidationError("the chat's push was shown without its message id")
        }
        for post in posts {
            backend.timeline.record(
                "backend",
                "relay",
                "POST /v1/chats/\(chat)/events → 202",
                detail: post.event.detail,
                subject: message,
                stage: .requested,
                at: post.event.sent
            )
        }
        let listed: PushListView = try await backend.request(.GET, "/v1/pushes?user=customer-42", nil, expect: 200)
        guard let push = listed.pushes.filter({ $0.kind == .message }).max(by: { $0.createdAt < $1.createdAt }) else {
            throw ValidationError("the relay lists no push for the chat")
        }
        try await backend.recordAlertsAccepted([push.pushID], subject: message, phone: phone)
    }
}
