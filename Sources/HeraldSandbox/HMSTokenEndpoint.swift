import HeraldHMSCore
import Synchronization

/// Huawei's OAuth 2.0 token endpoint as Push Kit senders use it: registered apps (id and client
/// secret), client-credentials grants, and the app-level access tokens they get.
final class HMSTokenEndpoint: Sendable {
    /// What a send's bearer token is.
    enum Access: Equatable {
        /// Granted here for this app and not expired.
        case valid(appID: String)
        /// Granted here but expired: Push Kit answers 80200003.
        case expired
        /// Missing or never granted: 80200001.
        case unknown
    }

    private struct State {
        var secrets: [String: String] = [:]
        var accessTokens = AccessTokenLedger<String>()
    }

    private let lifetime: Duration
    private let clock: SandboxClock
    private let state: Mutex<State>

    init(apps: [SandboxHMSApp], accessTokenLifetime: Duration, clock: SandboxClock) throws(SandboxError) {
        lifetime = accessTokenLifetime
        self.clock = clock
        var initial = State()
        for app in apps {
            try Self.check(app)
            initial.secrets[app.appID] = app.clientSecret
        }
        state = Mutex(initial)
    }

    private static func check(_ app: SandboxHMSApp) throws(SandboxError) {
        guard !app.appID.isEmpty, !app.clientSecret.isEmpty else {
            throw .invalidRequest("app_id and client_secret must not be empty")
        }
    }

    /// Registers (or replaces) an app; tokens already granted stay valid.
    func register(app: SandboxHMSApp) throws(SandboxError) {
        try Self.check(app)
        state.withLock { $0.secrets[app.appID] = app.clientSecret }
    }

    /// The registered apps' ids.
    var appIDs: Set<String> { state.withLock { Set($0.secrets.keys) } }

    /// How many access tokens were granted.
    var grants: Int { state.withLock { $0.accessTokens.grants } }

    /// Makes every access token granted so far expired.
    func expireAccessTokens() {
        let now = clock.now
        state.withLock { $0.accessTokens.expireAll(at: now) }
    }

    /// What the bearer token `token` is worth.
    func access(for token: String?) -> Access {
        guard let token else { return .unknown }
        let now = clock.now
        return state.withLock { state in
            if let appID = state.accessTokens.grant(of: token, at: now) { return .valid(appID: appID) }
            return state.accessTokens.knows(token) ? .expired : .unknown
        }
    }

    /// `POST /oauth2/v3/token`: a client-credentials grant, or Huawei's refusal (400, error 1101).
    func grant(form: [String: String], record: inout SandboxHMSInspectionRecord) -> SandboxFCMAnswer {
        let clientID = form["client_id"] ?? ""
        record.appID = clientID
        let refusal: String? = state.withLock { state in
            guard form["grant_type"] == HMSAppCredentials.clientCredentialsGrantType else {
                return "unsupported grant_type: \(form["grant_type"] ?? "")"
            }
            guard let secret = state.secrets[clientID] else { return "invalid client_id" }
            guard form["client_secret"] == secret else { return "invalid client_secret" }
            return nil
        }
        if let refusal {
            // Every refusal as Huawei words a wrong secret: 1101 with sub-error 12304.
            record.status = 400
            record.code = "1101"
            record.message = refusal
            return SandboxFCMAnswer(status: 400, body: HMSTokenAnswer.refused(subError: 12304, refusal).encoded())
        }
        let token = "CgB6e3x9" + RandomText.urlSafe(count: 112)
        let now = clock.now
        state.withLock { $0.accessTokens.issue(token, clientID, now: now, lifetime: lifetime) }
        record.status = 200
        record.outcome = "accepted"
        return SandboxFCMAnswer(
            status: 200,
            body: HMSTokenAnswer.granted(token, expiresIn: Int64(lifetime / .seconds(1))).encoded()
        )
    }
}
