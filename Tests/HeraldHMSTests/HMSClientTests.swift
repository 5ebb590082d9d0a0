import Foundation
import HeraldHMS
import HeraldHMSCore
import HeraldSandbox
import Testing

@Suite("Push Kit sender against the sandbox", .serialized, .timeLimit(.minutes(2)))
struct HMSClientTests {
    @Test("one access token serves a batch to several devices; Push Kit gets a data message with urgency and ttl")
    func batchDelivered() async throws {
        try await HMSHarness.with { harness in
            let tokens = try (0..<3).map { _ in try harness.device().token }
            let pushes = (0..<12).map { harness.push(to: tokens[$0 % 3]) }
            let results = await harness.client.send(batch: pushes)
            #expect(results.count == 12)
            #expect(results.allSatisfy { $0.isDelivered })
            #expect(harness.core.hmsAccessTokenGrants == 1)
            let sends = harness.core.hmsInspection().filter { $0.kind == .send }
            #expect(sends.count == 12)
            let first = try #require(sends.first)
            #expect(first.urgency == "HIGH")
            #expect(first.tokens?.count == 1)
            let ttl = try #require(first.ttl.flatMap { Int64($0.dropLast()) })
            #expect((3590...3600).contains(ttl))
            let data = try #require(first.data?.data(using: .utf8))
            let object = try JSONDecoder().decode([String: String].self, from: data)
            #expect(object["sealed"]?.count == 560)
            #expect(Set(sends.flatMap { $0.delivery ?? [] }) == ["stored"])
        }
    }

    @Test("a dead token is answered tokenDead and told to the feedback handler")
    func tokenDead() async throws {
        try await HMSHarness.with { harness in
            let (device, token) = try harness.device()
            try harness.core.uninstall(deviceID: device.deviceID)
            let result = await harness.client.send(harness.push(to: token))
            #expect(result == .tokenDead(code: .allTokensInvalid))
            #expect(harness.feedback == [HMSTokenFeedback(token: token, code: .allTokensInvalid)])
        }
    }

    @Test("an expired access token (80200003) is refreshed once and the send delivered")
    func oauthExpiry() async throws {
        try await HMSHarness.with { harness in
            let push = harness.push(to: try harness.device().token)
            let before = await harness.client.send(push)
            harness.core.expireHMSAccessTokens()
            let after = await harness.client.send(push)
            #expect(before.isDelivered && after.isDelivered)
            #expect(harness.core.hmsAccessTokenGrants == 2, "one refresh, not one per attempt")
            let codes = harness.core.hmsInspection().filter { $0.kind == .send }.map(\.code)
            #expect(codes == ["80000000", "80200003", "80000000"])
        }
    }

    @Test("flow control (503) is retried and the message delivered")
    func flowControlThenDelivered() async throws {
        try await HMSHarness.with { harness in
            let (_, token) = try harness.device()
            try harness.core.inject(hmsFault: SandboxHMSFault(kind: .flowControl, count: 2))
            #expect(await harness.client.send(harness.push(to: token)).isDelivered)
            let sends = harness.core.hmsInspection().filter { $0.kind == .send }
            #expect(sends.map(\.status) == [503, 503, 200])
            #expect(sends.map(\.outcome) == ["injected", "injected", "accepted"])
        }
    }

    @Test("429 with Retry-After: the next attempt waits at least that long")
    func retryAfterHonoured() async throws {
        try await HMSHarness.with(retryMaximumDelay: .seconds(3)) { harness in
            let (_, token) = try harness.device()
            try harness.core.inject(hmsFault: SandboxHMSFault(kind: .tooManyRequests, retryAfter: 1))
            let started = ContinuousClock.now
            #expect(await harness.client.send(harness.push(to: token)).isDelivered)
            #expect(ContinuousClock.now - started >= .seconds(1))
            let sends = harness.core.hmsInspection().filter { $0.kind == .send }
            let gap = try #require(sends.last).receivedAt - sends[0].receivedAt
            #expect(gap >= 1000)
        }
    }

    @Test("a Retry-After beyond the backoff's range is handed to the relay as retryLater")
    func longRetryAfterToRelay() async throws {
        try await HMSHarness.with { harness in
            let (_, token) = try harness.device()
            try harness.core.inject(hmsFault: SandboxHMSFault(kind: .tooManyRequests, retryAfter: 30))
            let result = await harness.client.send(harness.push(to: token))
            guard case .retryLater(_, let after) = result else {
                Issue.record("expected retryLater, got \(result)")
                return
            }
            #expect(after == .seconds(30))
        }
    }

    @Test("a retry that would start after the message's expiration is not made: expired")
    func expirationNeverOutlived() async throws {
        try await HMSHarness.with(retryMaximumDelay: .seconds(5)) { harness in
            let (_, token) = try harness.device()
            try harness.core.inject(hmsFault: SandboxHMSFault(kind: .tooManyRequests, count: 5, retryAfter: 3))
            let started = ContinuousClock.now
            let result = await harness.client.send(harness.push(to: token, expiresIn: 2))
            #expect(result == .expired)
            #expect(ContinuousClock.now - started < .seconds(2), "no wait past the expiration")
            #expect(harness.core.hmsInspection().filter { $0.kind == .send }.count == 1)
        }
    }

    @Test("a wrong client secret is a permanent failure; the secret is sent only in the token request's body")
    func wrongSecret() async throws {
        try await HMSHarness.with(secret: String(repeating: "0", count: 64)) { harness in
            let (_, token) = try harness.device()
            let result = await harness.client.send(harness.push(to: token))
            guard case .failed(nil, 401, let message) = result else {
                Issue.record("expected failed 401, got \(result)")
                return
            }
            #expect(message.contains("invalid client_secret"))
            #expect(!message.contains("0000000000"))
            let record = try #require(harness.core.hmsInspection().first)
            #expect(record.kind == .token && record.status == 400 && record.code == "1101")
        }
    }

    @Test("a message Push Kit would refuse is refused before it is sent")
    func refusedLocally() async throws {
        try await HMSHarness.with { harness in
            let (_, token) = try harness.device()
            var push = harness.push(to: token)
            push.payload.data = ["sealed": String(repeating: "S", count: HMSPayload.maxData)]
            let result = await harness.client.send(push)
            #expect(
                result
                    == .failed(
                        code: .bodyTooLarge,
                        status: 413,
                        message: "message.data: The message body is too large (80300008)"
                    )
            )
            #expect(harness.core.hmsInspection().isEmpty)
        }
    }
}
