import Crypto
import HeraldAPNsCore

extension APNsEmulator {
    /// The configuration's APNs rules, read once.
    struct Rules: Sendable {
        let providerTokenMaxAgeSeconds: Int64
        let providerTokenUpdateInterval: Duration
        let perTokenRateLimit: Int?
        let defaultStorage: Duration

        init(_ configuration: SandboxConfiguration) {
            providerTokenMaxAgeSeconds = Int64(configuration.providerTokenMaxAge / .seconds(1))
            providerTokenUpdateInterval = configuration.providerTokenUpdateInterval
            perTokenRateLimit = configuration.perTokenRateLimit
            defaultStorage = configuration.defaultStorage
        }
    }

    struct RegisteredKey {
        let teamID: String
        let publicKey: P256.Signing.PublicKey
        let environment: SandboxKey.Environment
        var revoked = false

        init(_ key: SandboxKey) throws(SandboxError) {
            do {
                publicKey = try P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
            } catch {
                throw .invalidKey("public_key_pem is not a P-256 public key in PEM form")
            }
            guard !key.keyID.isEmpty, !key.teamID.isEmpty else {
                throw .invalidKey("key_id and team_id must not be empty")
            }
            teamID = key.teamID
            environment = key.environment
        }
    }

    /// What a provider token turned out to be, cached per distinct token text.
    enum ProviderTokenVerdict {
        case valid(keyID: String, teamID: String, issuedAt: Int64)
        case invalid(APNsReason, keyID: String?, teamID: String?)
    }

    /// The token a team and key use now, and since when.
    struct TokenGeneration {
        let token: String
        let since: ContinuousClock.Instant
    }

    struct RateWindow {
        var start: ContinuousClock.Instant
        var count: Int
    }

    struct State {
        var keys: [String: RegisteredKey] = [:]
        /// Per team and key: distinct valid tokens taken up, and new ones refused as too early.
        var tokenCounts: [SandboxProviderTokenCount.Key: SandboxProviderTokenCount] = [:]
        var providerTokens: [String: ProviderTokenVerdict] = [:]
        var tokenGenerations: [String: TokenGeneration] = [:]
        var rateWindows: [String: RateWindow] = [:]
        var plan = FaultPlan<SandboxFault>()
        var signatureVerifications = 0
        var random: SplitMix64 = {
            var system = SystemRandomNumberGenerator()
            return SplitMix64(seed: system.next())
        }()

        private mutating func count(
            _ teamID: String,
            _ keyID: String,
            _ change: (inout SandboxProviderTokenCount) -> Void
        ) {
            let key = SandboxProviderTokenCount.Key(teamID: teamID, keyID: keyID)
            change(&tokenCounts[key, default: SandboxProviderTokenCount(teamID: teamID, keyID: keyID)])
        }

        /// Verifies a provider token once per distinct token text and caches the verdict;
        /// signature checks are costly and Apple does not repeat them per request either.
        mutating func verify(
            providerToken jwt: String,
            rules: Rules,
            now: ContinuousClock.Instant,
            nowSeconds: Int64
        ) -> ProviderTokenVerdict {
            if let cached = providerTokens[jwt] { return cached }
            if providerTokens.count >= 10_000 { providerTokens.removeAll(keepingCapacity: true) }
            signatureVerifications += 1

            guard let parsed = ParsedProviderToken(jwt[...]) else {
                let verdict = ProviderTokenVerdict.invalid(.invalidProviderToken, keyID: nil, teamID: nil)
                providerTokens[jwt] = verdict
                return verdict
            }
            let invalid = { (reason: APNsReason) in
                ProviderTokenVerdict.invalid(reason, keyID: parsed.keyID, teamID: parsed.teamID)
            }
            guard let key = keys[parsed.keyID] else {
                providerTokens[jwt] = invalid(.invalidProviderToken)
                return invalid(.invalidProviderToken)
            }
            let verdict: ProviderTokenVerdict
            if key.revoked {
                verdict = invalid(.forbidden)
            } else if key.teamID != parsed.teamID || !parsed.isSigned(by: key.publicKey) {
                verdict = invalid(.invalidProviderToken)
            } else if parsed.issuedAt > nowSeconds + 300 {
                // Issued more than five minutes in the future: the provider's clock is wrong. Not
                // cached, since the same token becomes acceptable once the clocks agree.
                return invalid(.invalidProviderToken)
            } else if nowSeconds - parsed.issuedAt > rules.providerTokenMaxAgeSeconds {
                // Checked before the update rule: an expired token must not count as the team's new one.
                verdict = invalid(.expiredProviderToken)
            } else {
                // A new valid token: the team's previous one must be old enough to be replaced.
                let generationKey = parsed.teamID + "/" + parsed.keyID
                if let previous = tokenGenerations[generationKey], previous.token != jwt,
                    now - previous.since < rules.providerTokenUpdateInterval
                {
                    // Not cached: once the interval has passed the same token is welcome.
                    count(parsed.teamID, parsed.keyID) { $0.updatesRefused += 1 }
                    return invalid(.tooManyProviderTokenUpdates)
                }
                if tokenGenerations[generationKey]?.token != jwt {
                    tokenGenerations[generationKey] = TokenGeneration(token: jwt, since: now)
                    count(parsed.teamID, parsed.keyID) { $0.tokensAccepted += 1 }
                }
                verdict = .valid(keyID: parsed.keyID, teamID: parsed.teamID, issuedAt: parsed.issuedAt)
            }
            providerTokens[jwt] = verdict
            return verdict
        }
    }
}

/// What the APNs inspection log keeps per request: the request as read plus what was done.
struct APNsInspectionEntry: InspectionLogEntry {
    enum Delivery: String, Sendable {
        case delivered
        case stored
        case discardedTryOnce = "discarded: device offline and apns-expiration is 0"
        case discardedExpired = "discarded: expired while the device was offline"
    }

    let request: SandboxAPNsRequest
    let receivedAt: Int64
    let apnsID: String
    var sequence = 0
    var keyID: String?
    var teamID: String?
    var status = 0
    var reason: APNsReason?
    var outcome = "accepted"
    var delivery: Delivery?
    var environment: APNsEnvironment = .development

    init(request: SandboxAPNsRequest, receivedAt: Int64, apnsID: String) {
        self.request = request
        self.receivedAt = receivedAt
        self.apnsID = apnsID
    }

    var record: SandboxInspectionRecord {
        SandboxInspectionRecord(
            sequence: sequence,
            receivedAt: receivedAt,
            method: request.method ?? "",
            path: request.path ?? "",
            token: APNsEmulator.token(inPath: request.path)?.lowercased(),
            topic: request.topic,
            pushType: request.pushType,
            priority: request.priority,
            expiration: request.expiration,
            collapseID: request.collapseID,
            apnsID: apnsID,
            keyID: keyID,
            teamID: teamID,
            payload: String(decoding: request.body, as: UTF8.self),
            status: status,
            reason: reason?.rawValue,
            outcome: outcome,
            delivery: delivery?.rawValue,
            environment: environment
        )
    }
}
