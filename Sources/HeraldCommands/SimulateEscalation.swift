import ArgumentParser
import Foundation
import HeraldDevice
import HeraldDomain
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import Logging

extension SimulateCommand {
    struct Escalation: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "escalation",
            abstract:
                "A deadline that escalates: the phone is off, the reply goes unseen, the relay pushes it to the tablet.",
            discussion: """
                The backend gives the app the rule "a message not shown within 120 s goes to the \
                user's other devices" (PUT /v1/apps/{id}, keeping its team and settings, with the \
                backend's webhook). The customer's phone is switched off: APNs (FCM) keeps its \
                pushes. The agent replies; the customer then signs in on a tablet, which the \
                message never went to. Two simulated minutes pass with no shown receipt from the \
                phone: the relay pushes the reply to the tablet at priority 10 (FCM: HIGH), whose \
                extension opens and shows it and sends its receipts, and the backend's webhook \
                receiver gets push.unseen (action other_devices, naming the tablet's push). The \
                phone comes back and shows the original too. Exits non-zero if the escalation does \
                not reach the tablet. With --relay the rule's seconds pass in real time (say \
                --after 2); the app's webhook and deadlines are the flow's while it runs and are \
                put back afterwards (an app that has a webhook there is refused: its secret \
                cannot be read back).
                """
        )

        @OptionGroup var phone: PhoneOptions

        @Option(help: "Seconds the app's rule gives the phone to show the message (1 to 86400).")
        var after: Int64 = 120

        func validate() throws {
            guard DeadlineRule.afterSeconds.contains(after) else {
                throw ValidationError("--after must be 1 to 86400 seconds")
            }
        }

        func run() async throws {
            let rule = DeadlineRule(kind: .message, after: after, action: .otherDevices)
            try await phone.play("escalation", named: "escalation") {
                try await Simulation.escalation(phone: $0, backend: $1, clock: $2, rule: rule)
            }
        }
    }
}

extension Simulation {
    /// The reply the phone does not show in time.
    static let unseenReply = "Your replacement ships today. Can you confirm the delivery address?"

    /// The escalation flow: the app's rule, the phone off, the reply, the tablet, the deadline.
    static func escalation(
        phone: EmulatedPhone,
        backend: SimulatedBackend,
        clock: TestClock,
        rule: DeadlineRule
    ) async throws {
        guard let endpoints = Simulation.endpoints else { throw ValidationError("the simulation has no relay") }
        let app = try await backend.app(phone.configuration.bundleID)
        if let receiver = endpoints.webhook {
            try await backend.saveApp(app, rules: [rule], webhook: receiver.settings)
            try await unseenReply(
                phone: phone,
                backend: backend,
                clock: endpoints.sharesClock ? clock : nil,
                rule,
                receiver
            )
            return
        }
        // A running relay: the backend's receiver is the flow's own, for as long as it runs.
        if app["webhook"] != nil {
            throw ValidationError(
                "\(phone.configuration.bundleID) has a webhook at the relay; its secret cannot be read back to put it back after the flow: use an app without one (--bundle)"
            )
        }
        var logger = Logger(label: "herald.simulate.webhook")
        logger.logLevel = .critical
        try await SimulationWebhookReceiver.with(logger: logger) { receiver in
            try await backend.saveApp(app, rules: [rule], webhook: receiver.settings)
            do {
                try await unseenReply(phone: phone, backend: backend, clock: nil, rule, receiver)
            } catch {
                try? await backend.restoreApp(app)
                throw error
            }
            try await backend.restoreApp(app)
        }
    }

    /// The story once the rule is set: `clock` is the relay's when it shares the simulation's
    /// (the deadline then passes at once), nil when the relay's time passes in real time.
    private static func unseenReply(
        phone: EmulatedPhone,
        backend: SimulatedBackend,
        clock: TestClock?,
        _ rule: DeadlineRule,
        _ receiver: SimulationWebhookReceiver
    ) async throws {
        try await phone.presence(.background)
        await phone.stop()
        phone.timeline.record(
            "user",
            "app",
            "phone switched off",
            detail:
                "offline: \(phone.configuration.platform == .android ? "FCM" : "APNs") keeps its pushes until it is back"
        )
        let receipt = try await backend.postRecorded(
            "/v1/messages",
            #"{"to":"customer-42","from":\#(caller),"conversation":"case-1001","text":"\#(unseenReply)"}"#
        ) { "\($0.pushes.count) push(es): the phone's, with a \(rule.after) s deadline" }
        // By the phone's device: at a running relay the user may have devices of earlier runs.
        let phoneID = phone.store.registration()?.deviceID
        guard let unseen = receipt.pushes.first(where: { $0.deviceID == phoneID })?.pushID else {
            throw ValidationError("the message went to no push for the phone: \(receipt.pushes), \(receipt.skipped)")
        }
        try await backend.recordAlertsAccepted([unseen], subject: receipt.id, phone: phone)

        // The customer signs in on a tablet and puts it down: it has not had the message.
        let tablet = try await secondDevice(like: phone, backend: backend, named: "tablet")
        do {
            try await tablet.presence(.background)
            try await escalated(receipt, unseen, to: tablet, backend: backend, clock: clock, rule, receiver)
        } catch {
            await tablet.stop()
            try? FileManager.default.removeItem(atPath: tablet.configuration.storeDirectory)
            throw error
        }
        await tablet.stop()
        try? FileManager.default.removeItem(atPath: tablet.configuration.storeDirectory)

        // The phone comes back: APNs (FCM) hands it what it kept, and it shows the original too.
        try await phone.launch()
        try await phone.wait("the phone's shown receipt") { phone in
            phone.receipts.contains { $0.pushID == unseen && $0.stage == .shown }
        }
    }

    /// The deadline passes with no shown receipt (at once on a shared clock, else in real time):
    /// the tablet shows the reply and sends its receipts, the backend gets `push.unseen`.
    private static func escalated(
        _ receipt: IngestReceipt,
        _ unseen: String,
        to tablet: EmulatedPhone,
        backend: SimulatedBackend,
        clock: TestClock?,
        _ rule: DeadlineRule,
        _ receiver: SimulationWebhookReceiver
    ) async throws {
        guard let tabletID = tablet.store.registration()?.deviceID else {
            throw ValidationError("the tablet did not activate")
        }
        clock?.advance(by: .seconds(rule.after))
        let waiting: Duration = .seconds(20) + (clock == nil ? .seconds(rule.after) : .zero)
        do {
            try await tablet.wait("the reply on the tablet", timeout: waiting) { tablet in
                tablet.notifications.contains { $0.messageID == receipt.id }
            }
        } catch {
            throw ValidationError(
                "the escalation did not reach the tablet: no notification of \(receipt.id) within \(waiting) of the message (rule: after \(rule.after) s, \(rule.action.rawValue))"
            )
        }
        let escalated = try await recordUnseen(unseen, tabletID: tabletID, backend: backend, receiver: receiver)
        // Seen late is seen too late: the relay sends an escalation at priority 10.
        try await backend.recordAlertsAccepted(
            [escalated],
            subject: receipt.id + " · tablet",
            phone: tablet,
            priority: 10
        )
        try await tablet.wait("the tablet's shown receipt") { tablet in
            tablet.receipts.contains { $0.pushID == escalated && $0.stage == .shown }
        }
    }

    /// Waits for the backend's `push.unseen` for `pushID` and records it (with the deadline it
    /// reports) on the timeline; answers the push the relay added for the tablet.
    private static func recordUnseen(
        _ pushID: String,
        tabletID: String,
        backend: SimulatedBackend,
        receiver: SimulationWebhookReceiver
    ) async throws -> String {
        let found = await receiver.events.first(within: .seconds(20)) { event in
            event.type == "push.unseen" && (try? event.data(as: UnseenData.self).pushID) == pushID
        }
        guard let found else { throw ValidationError("the backend got no push.unseen for push \(pushID)") }
        let unseen = try found.data(as: UnseenData.self)
        guard unseen.action == DeadlineAction.otherDevices.rawValue,
            let added = unseen.pushes.first(where: { $0.deviceID == tabletID })
        else {
            throw ValidationError(
                "push.unseen for \(pushID) says \(unseen.action), adding \(unseen.pushes.map(\.deviceID)): not the tablet \(tabletID)"
            )
        }
        backend.timeline.record(
            "relay",
            "relay",
            "deadline passed unseen",
            detail: "push \(pushID): no shown receipt from the phone; the message goes to its other devices",
            at: unseen.dueAt
        )
        backend.timeline.record(
            "relay",
            "backend",
            "webhook event push.unseen (delivered)",
            detail: "\(found.id): action \(unseen.action), push \(added.pushID) added for the tablet",
            at: found.createdAt
        )
        return added.pushID
    }

    /// What the flow reads of `push.unseen`'s data (docs/webhooks.md).
    struct UnseenData: Decodable {
        var pushID: String
        var action: String
        var dueAt: Int64
        var pushes: [IngestReceipt.Push]

        enum CodingKeys: String, CodingKey {
            case pushID = "push_id"
            case action
            case dueAt = "due_at"
            case pushes
        }
    }
}

extension SimulatedBackend {
    /// The app as `GET /v1/apps` shows it, as JSON.
    func app(_ id: String) async throws -> [String: Any] {
        let listed = try await data(.GET, "/v1/apps", nil, expect: 200)
        let apps = (try JSONSerialization.jsonObject(with: listed) as? [String: Any])?["apps"] as? [[String: Any]]
        guard let app = apps?.first(where: { $0["id"] as? String == id }) else {
            throw ValidationError("the relay has no app \(id)")
        }
        return app
    }

    /// `PUT /v1/apps/{id}`: the app as it was shown, with `rules` and the backend's `webhook`;
    /// recorded on the timeline.
    func saveApp(_ app: [String: Any], rules: [DeadlineRule], webhook: WebhookSettings) async throws {
        var body = app
        body["deadlines"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(rules))
        body["webhook"] = ["url": webhook.url, "secret": webhook.secret]
        let sent = timeline.time
        let saved: AppRecord = try await put(app, body)
        timeline.record(
            "backend",
            "relay",
            "PUT /v1/apps/\(saved.id) → 200",
            detail: saved.deadlines.map {
                "deadline: a \($0.kind.rawValue) not shown in \($0.after) s → \($0.action.rawValue)"
            }
            .joined(separator: ", ") + "; webhook: the backend's receiver",
            at: sent
        )
    }

    /// `PUT /v1/apps/{id}` with the app as it was shown before the flow changed it.
    func restoreApp(_ app: [String: Any]) async throws {
        let _: AppRecord = try await put(app, app)
    }

    private func put(_ app: [String: Any], _ body: [String: Any]) async throws -> AppRecord {
        var body = body
        // The id is the path's; the shown webhook (`secret_set`) is not one to send.
        body["id"] = nil
        if body["webhook"] as? [String: Any] != nil, (body["webhook"] as? [String: Any])?["secret"] == nil {
            body["webhook"] = nil
        }
        let text = String(
            decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]),
            as: UTF8.self
        )
        return try await request(.PUT, "/v1/apps/\(app["id"] as? String ?? "")", text, expect: 200)
    }
}
