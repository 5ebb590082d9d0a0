import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import NIOCore
import NIOHTTP1

extension SimulateCommand {
    struct Callback: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "callback",
            abstract: "A GMS callback: scheduled, pushed when due, snoozed for 5 minutes, pushed again, ready.",
            discussion: """
                The contact center schedules a callback for now (seed 002). The relay pushes its \
                dialog as a priority-10 alert with the HERALD_CALLBACK category; the Notification \
                Service Extension opens the sealed dialog; the user picks "No, try again in 5 \
                minutes". Five simulated minutes later the relay pushes it again; the user picks \
                "Yes, I'm ready to talk" and the callback is connected. Each push and answer \
                writes its webhook event for the backend.
                """
        )

        @OptionGroup var options: Options

        func run() async throws {
            try await Simulation.play("callback", named: "callback", options: options) {
                try await Simulation.callback(phone: $0, backend: $1, clock: $2)
            }
        }
    }
}

extension SimulatedBackend {
    /// Sends a request with the API key and decodes the answer; a status other than `expect`
    /// fails with the relay's reason.
    func request<T: Decodable>(_ method: HTTPMethod, _ path: String, _ body: String?, expect: Int) async throws -> T {
        try JSONDecoder().decode(T.self, from: try await data(method, path, body, expect: expect))
    }

    /// Sends a request with the API key and answers the response's body; a status other than
    /// `expect` fails with the relay's reason.
    func data(_ method: HTTPMethod, _ path: String, _ body: String?, expect: Int) async throws -> Data {
        var request = HTTPClientRequest(url: relayURL + path)
        request.method = method
        request.headers.add(name: "authorization", value: "Bearer " + apiKey)
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code == expect else {
            throw ValidationError("\(path) answered \(response.status.code): \(String(buffer: bytes))")
        }
        return Data(bytes.readableBytesView)
    }
}

extension Simulation {
    /// Seed 002's callback, snoozed once then answered ready.
    static func callback(phone: EmulatedPhone, backend: SimulatedBackend, clock: TestClock) async throws {
        phone.callbacks.plan([.snooze, .ready])
        let sent = backend.timeline.time
        let scheduled: CallbackView = try await backend.request(
            .POST,
            "/v1/callbacks",
            Self.callbackRequest,
            expect: 201
        )
        let id = scheduled.callbackID
        backend.timeline.record(
            "backend",
            "relay",
            "POST /v1/callbacks → 201",
            detail: "callback \(id), due now, expires \(RequestTime.format(scheduled.expiresAt))",
            subject: EmulatedPhone.callbackSubject(id, 1),
            stage: .requested,
            at: sent
        )
        try await phone.wait("the first dialog to be answered") { $0.callbacks.all.first?.answer != nil }
        try await recordCallbackPushesAccepted(id, backend: backend, phone: phone)
        guard let snoozed = phone.callbacks.all.first?.answer, snoozed.state == .scheduled else {
            throw ValidationError("the snooze did not schedule callback \(id) again")
        }
        // Five minutes pass at once: the relay's scheduler wakes on the simulated clock.
        clock.advance(by: .seconds(300))
        try await phone.wait("the second dialog to be answered") { phone in
            phone.callbacks.all.count >= 2 && phone.callbacks.all[1].answer != nil
        }
        try await recordCallbackPushesAccepted(id, backend: backend, phone: phone)
        let view: CallbackView = try await backend.request(.GET, "/v1/callbacks/\(id)", nil, expect: 200)
        backend.timeline.record(
            "backend",
            "relay",
            "GET /v1/callbacks/\(id) → \(view.state.rawValue)",
            detail: view.history.map { $0.event + ($0.action.map { " " + $0 } ?? "") }.joined(separator: ", "),
            subject: EmulatedPhone.callbackSubject(id, 2),
            stage: .acted
        )
        if let events = Simulation.endpoints?.callbackEvents {
            // Each at the time the relay wrote it (the simulation shares the relay's clock).
            // The backend's receiver (SimulationWebhookReceiver) answers each event; the relay
            // sends one event of a callback at a time, in order. Wait (5 s at most) until it has.
            var stored = try await events(id)
            let deadline = ContinuousClock.now + .seconds(5)
            while stored.contains(where: { $0.state != .delivered }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                stored = try await events(id)
            }
            var push: UInt16 = 0
            for event in stored {
                let pushed = event.event.type == .callbackPushed
                if pushed { push += 1 }
                // `callback.pushed` is written when the relay records APNs's answer, which the
                // outcome batch may do after the phone already showed the dialog: a time reported
                // from the relay's record, placed between the push's acceptance and its delivery.
                backend.timeline.record(
                    "relay",
                    "backend",
                    "webhook event \(event.event.type.rawValue) (\(event.state == .delivered ? "delivered" : "queued, " + event.state.rawValue))",
                    detail: event.event.data,
                    subject: EmulatedPhone.callbackSubject(id, push),
                    stage: pushed ? .accepted : .acted,
                    at: pushed ? nil : event.event.createdAt,
                    reportedAt: pushed ? event.event.createdAt : nil
                )
            }
        }
        guard view.state == .connected else { throw ValidationError("callback \(id) ended \(view.state.rawValue)") }
    }

    /// The scheduling request: seed 002's dialog, under the agent's name.
    static let callbackRequest = """
        {"user_id":"customer-42","service_id":"3SQI3S31693JL9L3R00506T40C000U73",\
        "idempotency_key":"callback-case-1001","dialog":{"title":"Dana (Acme support) is available right now",\
        "text":"Are you ready?","actions":[{"id":"ready","label":"Yes, I'm ready to talk","kind":"connect"},\
        {"id":"snooze","label":"No, try again in 5 minutes","kind":"snooze","delay_seconds":300},\
        {"id":"cancel","label":"Cancel, my problem has been solved","kind":"cancel"}]}}
        """

    /// Records, for each callback push the relay queued to the phone and has not recorded yet,
    /// when APNs or FCM accepted it (`GET /v1/pushes?user=`, the relay's own record).
    static func recordCallbackPushesAccepted(_ id: String, backend: SimulatedBackend, phone: EmulatedPhone) async throws
    {
        let listed: PushListView = try await backend.request(.GET, "/v1/pushes?user=customer-42", nil, expect: 200)
        let pushes = listed.pushes.filter { $0.kind == .callback }.sorted { $0.createdAt < $1.createdAt }
        let recorded = Set(backend.timeline.all.filter { $0.step.hasPrefix("push accepted by") }.compactMap(\.subject))
        for (index, push) in pushes.enumerated() {
            let subject = EmulatedPhone.callbackSubject(id, UInt16(index + 1))
            guard !recorded.contains(subject) else { continue }
            try await backend.recordAlertsAccepted([push.pushID], subject: subject, phone: phone)
        }
    }
}
