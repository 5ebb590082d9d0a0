import CryptoExtras
import Foundation
import HeraldFCMCore

/// An answer of the FCM listener, as the core decides it: the transport only writes it.
struct SandboxFCMAnswer: Sendable {
    var status: Int
    var body: Data
    /// Seconds for a `Retry-After` header.
    var retryAfter: Int?
    /// Latency to add before answering.
    var delay: Duration = .zero
    /// Adds `WWW-Authenticate: Bearer`, as Google does with 401.
    var challenge = false

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json(_ status: Int, _ value: some Encodable) -> Self {
        SandboxFCMAnswer(status: status, body: (try? encoder.encode(value)) ?? Data("{}".utf8))
    }
}

// MARK: - Service accounts and the token endpoint

extension SandboxCore {
    /// The scopes that let an access token send FCM messages: FCM's own and Cloud Platform's.
    static let messagingScopes: Set<String> = [
        FCMServiceAccount.messagingScope, "https://www.googleapis.com/auth/cloud-platform",
    ]

    /// Registers (or replaces) a service account; its PEM must be an RSA public key. Access
    /// tokens already issued stay valid.
    public func register(serviceAccount: SandboxServiceAccount) throws(SandboxError) {
        let registered = try RegisteredServiceAccount(serviceAccount)
        state.withLock { $0.serviceAccounts[serviceAccount.privateKeyID] = registered }
    }

    /// The registered service accounts.
    public var serviceAccounts: [SandboxServiceAccount] {
        state.withLock { $0.serviceAccounts.values.map(\.account) }.sorted { $0.privateKeyID < $1.privateKeyID }
    }

    /// How many access tokens the token endpoint has granted: a sender that caches its token
    /// makes one grant, not one per message.
    public var fcmAccessTokenGrants: Int {
        state.withLock { $0.accessTokenGrants }
    }

    /// Makes every access token issued so far expired: sends with one get 401 UNAUTHENTICATED.
    public func expireAccessTokens() {
        let now = clock.now
        state.withLock { state in
            for key in state.accessTokens.keys { state.accessTokens[key]?.expiresAt = now }
        }
    }

    /// `POST /token`: exchanges a JWT-bearer assertion (the form's `grant_type` and `assertion`)
    /// for an access token, with Google's rules and RFC 6749 refusals.
    func grantAccessToken(form: [String: String]) -> SandboxFCMAnswer {
        var record = SandboxFCMInspectionRecord(kind: .token, receivedAt: Self.epochMilliseconds())
        var answer: SandboxFCMAnswer
        switch checkAssertion(form: form, record: &record) {
        case .granted(let project, let messaging):
            let token = "ya29." + Self.randomURLSafe(count: 120)
            let lifetime = configuration.fcmAccessTokenLifetime
            let now = clock.now
            state.withLock { state in
                if state.accessTokens.count >= 10_000 {
                    state.accessTokens = state.accessTokens.filter { $0.value.expiresAt > now }
                }
                state.accessTokens[token] = AccessTokenRecord(
                    projectID: project,
                    messaging: messaging,
                    expiresAt: now + lifetime
                )
                state.accessTokenGrants += 1
            }
            let expiresIn = max(0, Int64(lifetime / .seconds(1)) - 1)
            answer = .json(200, FCMAccessTokenResponse(accessToken: token, expiresIn: expiresIn))
            record.status = 200
            record.outcome = "accepted"
        case .refused(let refusal):
            answer = .json(400, refusal)
            record.status = 400
            record.errorCode = refusal.error
            record.errorMessage = refusal.errorDescription
        }
        answer.delay = log(fcm: &record)
        return answer
    }

    /// Google's checks, in Google's order: the grant type, the assertion's form, the account,
    /// the signature, the times, the audience, the scope.
    private func checkAssertion(
        form: [String: String],
        record: inout SandboxFCMInspectionRecord
    ) -> AssertionVerdict {
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
        let now = Self.epochMilliseconds() / 1000
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
        return .granted(project: account.account.projectID, messaging: !scopes.isDisjoint(with: Self.messagingScopes))
    }

    private enum AssertionVerdict {
        case granted(project: String, messaging: Bool)
        case refused(FCMOAuthErrorBody)
    }

    /// A random string of URL-safe base64 characters.
    static func randomURLSafe(count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<count).map { _ in alphabet[Int(generator.next() % 64)] }, as: UTF8.self)
    }

    /// A registration token in FCM's shape: an instance id, a colon, and `APA91b…`.
    static func registrationToken() -> String {
        randomURLSafe(count: 22) + ":APA91b" + randomURLSafe(count: 134)
    }
}

// MARK: - State

extension SandboxCore {
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

    struct AccessTokenRecord {
        let projectID: String
        /// Whether its scope lets it send FCM messages.
        let messaging: Bool
        var expiresAt: ContinuousClock.Instant
    }

    struct FCMTokenRecord {
        let deviceID: String
        let projectID: String
        var state: TokenRecord.Status = .active
    }

    struct PendingFCMMessage {
        let message: SandboxFCMMessage
        /// Milliseconds since the epoch.
        let expiresAt: Int64
    }
}

extension SandboxCore.State {
    /// The project of a new Android device: the one asked for, or the registered service
    /// accounts' project when there is exactly one.
    func projectForNewDevice(_ projectID: String?) throws(SandboxError) -> String {
        if let projectID {
            guard !projectID.isEmpty else { throw .invalidRequest("project_id must not be empty") }
            return projectID
        }
        let projects = Set(serviceAccounts.values.map(\.account.projectID))
        guard projects.count == 1, let project = projects.first else {
            throw .invalidRequest(
                projects.isEmpty
                    ? "project_id is required for an Android device: no service account is registered "
                        + "(POST /sandbox/fcm/service-accounts) to take the project from"
                    : "project_id is required for an Android device: service accounts of \(projects.count) "
                        + "projects are registered (\(projects.sorted().joined(separator: ", ")))"
            )
        }
        return project
    }
}

extension SandboxFCMInspectionRecord {
    /// A record about to be filled in.
    init(kind: Kind, receivedAt: Int64) {
        self.init(
            sequence: 0,
            receivedAt: receivedAt,
            kind: kind,
            project: nil,
            token: nil,
            priority: nil,
            ttl: nil,
            collapseKey: nil,
            data: nil,
            status: 0,
            errorCode: nil,
            errorMessage: nil,
            outcome: "rejected",
            delivery: nil,
            name: nil
        )
    }
}
