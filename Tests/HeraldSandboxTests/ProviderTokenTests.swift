import Crypto
import Foundation
import HeraldAPNsCore
import HeraldSandbox
import NIOHTTP2
import Testing

@Suite(.timeLimit(.minutes(2))) struct ProviderTokenTests {
    func token(
        key: P256.Signing.PrivateKey,
        keyID: String = SandboxHarness.keyID,
        teamID: String = SandboxHarness.teamID,
        age: Int64 = 0
    ) throws
        -> String
    {
        try ProviderTokenSigner(privateKey: key, keyID: keyID, teamID: teamID)
            .makeToken(issuedAt: SandboxHarness.now() - age).text
    }

    @Test func tokensAreCheckedOncePerDistinctToken() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let second = sandbox.makeClient()
            for client in [sandbox.client, second, sandbox.client, second] {
                #expect(try await sandbox.push(to: token, client: client).status == 200)
            }
            #expect(sandbox.core.providerTokenVerifications == 1)
        }
    }

    @Test func anOldTokenIsExpired() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            let old = try sandbox.signer.makeToken(issuedAt: SandboxHarness.now() - 3601).text
            let reply = try await sandbox.push(to: device, headers: [("authorization", "bearer \(old)")])
            #expect(reply.status == 403)
            #expect(reply.reason == "ExpiredProviderToken")
        }
    }

    @Test func anExpiredTokenDoesNotCountAsTheTeamsNewToken() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            let old = try sandbox.signer.makeToken(issuedAt: SandboxHarness.now() - 4000).text
            let expired = try await sandbox.push(to: device, headers: [("authorization", "bearer \(old)")])
            #expect(expired.reason == "ExpiredProviderToken")
            // The fresh token right after is the first real one: accepted, not TooManyProviderTokenUpdates.
            #expect(try await sandbox.push(to: device).status == 200)
        }
    }

    @Test func badSignaturesUnknownKeysAndWrongTeamsAreInvalid() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            let stranger = P256.Signing.PrivateKey()
            let tokens = [
                try token(key: stranger),  // registered kid, wrong signature
                try token(key: stranger, keyID: "UNKNOWNKEY"),
                try sandbox.signer.makeToken(issuedAt: SandboxHarness.now() + 3600).text,  // from the future
                try ProviderTokenSigner(privateKey: stranger, keyID: SandboxHarness.keyID, teamID: "OTHERTEAM1")
                    .makeToken(issuedAt: SandboxHarness.now()).text,
                String(sandbox.token.text.dropLast(4)) + "AAAA",  // tampered signature
            ]
            for token in tokens {
                let reply = try await sandbox.push(to: device, headers: [("authorization", "bearer \(token)")])
                #expect(reply.status == 403)
                #expect(reply.reason == "InvalidProviderToken")
            }
        }
    }

    @Test func productionOnlyAndRevokedKeysAreRefused() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            let production = P256.Signing.PrivateKey()
            try sandbox.core.register(
                key: SandboxKey(
                    keyID: "PRODKEY123",
                    teamID: SandboxHarness.teamID,
                    publicKeyPEM: production.publicKey.pemRepresentation,
                    environment: .production
                )
            )
            let productionReply = try await sandbox.push(
                to: device,
                headers: [("authorization", "bearer \(try token(key: production, keyID: "PRODKEY123"))")]
            )
            #expect(productionReply.status == 403)
            #expect(productionReply.reason == "BadEnvironmentKeyInToken")

            try sandbox.core.revoke(keyID: SandboxHarness.keyID)
            let revoked = try await sandbox.push(to: device)
            #expect(revoked.status == 403)
            #expect(revoked.reason == "Forbidden")
        }
    }

    @Test func aSecondKeyOnTheSameConnectionIsUnrelated() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            let other = P256.Signing.PrivateKey()
            try sandbox.core.register(
                key: SandboxKey(
                    keyID: "OTHERKEY12",
                    teamID: SandboxHarness.teamID,
                    publicKeyPEM: other.publicKey.pemRepresentation
                )
            )
            #expect(try await sandbox.push(to: device).status == 200)
            let otherToken = try token(key: other, keyID: "OTHERKEY12")
            let reply = try await sandbox.push(to: device, headers: [("authorization", "bearer \(otherToken)")])
            #expect(reply.status == 403)
            #expect(reply.reason == "UnrelatedKeyIdInToken")
            // On its own connection the other key is fine.
            let client = sandbox.makeClient()
            #expect(
                try await sandbox.push(to: device, headers: [("authorization", "bearer \(otherToken)")], client: client)
                    .status == 200
            )
        }
    }

    @Test func newTokensMoreOftenThanTheIntervalAreRefused() async throws {
        let clock = SandboxClock()
        let setup = SandboxHarness.Setup {
            $0.providerTokenUpdateInterval = .milliseconds(400)
            $0.clock = clock
        }
        try await SandboxHarness.with(setup) { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            var connection = SandboxConnectionState()
            #expect(sandbox.handle(to: device, connection: &connection)?.status == 200)
            let newer = try sandbox.signer.makeToken(issuedAt: sandbox.token.issuedAt + 1).text
            var other = SandboxConnectionState()
            let refused = sandbox.handle(to: device, token: newer, connection: &other)
            #expect(refused?.status == 429)
            #expect(refused?.reason == .tooManyProviderTokenUpdates)
            // The current token keeps working meanwhile.
            #expect(sandbox.handle(to: device, connection: &connection)?.status == 200)
            // Just short of the interval the new token is still refused; at the interval it is welcome.
            clock.advance(by: .milliseconds(390))
            var early = SandboxConnectionState()
            #expect(sandbox.handle(to: device, token: newer, connection: &early)?.status == 429)
            clock.advance(by: .milliseconds(10))
            #expect(sandbox.handle(to: device, token: newer, connection: &other)?.status == 200)
        }
    }

    @Test func theStreamLimitRisesOnlyAfterAValidToken() async throws {
        try await SandboxHarness.with(SandboxHarness.Setup { $0.maxConcurrentStreams = 777 }) { sandbox in
            let device = try #require(try sandbox.device().messagingToken)
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            var frames = raw.frames.makeAsyncIterator()
            var limits: [Int] = []
            // An invalid token first: the limit must stay at 1.
            try await raw.send(
                streamID: 1,
                headers: RawHTTP2Client.requestHeaders(path: "/3/device/\(device)", token: "bad.token.here"),
                body: #"{"aps":{}}"#
            )
            while let frame = await frames.next() {
                if let limit = frame.payload.maxConcurrentStreams { limits.append(limit) }
                if frame.streamID == 1, case .data(let data) = frame.payload, data.endStream { break }
            }
            #expect(limits == [1])
            try await raw.send(
                streamID: 3,
                headers: RawHTTP2Client.requestHeaders(path: "/3/device/\(device)", token: sandbox.token.text),
                body: #"{"aps":{}}"#
            )
            var status: String?
            while let frame = await frames.next() {
                if let limit = frame.payload.maxConcurrentStreams { limits.append(limit) }
                if frame.streamID == 3, let value = frame.payload.status {
                    status = value
                    break
                }
            }
            #expect(status == "200")
            #expect(limits == [1, 777])
            await raw.close()
        }
    }
}
