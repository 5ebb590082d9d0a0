import CryptoExtras
import HeraldFCMCore
import Synchronization

/// Google's OAuth2 token endpoint as FCM senders use it: registered service accounts, their
/// JWT-bearer assertions, and the access tokens granted for them.
final class FCMTokenEndpoint: Sendable {
    /// The scopes that let an access token send FCM messages: FCM's own and Cloud Platform's.
    static let messagingScopes: Set<String> = [
        FCMServiceAccount.messagingScope, "https://www.googleapis.com/auth/cloud-platform",
    ]

    /// What an access token allows.
    struct AccessGrant: Equatable, Sendable {
        let projectID: String
        /// Whether its scope lets it send FCM messages.
        let messaging: Bool
    }

    private let lifetime: Duration
    private let state: Mutex<State>
    private let clock: SandboxClock

    /// An endpoint that knows `serviceAccounts` and grants tokens valid for `accessTokenLifetime`.
    init(
        serviceAccounts: [SandboxServiceAccount] = [],
        accessTokenLifetime: Duration = .seconds(3600),
        clock: SandboxClock = SandboxClock()
    )
        throws(SandboxError)
    {
        lifetime = accessTokenLifetime
        self.clock = clock
        var initial = State()
        for account in serviceAccounts {
            initial.serviceAccounts[account.privateKeyID] = try RegisteredServiceAccount(account)
        }
        state = Mutex(initial)
    }

    /// Registers (or replaces) a service account; its PEM must be an RSA public key. Access
    /// tokens already granted stay valid.
    func register(serviceAccount: SandboxServiceAccount) throws(SandboxError) {
        let registered = try RegisteredServiceAccount(serviceAccount)
        state.withLock { $0.serviceAccounts[serviceAccount.privateKeyID] = registered }
    }

    /// The registered service accounts, by key id.
    var serviceAccounts: [SandboxServiceAccount] {
        state.withLock { $0.serviceAccounts.values.map(\.account) }.sorted { $0.privateKeyID < $1.privateKeyID }
    }

    /// The projects the registered service accounts send for.
    var projects: Set<String> {
        state.withLock { Set($0.serviceAccounts.values.map(\.account.projectID)) }
    }

    /// How many access tokens have been granted: a sender that caches its token makes one
    /// grant, not one per message.
    var grants: Int {
        state.withLock { $0.accessTokens.grants }
    }

    /// Makes every access token granted so far expired.
    func expireAccessTokens() {
        let now = clock.now
        state.withLock { $0.accessTokens.expireAll(at: now) }
    }

    /// What `token` allows, nil unless it was granted here and has not expired.
    func access(for token: String) -> AccessGrant? {
        let now = clock.now
        return state.withLock { $0.accessTokens.grant(of: token, at: now) }
    }

    /// `POST /token`: exchanges a JWT-bearer assertion (the form's `grant_type` and `assertion`)
    /// for an access token, with Google's rules and RFC 6749 refusals. Fills in `record`.
    func grant(form: [String: String], record: inout SandboxFCMInspectionRecord) -> SandboxFCMAnswer {
        switch check(form: form, record: &record) {
        case .granted(let grant):
            let token = "ya29." + RandomText.urlSafe(count: 120)
            let now = clock.now
            state.withLock { $0.accessTokens.issue(token, grant, now: now, lifetime: lifetime) }
            record.status = 200
            record.outcome = "accepted"
            let expiresIn = max(0, Int64(lifetime / .seconds(1)) - 1)
            return .json(200, FCMAccessTokenResponse(accessToken: token, expiresIn: expiresIn))
        case .refused(let refusal):
            record.status = 400
            record.errorCode = refusal.error
            record.errorMessage = refusal.errorDescription
            return .json(400, refusal)
        }
    }

    private enum Verdict {
        case granted(AccessGrant)
        case refused(FCMOAuthErrorBody)
    }

    /// Google's checks, in Google's order: the grant type, the assertion's form, the account,
    /// the signature, the times, the audience, the scope.
    private func check(form: [String: String], record: inout SandboxFCMInspectionRecord) -> Verdict {
        let grantType = form["grant_type"] ?? ""
        guard grantType == FCMServiceAccount.jwtBearerGrantType else {
            return .refused(
                .init(error: "unsupported_grant_type", errorDescription: "Invalid grant_type: \(grantType)")
            )
        }
        guard let text = form["assertion"], !text.isEmpty else {
            return .refused(
                .init(error: "invalid_request", errorDescription: "Missing required parameter: assertion")
            )
        }
        guard let assertion = FCMAssertion(text) else {
            return .refused(.init(error: "invalid_grant", errorDescription: "Invalid JWT"))
        }
        let account = state.withLock { $0.serviceAccounts[assertion.keyID] }
        guard let account, account.account.clientEmail == assertion.issuer else {
            return .refused(.init(error: "invalid_grant", errorDescription: "Invalid grant: account not found"))
        }
        record.project = account.account.projectID
        // Outside the lock: an RSA verification costs more than everything else here.
        guard assertion.isSigned(by: account.publicKey) else {
            return .refused(.init(error: "invalid_grant", errorDescription: "Invalid JWT Signature."))
        }
        let now = clock.epochMilliseconds / 1000
        if assertion.expiresAt - assertion.issuedAt > 3600 || assertion.expiresAt <= assertion.issuedAt
            || assertion.issuedAt > now + 300 || assertion.expiresAt < now
        {
            return .refused(
                .init(
                    error: "invalid_grant",
                    errorDescription:
                        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                        + "Check your iat and exp values in the JWT claim."
                )
            )
        }
        guard assertion.audience.hasSuffix("/token") else {
            return .refused(
                .init(
                    error: "invalid_grant",
                    errorDescription:
                        "Invalid JWT: Failed audience check. The audience must be the token endpoint (…/token)."
                )
            )
        }
        let scopes = Set(assertion.scope.split(separator: " ").map(String.init))
        guard !scopes.isEmpty else {
            return .refused(
                .init(error: "invalid_scope", errorDescription: "Invalid OAuth scope or ID token audience provided.")
            )
        }
        return .granted(
            AccessGrant(projectID: account.account.projectID, messaging: !scopes.isDisjoint(with: Self.messagingScopes))
        )
    }
}

// MARK: - State

extension FCMTokenEndpoint {
    struct RegisteredServiceAccount {
        let account: SandboxServiceAccount
        let publicKey: _RSA.Signing.PublicKey

        init(_ account: SandboxServiceAccount) throws(SandboxError) {
            for (name, value) in [
                ("client_email", account.clientEmail), ("private_key_id", account.privateKeyID),
                ("project_id", account.projectID),
            ] where value.isEmpty {
                throw .invalidServiceAccount("\(name) must not be empty")
            }
            do {
                publicKey = try _RSA.Signing.PublicKey(pemRepresentation: account.publicKeyPEM)
            } catch {
                throw .invalidServiceAccount("public_key_pem is not an RSA public key in PEM form (2048 bits or more)")
            }
            self.account = account
        }
    }

    struct State {
        var serviceAccounts: [String: RegisteredServiceAccount] = [:]
        var accessTokens = AccessTokenLedger<AccessGrant>()
    }
}
