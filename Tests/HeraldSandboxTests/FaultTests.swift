import AsyncHTTPClient
import Foundation
import HeraldAPNsCore
import HeraldSandbox
import NIOCore
import NIOHTTP2
import Testing

@Suite(.timeLimit(.minutes(2))) struct FaultTests {
    @Test func respondFaultsHitTheNextMatchingRequestsThenStop() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            try sandbox.core.inject(SandboxFault(reason: .tooManyRequests, count: 2))
            let statuses = try await [sandbox.push(to: token), sandbox.push(to: token), sandbox.push(to: token)]
            #expect(statuses.map(\.status) == [429, 429, 200])
            #expect(statuses[0].reason == "TooManyRequests")
            #expect(sandbox.core.inspection().map(\.outcome) == ["injected", "injected", "accepted"])
        }
    }

    @Test(arguments: [APNsReason.internalServerError, .serviceUnavailable, .shutdown])
    func serverSideReasonsComeFromFaults(reason: APNsReason) async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            try sandbox.core.inject(SandboxFault(reason: reason))
            let reply = try await sandbox.push(to: token)
            #expect(reply.status == reason.status)
            #expect(reply.reason == reason.rawValue)
        }
    }

    @Test func faultsCanTargetOneToken() async throws {
        try await SandboxHarness.with { sandbox in
            let first = try #require(try sandbox.device().messagingToken)
            let second = try #require(try sandbox.device().messagingToken)
            // Tokens match whatever their case.
            try sandbox.core.inject(SandboxFault(status: 500, reason: .internalServerError, token: second.uppercased()))
            #expect(try await sandbox.push(to: first).status == 200)
            #expect(try await sandbox.push(to: second).status == 500)
            #expect(try await sandbox.push(to: second).status == 200)
        }
    }

    @Test func aDroppedConnectionFailsTheRequestAndTheNextConnectionWorks() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            try sandbox.core.inject(SandboxFault(action: .drop))
            await #expect(throws: (any Error).self) { try await sandbox.push(to: token) }
            #expect(try await sandbox.push(to: token).status == 200)
            #expect(sandbox.core.inspection().map(\.outcome) == ["drop", "accepted"])
        }
    }

    @Test func aGoAwayFaultRefusesItsStreamAndCoversTheRest() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            try sandbox.core.inject(SandboxFault(action: .goaway, reason: .shutdown))
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            try await raw.send(
                streamID: 1,
                headers: RawHTTP2Client.requestHeaders(path: "/3/device/\(token)", token: sandbox.token.text),
                body: #"{"aps":{}}"#
            )
            var goAway: (HTTP2StreamID, String)?
            var refused = false
            for await frame in raw.frames {
                if case .goAway(let lastStreamID, let code, let data) = frame.payload {
                    #expect(code == .noError)
                    goAway = (lastStreamID, data.map { String(buffer: $0) } ?? "")
                }
                if frame.streamID == 1, case .rstStream(let code) = frame.payload { refused = code == .refusedStream }
            }
            // The GOAWAY covers every stream opened; the one that met the fault is refused on its
            // own (not processed: safe to send again), and the connection then closes.
            let (lastStreamID, reason) = try #require(goAway)
            #expect(lastStreamID == 1)
            #expect(refused)
            #expect(reason == #"{"reason":"Shutdown"}"#)
            #expect(sandbox.core.inspection().map(\.outcome) == ["goaway"])
        }
    }

    @Test func goAwayToEveryConnectionCarriesTheReason() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            try await raw.send(
                streamID: 1,
                headers: RawHTTP2Client.requestHeaders(path: "/3/device/\(token)", token: sandbox.token.text),
                body: #"{"aps":{}}"#
            )
            var frames = raw.frames.makeAsyncIterator()
            while let frame = await frames.next() {
                if frame.streamID == 1, frame.payload.status != nil { break }
            }
            sandbox.sandbox.apnsServer.goAwayAll(reason: .shutdown)
            var reason: String?
            while let frame = await frames.next() {
                if case .goAway(let lastStreamID, _, let data) = frame.payload {
                    #expect(lastStreamID == HTTP2StreamID(1))
                    reason = data.map { String(buffer: $0) }
                }
            }
            #expect(reason == #"{"reason":"Shutdown"}"#)
        }
    }

    @Test func anInjected410CarriesATimestampAndSuccessIsNotAFault() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            try sandbox.core.inject(SandboxFault(reason: .unregistered))
            let reply = try await sandbox.push(to: token)
            #expect(reply.status == 410)
            #expect(reply.timestamp != nil)
            #expect(throws: SandboxError.self) { try sandbox.core.inject(SandboxFault(status: 200, reason: .badTopic)) }
        }
    }

    @Test func aGoAwayStillDeliversTheAnswersItOwes() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            var updates = sandbox.core.inspectionUpdates().makeAsyncIterator()
            sandbox.core.setLatency(.milliseconds(300))
            try await raw.send(
                streamID: 1,
                headers: RawHTTP2Client.requestHeaders(path: "/3/device/\(token)", token: sandbox.token.text),
                body: #"{"aps":{}}"#
            )
            // Once the sandbox has accepted the push (its answer waits on the latency), GOAWAY.
            _ = await updates.next()
            sandbox.sandbox.apnsServer.goAwayAll(reason: .shutdown)
            var events: [String] = []
            for await frame in raw.frames {
                if case .goAway = frame.payload { events.append("goaway") }
                if frame.streamID == 1, let status = frame.payload.status { events.append(status) }
            }
            #expect(events == ["goaway", "200"])
        }
    }

    @Test func aStalledRequestTimesOutAtTheClientAndOthersStillWork() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            // An authenticated connection first, so the stalled stream is not the only one allowed.
            #expect(try await sandbox.push(to: token).status == 200)
            try sandbox.core.inject(SandboxFault(action: .stall))
            var updates = sandbox.core.inspectionUpdates().makeAsyncIterator()
            let stalled = Task {
                var request = HTTPClientRequest(url: sandbox.endpoints.apnsURL + "/3/device/\(token)")
                request.method = .POST
                request.headers.add(name: "authorization", value: "bearer \(sandbox.token.text)")
                request.headers.add(name: "apns-topic", value: SandboxHarness.bundleID)
                request.body = .bytes(ByteBuffer(string: #"{"aps":{}}"#))
                _ = try await sandbox.client.execute(request, timeout: .seconds(2))
            }
            // Wait until the sandbox has taken the request and is holding it.
            while let record = await updates.next(), record.outcome != "stall" {}
            #expect(try await sandbox.push(to: token).status == 200)
            await #expect(throws: (any Error).self) { try await stalled.value }
        }
    }

    @Test func latencyDelaysEveryAnswer() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            sandbox.core.setLatency(.milliseconds(250))
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await sandbox.push(to: token).status == 200)
            #expect(clock.now - start >= .milliseconds(250))
            sandbox.core.clearFaults()
        }
    }

    @Test func malformedFaultsAreRefused() async throws {
        try await SandboxHarness.with { sandbox in
            #expect(throws: SandboxError.self) { try sandbox.core.inject(SandboxFault(count: 0)) }
            #expect(throws: SandboxError.self) { try sandbox.core.inject(SandboxFault(action: .respond)) }
            #expect(throws: SandboxError.self) { try sandbox.core.inject(SandboxFault(status: 999)) }
        }
    }
}
