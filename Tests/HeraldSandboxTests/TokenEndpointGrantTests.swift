import Foundation
import HeraldFCMCore
import Testing

@testable import HeraldSandbox

/// The FCM token endpoint without a listener: what a grant allows, counting, expiry.
@Suite(.timeLimit(.minutes(1)))
struct TokenEndpointGrantTests {
    static func endpoint(lifetime: Duration = .seconds(3600)) throws -> FCMTokenEndpoint {
        try FCMTokenEndpoint(
            serviceAccounts: [FCMFixtures.sandboxAccount(FCMFixtures.primary)],
            accessTokenLifetime: lifetime
        )
    }

    /// Exchanges an assertion for `scope`; returns the answer, its access token and the record.
    static func grant(
        _ endpoint: FCMTokenEndpoint,
        scope: String = FCMServiceAccount.messagingScope,
        grantType: String = FCMServiceAccount.jwtBearerGrantType
    ) throws -> (answer: SandboxFCMAnswer, token: String?, record: SandboxFCMInspectionRecord) {
        let assertion = try FCMAssertionSigner(account: FCMFixtures.primary)
            .assertion(issuedAt: SandboxHarness.now(), scope: scope)
        var record = SandboxFCMInspectionRecord(kind: .token, receivedAt: 0)
        let answer = endpoint.grant(form: ["grant_type": grantType, "assertion": assertion], record: &record)
        let token = (try? JSONDecoder().decode(FCMAccessTokenResponse.self, from: answer.body))?.accessToken
        return (answer, token, record)
    }

    @Test func aGrantAllowsSendingForTheAccountsProjectAndIsCounted() throws {
        let endpoint = try Self.endpoint()
        let (answer, token, record) = try Self.grant(endpoint)
        #expect(answer.status == 200)
        #expect(record.outcome == "accepted")
        #expect(record.project == FCMFixtures.project)
        #expect(endpoint.grants == 1)
        let granted = try #require(token)
        let access = try #require(endpoint.access(for: granted))
        #expect(access == FCMTokenEndpoint.AccessGrant(projectID: FCMFixtures.project, messaging: true))
        #expect(endpoint.access(for: "ya29.unknown") == nil)
        #expect(endpoint.projects == [FCMFixtures.project])
    }

    @Test func aScopeWithoutMessagingGrantsATokenThatCannotSend() throws {
        let endpoint = try Self.endpoint()
        let email = try #require(
            try Self.grant(endpoint, scope: "https://www.googleapis.com/auth/userinfo.email").token
        )
        #expect(endpoint.access(for: email)?.messaging == false)
        let cloud = try #require(
            try Self.grant(endpoint, scope: "https://www.googleapis.com/auth/cloud-platform").token
        )
        #expect(endpoint.access(for: cloud)?.messaging == true)
    }

    @Test func refusalsGrantNothing() throws {
        let endpoint = try Self.endpoint()
        let (answer, token, record) = try Self.grant(endpoint, grantType: "client_credentials")
        #expect(answer.status == 400)
        #expect(token == nil)
        #expect(record.errorCode == "unsupported_grant_type")
        #expect(record.outcome == "rejected")
        #expect(endpoint.grants == 0)
    }

    @Test func expiringEndsEveryGrantedTokenButNotLaterOnes() throws {
        let endpoint = try Self.endpoint()
        let old = try #require(try Self.grant(endpoint).token)
        endpoint.expireAccessTokens()
        #expect(endpoint.access(for: old) == nil)
        let fresh = try #require(try Self.grant(endpoint).token)
        #expect(endpoint.access(for: fresh) != nil)
        #expect(endpoint.grants == 2)
    }

    @Test func aZeroLifetimeGrantsTokensThatAreAlreadyExpired() throws {
        let endpoint = try Self.endpoint(lifetime: .zero)
        let (answer, token, _) = try Self.grant(endpoint)
        #expect(answer.status == 200)
        let granted = try #require(token)
        #expect(endpoint.access(for: granted) == nil)
    }
}
