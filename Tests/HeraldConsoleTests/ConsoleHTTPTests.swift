import AsyncHTTPClient
import Foundation
import HeraldConsole
import HeraldConsoleCore
import HeraldCrypto
import HeraldFCMCore
import HeraldRelay
import HeraldRelayAPI
import HeraldSimulation
import HeraldStore
import HeraldTestSupport
import NIOCore
import Testing

/// The console over real HTTP on the relay's listener: sign-in, sessions, CSRF, roles, every
/// page, the live stream, and no content anywhere.
@Suite("The console over HTTP", .serialized)
struct ConsoleHTTPTests {
    /// Text the test's message carries: no page or frame may show it.
    static let marker = "MARKER-7f3a-private-text"
    static let sender = "Sender-Name-91c2"
    static let password = "correct horse battery"

    /// A stack with the console on, an operator and a viewer, a device for user `u1`, and a
    /// client; the message's push id.
    static func with(
        _ configure: (inout ConsoleConfiguration) -> Void = { _ in },
        clock: (any HeraldClock)? = nil,
        _ body: (HeraldTestStack.RelayParts, ConsoleClient, HTTPClient, String) async throws -> Void
    ) async throws {
        let (account, _) = try FCMServiceAccount.generate(projectID: "console-tests", tokenURI: "https://unused/token")
        var options = HeraldTestStack.Options(fcmAccount: account)
        var relay = HeraldTestStack.RelayOptions()
        var console = ConsoleConfiguration()
        console.livePollInterval = .milliseconds(100)
        configure(&console)
        relay.console = console
        if let clock { relay.clock = clock }
        options.relay = relay
        try await HeraldTestStack.with(options) { stack in
            let parts = try #require(stack.relay)
            for (name, role) in [("olivia", OperatorRole.operator), ("victor", .viewer)] {
                let hash = try PasswordHash.hash(Self.password, strength: .minimum)
                try await parts.store.apply(
                    .saveOperator(OperatorRecord(name: name, role: role, passwordHash: hash, createdAt: 0), audit: nil)
                )
            }
            let device = try stack.core.registerDevice(bundleID: options.bundleID)
            _ = try await parts.relay.activation.activate(
                ActivationRequest(
                    userID: "u1",
                    app: options.bundleID,
                    platform: .ios,
                    publicKey: KeyPair.generate().publicKey.base64,
                    messagingToken: device.messagingToken,
                    voipToken: device.voipToken
                )
            )
            let message = try JSONDecoder().decode(
                MessageRequest.self,
                from: Data(
                    #"{"to":"u1","from":{"id":"agent-1","name":"\#(Self.sender)"},"conversation":"conv-1","text":"\#(Self.marker)"}"#
                        .utf8
                )
            )
            let receipt = try await parts.relay.ingest.send(message: message)
            let pushID = try #require(receipt.pushes.first).pushID
            let http = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: .init(redirectConfiguration: .disallow)
            )
            do {
                try await body(parts, ConsoleClient(base: parts.baseURL, http: http), http, pushID)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    static func expectNoContent(_ text: String, _ where_: String) {
        #expect(!text.contains(marker), "\(where_) shows the message text")
        #expect(!text.contains(sender), "\(where_) shows the sender")
    }

    @Test("Sign in, every page, the push's road; no page shows the message's text or sender")
    func pages() async throws {
        try await Self.with { parts, client, _, pushID in
            let before = try await client.get("/console/overview")
            #expect(before.status == 303)
            #expect(before.location?.hasPrefix("/console/sign-in?next=") == true)

            let wrong = try await client.signIn("olivia", "not the password")
            #expect(wrong.status == 401)
            #expect(wrong.body.contains("The name or the password is wrong."))
            let right = try await client.signIn("olivia", Self.password)
            #expect(right.status == 303)
            #expect(right.location == "/console/overview")
            let cookie = try #require(right.headers["set-cookie"].first { $0.hasPrefix("herald_console=") })
            #expect(
                cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console")
            )

            try await eventually("the push is delivered") {
                try await parts.relay.ingest.pushStatus(id: pushID).state == .delivered
            }
            let pages = [
                "/console/overview", "/console/overview/figures", "/console/live", "/console/search?q=u1",
                "/console/search?q=\(pushID)", "/console/search?q=conv-1", "/console/pushes/\(pushID)",
                "/console/users/u1", "/console/calls", "/console/callbacks", "/console/simulations", "/console/audit",
            ]
            for path in pages {
                let page = try await client.get(path)
                #expect(page.status == 200, "\(path): \(page.status)")
                Self.expectNoContent(page.body, path)
                let policy = page.headers["content-security-policy"].first ?? ""
                #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "\(path)")
                #expect(!page.body.contains("<script>"), "\(path) has an inline script")
            }
            let overview = try await client.get("/console/overview")
            #expect(overview.body.contains("<svg class=\"chart\""))
            #expect(try await client.get("/console/live").body.contains(pushID))
            #expect(try await client.get("/console/search?q=u1").body.contains(pushID))
            #expect(try await client.get("/console/search?q=conv-1").body.contains(pushID))
            let road = try await client.get("/console/pushes/\(pushID)").body
            for step in ["accepted and queued", "sealed for the device", "accepted by APNs"] {
                #expect(road.contains(step), "the road lacks \(step)")
            }
            #expect(try await client.get("/console/users/u1").body.contains("Deactivate"))
            #expect(try await client.get("/console/pushes/nope").status == 404)
            let audit = try await client.get("/console/audit").body
            #expect(audit.contains("console.signed_in") && audit.contains("operator:olivia"))
            #expect(audit.contains("console.sign_in_refused"))
        }
    }

    @Test("Every console route refuses a request without a session")
    func unauthenticated() async throws {
        try await Self.with { parts, client, _, pushID in
            let deviceID = try #require(try await parts.store.recipients(userID: "u1").first?.device.id)
            let pages = [
                "/console/overview", "/console/live", "/console/search?q=u1", "/console/pushes/\(pushID)",
                "/console/users/u1", "/console/devices/\(deviceID)/deactivate", "/console/calls", "/console/calls/c1",
                "/console/callbacks", "/console/simulations", "/console/simulations/run-1", "/console/audit",
            ]
            for path in pages {
                let page = try await client.get(path)
                #expect(page.status == 303, "\(path): \(page.status)")
                #expect(page.location?.hasPrefix("/console/sign-in") == true, "\(path)")
            }
            for path in ["/console/overview/figures", "/console/live/events", "/console/simulations/run-1/events"] {
                #expect(try await client.get(path).status == 401, "\(path)")
            }
            for path in ["/console/sign-out", "/console/devices/\(deviceID)/deactivate", "/console/simulations"] {
                let answer = try await client.post(path, form: [("csrf", "x"), ("flow", "messaging")])
                #expect(answer.status == 401, "\(path): \(answer.status)")
            }
            #expect(try await parts.store.device(id: deviceID) != nil)
            // What needs no session: the sign-in page and the stylesheet and script it loads.
            #expect(try await client.get("/console/sign-in").status == 200)
            #expect(try await client.get("/console/assets/console.css").status == 200)
            #expect(try await client.get("/console/assets/console.js").status == 200)
        }
    }

    @Test("A viewer sees but cannot deactivate; an operator deactivates, audited")
    func roles() async throws {
        try await Self.with { parts, client, http, _ in
            let viewer = ConsoleClient(base: parts.baseURL, http: http)
            #expect(try await viewer.signIn("victor", Self.password).status == 303)
            let devices = try await viewer.get("/console/users/u1")
            #expect(devices.status == 200)
            #expect(!devices.body.contains("Deactivate"))
            let deviceID = try #require(try await parts.store.recipients(userID: "u1").first?.device.id)
            #expect(try await viewer.get("/console/devices/\(deviceID)/deactivate").status == 403)
            let csrf = try #require(try await viewer.get("/console/overview").csrf)
            let refused = try await viewer.post("/console/devices/\(deviceID)/deactivate", form: [("csrf", csrf)])
            #expect(refused.status == 403)
            #expect(try await parts.store.device(id: deviceID) != nil)

            #expect(try await client.signIn("olivia", Self.password).status == 303)
            let confirm = try await client.get("/console/devices/\(deviceID)/deactivate")
            #expect(confirm.status == 200)
            let done = try await client.post(
                "/console/devices/\(deviceID)/deactivate",
                form: [("csrf", try #require(confirm.csrf))]
            )
            #expect(done.status == 303)
            #expect(try await parts.store.device(id: deviceID) == nil)
            let audit = try await client.get("/console/audit").body
            #expect(audit.contains("device.deactivated"))
        }
    }

    @Test("A form posted from another site, or without its token, is refused and changes nothing")
    func crossSite() async throws {
        try await Self.with { parts, client, _, _ in
            #expect(try await client.signIn("olivia", Self.password).status == 303)
            let deviceID = try #require(try await parts.store.recipients(userID: "u1").first?.device.id)
            let csrf = try #require(try await client.get("/console/overview").csrf)
            let noToken = try await client.post("/console/devices/\(deviceID)/deactivate", form: [("csrf", "forged")])
            #expect(noToken.status == 403)
            client.extraHeaders = [("origin", "https://evil.example")]
            let foreign = try await client.post("/console/devices/\(deviceID)/deactivate", form: [("csrf", csrf)])
            #expect(foreign.status == 403)
            client.extraHeaders = [("sec-fetch-site", "cross-site")]
            #expect(try await client.post("/console/sign-out", form: [("csrf", csrf)]).status == 403)
            client.extraHeaders = []
            #expect(try await parts.store.device(id: deviceID) != nil)
            #expect(try await client.get("/console/overview").status == 200)
            // The sign-in form needs its own cookie's token.
            let anonymous = ConsoleClient(base: parts.baseURL, http: client.http)
            let forged = try await anonymous.post(
                "/console/sign-in",
                form: [("name", "olivia"), ("password", Self.password), ("csrf", "x")]
            )
            #expect(forged.status == 403)
            #expect(anonymous.cookies["herald_console"] == nil)
        }
    }

    @Test("A session ends with its sign-out (its cookie replayed is refused) and with its lifetime")
    func sessionEnds() async throws {
        let clock = TestClock()
        let lifetime: (inout ConsoleConfiguration) -> Void = { $0.sessionLifetime = .seconds(600) }
        try await Self.with(lifetime, clock: clock) { parts, client, http, _ in
            #expect(try await client.signIn("olivia", Self.password).status == 303)
            let saved = client.cookies
            let csrf = try #require(try await client.get("/console/overview").csrf)
            #expect(try await client.post("/console/sign-out", form: [("csrf", csrf)]).status == 303)
            // The old cookie, replayed after the sign-out, is no session.
            let replay = ConsoleClient(base: parts.baseURL, http: http)
            replay.restore(saved)
            #expect(try await replay.get("/console/overview").status == 303)
            #expect(
                try await parts.store.consoleSession(
                    id: try #require(ConsoleToken(cookieValue: saved["herald_console"] ?? ""))
                        .sessionID
                ) == nil
            )

            #expect(try await client.signIn("olivia", Self.password).status == 303)
            #expect(try await client.get("/console/overview").status == 200)
            clock.advance(by: .seconds(601))
            #expect(try await client.get("/console/overview").status == 303)
            #expect(try await client.get("/console/live/events").status == 401)
        }
    }

    /// Three steps, then waits for the test's word before it ends (so the test sees it running).
    final class ScriptedFlows: ConsoleSimulator, @unchecked Sendable {
        let release = AsyncStream<Void>.makeStream()
        var flows: [ConsoleSimulationFlow] { [ConsoleSimulationFlow(name: "scripted", summary: "three steps")] }

        func play(
            flow: String,
            step: @escaping @Sendable (SimulationStep) -> Void
        ) async throws
            -> ConsoleSimulationResult
        {
            let steps = (0..<3).map {
                SimulationStep(elapsedMs: Int64($0) * 100, from: "backend", to: "relay", step: "step \($0)")
            }
            for item in steps { step(item) }
            var waiting = release.stream.makeAsyncIterator()
            _ = await waiting.next()
            return ConsoleSimulationResult(summary: "done", steps: steps.reversed())
        }
    }

    @Test("A simulation: started by an operator only, one at a time, streamed to its end")
    func simulation() async throws {
        let flows = ScriptedFlows()
        let playing: (inout ConsoleConfiguration) -> Void = { $0.simulator = flows }
        try await Self.with(playing) { parts, client, http, _ in
            let viewer = ConsoleClient(base: parts.baseURL, http: http)
            #expect(try await viewer.signIn("victor", Self.password).status == 303)
            let viewerToken = try #require(try await viewer.get("/console/simulations").csrf)
            #expect(
                try await viewer.post("/console/simulations", form: [("csrf", viewerToken), ("flow", "scripted")])
                    .status
                    == 403
            )
            #expect(try await client.signIn("olivia", Self.password).status == 303)
            let page = try await client.get("/console/simulations")
            #expect(page.body.contains("Start scripted"))
            let csrf = try #require(page.csrf)
            let started = try await client.post("/console/simulations", form: [("csrf", csrf), ("flow", "scripted")])
            #expect(started.status == 303 && started.location == "/console/simulations/run-1")
            let again = try await client.post("/console/simulations", form: [("csrf", csrf), ("flow", "scripted")])
            #expect(again.status == 429, "a second run while one plays")
            #expect(
                try await client.post("/console/simulations", form: [("csrf", csrf), ("flow", "nope")]).status == 400
            )

            var request = HTTPClientRequest(url: parts.baseURL + "/console/simulations/run-1/events")
            request.headers.add(
                name: "cookie",
                value: client.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
            )
            let response = try await http.execute(request, timeout: .seconds(30))
            var received = ""
            var released = false
            for try await chunk in response.body {
                received += String(buffer: chunk)
                if !released, received.contains("step 2") {
                    released = true
                    flows.release.continuation.yield()
                }
            }
            #expect(received.contains("event: state\ndata: running"))
            #expect(received.contains("event: end\ndata: finished"))
            let finished = try await client.get("/console/simulations/run-1")
            #expect(finished.body.contains("data-state=\"finished\""))
            // The finished run shows the flow's own order of its steps.
            let order = ["step 2", "step 1", "step 0"].compactMap { finished.body.range(of: $0)?.lowerBound }
            #expect(order.count == 3 && order == order.sorted())
            #expect(try await client.get("/console/audit").body.contains("simulation.started"))
        }
    }

    @Test("Failed sign-ins are throttled: then even the right password waits")
    func throttled() async throws {
        let strict: (inout ConsoleConfiguration) -> Void = { $0.signInLimits.attempts = 2 }
        try await Self.with(strict) { _, client, _, _ in
            #expect(try await client.signIn("olivia", "wrong one").status == 401)
            #expect(try await client.signIn("olivia", "wrong two").status == 401)
            let third = try await client.signIn("olivia", Self.password)
            #expect(third.status == 429)
            #expect(Int(third.headers["retry-after"].first ?? "") ?? 0 > 0)
            #expect(client.cookies["herald_console"] == nil)
        }
    }

    @Test("The live stream sends a push as it happens, and no content")
    func liveStream() async throws {
        try await Self.with { parts, client, http, _ in
            #expect(try await client.signIn("olivia", Self.password).status == 303)
            var request = HTTPClientRequest(url: parts.baseURL + "/console/live/events")
            request.headers.add(
                name: "cookie",
                value: client.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
            )
            let response = try await http.execute(request, timeout: .seconds(30))
            #expect(response.headers["content-type"].first?.hasPrefix("text/event-stream") == true)
            let message = try JSONDecoder().decode(
                MessageRequest.self,
                from: Data(
                    #"{"to":"u1","from":{"id":"agent-1","name":"\#(Self.sender)"},"conversation":"conv-2","text":"\#(Self.marker) again"}"#
                        .utf8
                )
            )
            var received = ""
            var pushID = ""
            var chunks = response.body.makeAsyncIterator()
            // The stream's heartbeats (every 15 polls) bring the loop round even when nothing
            // comes, so a push that never shows fails here instead of hanging.
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, let chunk = try await chunks.next() {
                received += String(buffer: chunk)
                if pushID.isEmpty, received.contains("retry: 3000") {
                    pushID = try #require(try await parts.relay.ingest.send(message: message).pushes.first).pushID
                }
                if !pushID.isEmpty, received.contains("\"push_id\":\"\(pushID)\""), received.contains("delivered") {
                    break
                }
            }
            #expect(received.contains("\"push_id\":\"\(pushID)\""))
            // Signed out, the open stream ends: its session is read again every few seconds.
            let csrf = try #require(try await client.get("/console/overview").csrf)
            #expect(try await client.post("/console/sign-out", form: [("csrf", csrf)]).status == 303)
            let ends = ContinuousClock.now + .seconds(20)
            var ended = false
            while ContinuousClock.now < ends {
                guard try await chunks.next() != nil else {
                    ended = true
                    break
                }
            }
            #expect(ended, "the stream outlived its session")
            #expect(received.contains("event: push"))
            #expect(received.contains("\"user\":\"u1\""))
            Self.expectNoContent(received, "the live stream")
        }
    }
}
