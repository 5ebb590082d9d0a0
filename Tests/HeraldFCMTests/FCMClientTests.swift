import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldSandbox
import Logging
import ServiceLifecycle
import Testing

@Suite("FCM sender against the sandbox", .serialized, .timeLimit(.minutes(2)))
struct FCMClientTests {
    @Test("OAuth2: one assertion buys one access token, shared by every send, then messages:send delivers")
    func oauthAndSend() async throws {
        try await FCMHarness.with { harness in
            let (device, token) = try harness.device()
            let updates = harness.core.fcmInspectionUpdates()
            let results = await harness.client.send(batch: (0..<50).map { _ in harness.push(to: token) })
            #expect(results.allSatisfy { if case .delivered = $0 { true } else { false } })
            if case .delivered(let name) = results[0] {
                #expect(name.hasPrefix("projects/\(FCMHarness.projectID)/messages/"))
            }
            #expect(harness.core.fcmAccessTokenGrants == 1)
            // What FCM received: HIGH, a ttl within the hour, the data intact.
            var sends: [SandboxFCMInspectionRecord] = []
            for await record in updates where record.kind == .send {
                sends.append(record)
                if sends.count == 50 { break }
            }
            let first = try #require(sends.first)
            #expect(first.priority == "HIGH")
            #expect(first.token == token)
            #expect(first.data?["sealed"]?.count == 560)
            let ttl = try #require(first.ttl.flatMap(FCMMessage.seconds(ttl:)))
            #expect((3590...3600).contains(ttl))
            #expect(try harness.core.device(id: device.deviceID).platform == .android)
        }
    }

    @Test("an expired access token is refreshed once and the send retried")
    func unauthenticatedRefreshesOnce() async throws {
        try await FCMHarness.with { harness in
            let (_, token) = try harness.device()
            #expect(await harness.client.send(harness.push(to: token)).isDelivered)
            harness.core.expireAccessTokens()
            #expect(await harness.client.send(harness.push(to: token)).isDelivered)
            #expect(harness.core.fcmAccessTokenGrants == 2)
        }
    }

    @Test("an FCM that refuses connections is answered unreachable at once, not after the sender's attempts")
    func unreachableAtOnce() async throws {
        let account = try FCMServiceAccount.generate(projectID: "p", tokenURI: "https://127.0.0.1:1/token").account
        var configuration = FCMClientConfiguration(account: account)
        configuration.baseURL = "https://127.0.0.1:1"
        configuration.retryBaseDelay = .seconds(5)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let client = try FCMClient(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [client], logger: logger)
        let running = Task { try await group.run() }
        let started = ContinuousClock.now
        let push = FCMPush(
            token: "t",
            data: ["k": "v"],
            priority: .high,
            expiration: Int64(Date().timeIntervalSince1970) + 600,
            collapseKey: nil
        )
        let result = await client.send(push)
        if case .unreachable(let reason) = result {
            #expect(reason.contains("cannot connect to FCM"))
        } else {
            Issue.record("expected unreachable, got \(result)")
        }
        #expect(ContinuousClock.now - started < .seconds(5), "no backoff was waited")
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test("a refused service account is a permanent, operator-visible failure")
    func refusedAccount() async throws {
        var setup = FCMHarness.Setup()
        setup.account = try FCMServiceAccount.generate(projectID: FCMHarness.projectID, tokenURI: "x").account
        try await FCMHarness.with(setup) { harness in
            let (_, token) = try harness.device()
            guard case .failed(_, let status, let message) = await harness.client.send(harness.push(to: token)) else {
                Issue.record("expected a failure")
                return
            }
            #expect(status == 401)
            #expect(message.contains("invalid_grant"))
        }
    }

    @Test("UNREGISTERED: the token is dead and the feedback handler hears of it")
    func unregistered() async throws {
        try await FCMHarness.with { harness in
            let (device, token) = try harness.device()
            try harness.core.uninstall(deviceID: device.deviceID)
            #expect(await harness.client.send(harness.push(to: token)) == .tokenDead(code: .unregistered))
            #expect(harness.feedback.all == [FCMTokenFeedback(token: token, code: .unregistered)])
        }
    }

    @Test("QUOTA_EXCEEDED, UNAVAILABLE and INTERNAL are retried, waiting at least Retry-After")
    func retriedErrors() async throws {
        var setup = FCMHarness.Setup()
        setup.client = { $0.retryMaximumDelay = .seconds(2) }
        try await FCMHarness.with(setup) { harness in
            let (_, token) = try harness.device()
            for code in [FCMErrorCode.quotaExceeded, .unavailable, .internal] {
                try harness.core.inject(
                    fcmFault: SandboxFCMFault(errorCode: code, retryAfter: 0, count: 2, token: token)
                )
                #expect(await harness.client.send(harness.push(to: token)).isDelivered, "\(code)")
            }
            let started = ContinuousClock.now
            try harness.core.inject(fcmFault: SandboxFCMFault(errorCode: .unavailable, retryAfter: 1, count: 1))
            #expect(await harness.client.send(harness.push(to: token)).isDelivered)
            #expect(ContinuousClock.now - started >= .seconds(1))
        }
    }

    @Test("a Retry-After beyond the sender's own backoff goes back to the caller with the wait")
    func longRetryAfter() async throws {
        try await FCMHarness.with { harness in
            let (_, token) = try harness.device()
            try harness.core.inject(fcmFault: SandboxFCMFault(errorCode: .quotaExceeded, retryAfter: 120, count: 1))
            #expect(
                await harness.client.send(harness.push(to: token))
                    == .retryLater(
                        reason: "QUOTA_EXCEEDED (429): \(FCMErrorCode.quotaExceeded.defaultMessage)",
                        retryAfter: .seconds(120)
                    )
            )
        }
    }

    @Test("retries give up as retryLater, and never outlive the message")
    func retriesEnd() async throws {
        try await FCMHarness.with { harness in
            let (_, token) = try harness.device()
            try harness.core.inject(fcmFault: SandboxFCMFault(errorCode: .internal, count: 100))
            guard case .retryLater = await harness.client.send(harness.push(to: token)) else {
                Issue.record("expected retryLater")
                return
            }
            var soon = harness.push(to: token)
            soon.expiration = Int64(Date().timeIntervalSince1970) + 1
            let result = await harness.client.send(soon)
            #expect(result == .expired || { if case .retryLater = result { true } else { false } }())
            var past = harness.push(to: token)
            past.expiration = Int64(Date().timeIntervalSince1970) - 1
            #expect(await harness.client.send(past) == .expired)
        }
    }

    @Test("INVALID_ARGUMENT, SENDER_ID_MISMATCH and THIRD_PARTY_AUTH_ERROR are permanent")
    func permanentErrors() async throws {
        try await FCMHarness.with { harness in
            let (_, token) = try harness.device()
            for code in [FCMErrorCode.invalidArgument, .senderIDMismatch, .thirdPartyAuthError] {
                try harness.core.inject(fcmFault: SandboxFCMFault(errorCode: code, count: 1))
                guard case .failed(let got, let status, _) = await harness.client.send(harness.push(to: token)) else {
                    Issue.record("\(code) was not a failure")
                    continue
                }
                #expect(got == code)
                #expect(status == code.status)
            }
            // The real thing, not injected: a token of another project.
            let (_, foreign) = try harness.device(project: "other-project")
            guard case .failed(let code, 403, _) = await harness.client.send(harness.push(to: foreign)) else {
                Issue.record("a foreign token was not refused")
                return
            }
            #expect(code == .senderIDMismatch)
            // And a message the sender refuses before sending: more than 4096 bytes of data.
            var big = harness.push(to: token)
            big.data["sealed"] = String(repeating: "x", count: 4096)
            guard case .failed(.invalidArgument?, 400, _) = await harness.client.send(big) else {
                Issue.record("an oversized message was sent")
                return
            }
        }
    }
}

extension FCMResult {
    var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }
}
