import CryptoExtras
import Foundation
import HeraldFCMCore
import HeraldSandbox
import Testing

/// `POST /token`: Google's OAuth2 JWT-bearer exchange.
@Suite(.timeLimit(.minutes(2))) struct FCMTokenEndpointTests {
    static let shortLived =
        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
        + "Check your iat and exp values in the JWT claim."

    @Test func aValidAssertionGetsAnAccessTokenAndIsCounted() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            #expect(sandbox.core.fcmAccessTokenGrants == 0)
            let assertion = try FCMAssertionSigner(account: FCMFixtures.primary).assertion(
                issuedAt: SandboxHarness.now()
            )
            let reply = try await sandbox.tokenRequest(assertion: assertion)
            #expect(reply.status == 200)
            let answer = try JSONDecoder().decode(FCMAccessTokenResponse.self, from: Data(reply.body.utf8))
            #expect(answer.accessToken.hasPrefix("ya29."))
            #expect(answer.expiresIn == 3599)
            #expect(answer.tokenType == "Bearer")
            #expect(sandbox.core.fcmAccessTokenGrants == 1)
            let record = try #require(sandbox.core.fcmInspection().last)
            #expect(record.kind == .token)
            #expect(record.status == 200)
            #expect(record.outcome == "accepted")
            #expect(record.project == FCMFixtures.project)

            // A second grant is a different token.
            let second = try await sandbox.accessToken()
            #expect(second != answer.accessToken)
            #expect(sandbox.core.fcmAccessTokenGrants == 2)
        }
    }

    @Test func theLifetimeIsConfigurable() async throws {
        let setup = SandboxHarness.Setup {
            SandboxHarness.Setup.fcm.apply(&$0)
            $0.fcmAccessTokenLifetime = .seconds(120)
        }
        try await SandboxHarness.with(setup) { sandbox in
            let assertion = try FCMAssertionSigner(account: FCMFixtures.primary).assertion(
                issuedAt: SandboxHarness.now()
            )
            let reply = try await sandbox.tokenRequest(assertion: assertion)
            #expect(reply.json?["expires_in"] as? Int == 119)
        }
    }

    @Test func anAssertionSignedWithAnotherKeyIsRefused() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let account = FCMFixtures.primary
            let now = SandboxHarness.now()
            // The right key id and account, signed with another account's key.
            let assertion = try AssertionForge.make(
                key: try FCMFixtures.other.signingKey(),
                keyID: account.privateKeyID,
                issuer: account.clientEmail,
                issuedAt: now,
                expiresAt: now + 3600
            )
            let reply = try await sandbox.tokenRequest(assertion: assertion)
            #expect(reply.status == 400)
            #expect(reply.json?["error"] as? String == "invalid_grant")
            #expect(reply.json?["error_description"] as? String == "Invalid JWT Signature.")
            #expect(sandbox.core.fcmAccessTokenGrants == 0)
            #expect(sandbox.core.fcmInspection().last?.errorCode == "invalid_grant")
        }
    }

    @Test func anUnknownAccountIsRefused() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let now = SandboxHarness.now()
            // Another account's own, valid assertion: its key was never registered.
            let unknown = try FCMAssertionSigner(account: FCMFixtures.other).assertion(issuedAt: now)
            // The registered key id with another issuer.
            let wrongIssuer = try AssertionForge.make(
                key: try FCMFixtures.primary.signingKey(),
                keyID: FCMFixtures.primary.privateKeyID,
                issuer: FCMFixtures.other.clientEmail,
                issuedAt: now,
                expiresAt: now + 3600
            )
            for assertion in [unknown, wrongIssuer] {
                let reply = try await sandbox.tokenRequest(assertion: assertion)
                #expect(reply.status == 400)
                #expect(reply.json?["error"] as? String == "invalid_grant")
                #expect(reply.json?["error_description"] as? String == "Invalid grant: account not found")
            }
            #expect(sandbox.core.fcmAccessTokenGrants == 0)
        }
    }

    @Test(arguments: [
        (0, 7200),  // longer than an hour
        (600, 3600),  // issued ten minutes in the future
        (-7200, -3600),  // already expired
    ])
    func assertionsOutsideAReasonableTimeframeAreRefused(offsets: (issued: Int64, expires: Int64)) async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let now = SandboxHarness.now()
            let assertion = try AssertionForge.make(
                key: try FCMFixtures.primary.signingKey(),
                keyID: FCMFixtures.primary.privateKeyID,
                issuer: FCMFixtures.primary.clientEmail,
                issuedAt: now + offsets.issued,
                expiresAt: now + offsets.expires
            )
            let reply = try await sandbox.tokenRequest(assertion: assertion)
            #expect(reply.status == 400)
            #expect(reply.json?["error"] as? String == "invalid_grant")
            #expect(reply.json?["error_description"] as? String == Self.shortLived)
        }
    }

    @Test func theAudienceMustBeATokenEndpoint() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let now = SandboxHarness.now()
            let assertion = try AssertionForge.make(
                key: try FCMFixtures.primary.signingKey(),
                keyID: FCMFixtures.primary.privateKeyID,
                issuer: FCMFixtures.primary.clientEmail,
                audience: "https://fcm.googleapis.com/",
                issuedAt: now,
                expiresAt: now + 3600
            )
            let reply = try await sandbox.tokenRequest(assertion: assertion)
            #expect(reply.status == 400)
            #expect(reply.json?["error"] as? String == "invalid_grant")
            #expect((reply.json?["error_description"] as? String)?.contains("audience") == true)
        }
    }

    @Test func malformedRequestsGetRFC6749Errors() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let assertion = try FCMAssertionSigner(account: FCMFixtures.primary).assertion(
                issuedAt: SandboxHarness.now()
            )
            let wrongGrant = try await sandbox.tokenRequest(
                form: "grant_type=client_credentials&assertion=\(assertion)"
            )
            #expect(wrongGrant.status == 400)
            #expect(wrongGrant.json?["error"] as? String == "unsupported_grant_type")

            let grant = "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
            let missing = try await sandbox.tokenRequest(form: "grant_type=\(grant)")
            #expect(missing.status == 400)
            #expect(missing.json?["error"] as? String == "invalid_request")

            let garbage = try await sandbox.tokenRequest(form: "grant_type=\(grant)&assertion=not.a.jwt")
            #expect(garbage.status == 400)
            #expect(garbage.json?["error"] as? String == "invalid_grant")
            #expect(garbage.json?["error_description"] as? String == "Invalid JWT")
            #expect(sandbox.core.fcmAccessTokenGrants == 0)

            // JSON bodies are read too, as Google does.
            let json = try await sandbox.tokenRequest(
                form: #"{"grant_type":"\#(FCMServiceAccount.jwtBearerGrantType)","assertion":"\#(assertion)"}"#,
                contentType: "application/json"
            )
            #expect(json.status == 200)
            #expect(sandbox.core.fcmAccessTokenGrants == 1)
        }
    }
}
