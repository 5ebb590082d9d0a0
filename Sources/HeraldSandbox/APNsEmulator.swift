import HeraldAPNsCore
import HeraldEncoding
import HeraldHTTPSupport
import Synchronization

/// The APNs rules: provider keys and provider-token verification (with Apple's
/// TooManyProviderTokenUpdates window), topic and team rules, request validation and its
/// reasons, the per-token rate limit, APNs faults and latency. Devices and tokens are the
/// registry's: the emulator asks it whether a token is live and hands it accepted pushes.
///
/// The APNs listener calls `handle(_:connection:)` on NIO event loops for every request, so the
/// state sits behind a `Mutex` rather than in an actor: a lock held for a few microseconds costs
/// less than an executor hop per push, and nothing inside the lock suspends.
final class APNsEmulator: FaultPlanning {
    private let rules: Rules
    private let devices: any APNsDeviceDirectory
    /// Where every answered request is recorded.
    let log: InspectionLog<APNsInspectionEntry>
    private let state: Mutex<State>
    private let clock: SandboxClock

    /// The configuration's rules, provider keys and clock, over `devices`, recording into `log`.
    init(
        configuration: SandboxConfiguration,
        devices: any APNsDeviceDirectory,
        log: InspectionLog<APNsInspectionEntry>
    ) throws(SandboxError) {
        rules = Rules(configuration)
        clock = configuration.clock
        self.devices = devices
        self.log = log
        var initial = State()
        for key in configuration.keys { initial.keys[key.keyID] = try RegisteredKey(key) }
        state = Mutex(initial)
    }

    // MARK: - Provider keys

    /// Registers (or replaces) a provider key; its PEM must be a P-256 public key.
    func register(key: SandboxKey) throws(SandboxError) {
        let registered = try RegisteredKey(key)
        state.withLock {
            $0.keys[key.keyID] = registered
            // Tokens verified with an older version of this key must be checked again.
            $0.providerTokens.removeAll()
        }
    }

    /// Revokes a key: tokens it signed get 403 Forbidden from now on.
    func revoke(keyID: String) throws(SandboxError) {
        try state.withLock { (state) throws(SandboxError) in
            guard state.keys[keyID] != nil else { throw .unknownKey(keyID) }
            state.keys[keyID]?.revoked = true
            state.providerTokens.removeAll()
        }
    }

    /// How many provider tokens have been parsed and checked (not served from the cache).
    var providerTokenVerifications: Int {
        state.withLock { $0.signatureVerifications }
    }

    /// Per team and key: how many distinct provider tokens were taken up, and how many new ones
    /// were refused as TooManyProviderTokenUpdates; in team and key order.
    var providerTokenCounts: [SandboxProviderTokenCount] {
        state.withLock { $0.tokenCounts.values.sorted { ($0.teamID, $0.keyID) < ($1.teamID, $1.keyID) } }
    }

    // MARK: - Faults, latency, shutdown

    /// Queues a fault for the next matching requests.
    func inject(_ fault: SandboxFault) throws(SandboxError) {
        guard fault.count > 0 else { throw .invalidRequest("count must be at least 1") }
        if fault.action == .respond, fault.reason == nil, fault.status == nil {
            throw .invalidRequest("a respond fault needs a reason, a status, or both")
        }
        if let status = fault.status, !(400...599).contains(status) {
            throw .invalidRequest("status must be an error status, between 400 and 599")
        }
        var fault = fault
        fault.token = fault.token?.lowercased()
        state.withLock { [fault] in $0.plan.faults.append(fault) }
    }

    func changePlan(_ change: (inout FaultPlan<SandboxFault>) -> Void) {
        state.withLock { change(&$0.plan) }
    }

    // MARK: - Requests

    /// Applies every APNs rule to one request: answers, records it in the inspection log, and
    /// hands an accepted notification to the registry (a connected device gets it once it is
    /// recorded).
    func handle(_ request: SandboxAPNsRequest, connection: inout SandboxConnectionState) -> SandboxAPNsOutcome {
        let now = clock.now
        let nowMilliseconds = clock.epochMilliseconds
        let token = Self.token(inPath: request.path)

        let admission = admit(
            request,
            token: token,
            connection: &connection,
            now: now,
            nowMilliseconds: nowMilliseconds
        )
        // IDs need to be unique, not secret: a generator seeded under the lock already taken
        // beats a getrandom system call (or another lock) per ID.
        var random = SplitMix64(seed: admission.seed)
        let apnsID =
            request.apnsID.flatMap { APNsUUID.isCanonical($0[...]) ? $0 : nil } ?? APNsUUID.random(using: &random)
        // The inspection entry keeps the request as read; records are built only when asked for.
        var entry = APNsInspectionEntry(request: request, receivedAt: nowMilliseconds, apnsID: apnsID)
        entry.environment = connection.environment
        entry.keyID = admission.keyID
        entry.teamID = admission.teamID
        var evaluation =
            admission.decision
            ?? evaluate(
                request,
                token: token,
                team: admission.teamID,
                apnsID: apnsID,
                connection: connection,
                now: now,
                at: nowMilliseconds
            )

        let handoff = deliver(&evaluation, at: nowMilliseconds, entry: &entry)
        let outcome = respond(
            to: evaluation,
            apnsID: apnsID,
            random: &random,
            latency: admission.latency,
            at: nowMilliseconds,
            entry: &entry
        )
        log.append(entry)
        handoff.complete()
        return outcome
    }

    /// Hands an accepted notification to the registry and notes where it went; a token the
    /// registry no longer takes turns the evaluation into its refusal.
    private func deliver(
        _ evaluation: inout Evaluation,
        at nowMilliseconds: Int64,
        entry: inout APNsInspectionEntry
    ) -> DeviceHandoff {
        guard case .accepted(let notification) = evaluation else { return .none }
        let (delivery, handoff) = devices.deliver(
            notification,
            keepUntil: keepUntil(notification, now: nowMilliseconds)
        )
        switch delivery {
        case .delivered: entry.delivery = .delivered
        case .stored: entry.delivery = .stored
        case .notKept: entry.delivery = notification.expiration == 0 ? .discardedTryOnce : .discardedExpired
        case .refused(let state): evaluation = Self.refusal(state) ?? evaluation
        }
        return handoff
    }

    /// The answer an evaluation gets, noted in the inspection entry.
    private func respond(
        to evaluation: Evaluation,
        apnsID: String,
        random: inout SplitMix64,
        latency: Duration,
        at nowMilliseconds: Int64,
        entry: inout APNsInspectionEntry
    ) -> SandboxAPNsOutcome {
        switch evaluation {
        case .accepted:
            entry.status = 200
            let response = SandboxAPNsResponse(status: 200, apnsID: apnsID, uniqueID: APNsUUID.random(using: &random))
            return .respond(response, delay: latency)
        case .rejected(let reason, let timestamp):
            entry.status = reason.status
            entry.reason = reason
            entry.outcome = "rejected"
            return .respond(
                SandboxAPNsResponse(status: reason.status, apnsID: apnsID, reason: reason, timestamp: timestamp),
                delay: latency
            )
        case .injected(let fault):
            entry.outcome = fault.action == .respond ? "injected" : fault.action.rawValue
            entry.reason = fault.reason
            switch fault.action {
            case .respond:
                let status = fault.status ?? fault.reason?.status ?? 500
                entry.status = status
                return .respond(
                    SandboxAPNsResponse(
                        status: status,
                        apnsID: apnsID,
                        reason: fault.reason,
                        // Apple sends a timestamp with every 410.
                        timestamp: status == 410 ? nowMilliseconds : nil
                    ),
                    delay: latency
                )
            case .drop: return .drop
            case .goaway: return .goaway(fault.reason)
            case .stall: return .stall
            }
        }
    }

    /// Until when an offline device's notification is kept: nil for "try once" (expiration 0)
    /// and for an expiration already past.
    private func keepUntil(_ notification: SandboxNotification, now: Int64) -> Int64? {
        guard notification.expiration != 0 else { return nil }
        let expiresAt =
            notification.expiration.map { $0 * 1000 } ?? now + Int64(rules.defaultStorage / .milliseconds(1))
        return expiresAt > now ? expiresAt : nil
    }

    /// The answer for a token that stopped being active.
    private static func refusal(_ state: TokenState) -> Evaluation? {
        switch state {
        case .active: nil
        case .unregistered(let at): .rejected(.unregistered, timestamp: at)
        case .expired(let at): .rejected(.expiredToken, timestamp: at)
        }
    }

    enum Evaluation {
        case accepted(SandboxNotification)
        case rejected(APNsReason, timestamp: Int64? = nil)
        case injected(SandboxFault)
    }

    /// What the emulator's own state says about a request: its credentials and the faults.
    struct Admission {
        /// Seeds the request's IDs.
        var seed: UInt64
        var latency: Duration
        /// The provider token's key id and team, when it was parsed, or the certificate's team.
        var keyID: String?
        var teamID: String?
        /// Set when the request is settled here: refused, or hit by a fault.
        var decision: Evaluation?
    }

    /// The device token in `/3/device/<token>`, as sent.
    static func token(inPath path: String?) -> String? {
        guard let path, path.utf8.starts(with: "/3/device/".utf8) else { return nil }
        return String(Substring(path.utf8.dropFirst(10)))
    }

    // The order follows what Apple checks first: the request line, the connection's credentials,
    // (then faults, which hit authenticated requests), the headers, the payload, and last the
    // device token against the topic. Everything up to the faults is decided under the
    // emulator's lock, taken once; the rest asks only the registry.
    private func admit(
        _ request: SandboxAPNsRequest,
        token: String?,
        connection: inout SandboxConnectionState,
        now: ContinuousClock.Instant,
        nowMilliseconds: Int64
    ) -> Admission {
        let requestLine = Self.requestLineReason(request, token: token)
        // Asked before the lock: locks are never nested.
        var certificateTeam: String?
        if case .trusted(let bundleID, _) = connection.clientCertificate {
            certificateTeam = devices.team(ofApp: bundleID)
        }
        let rules = rules
        return state.withLock { state in
            var admission = Admission(seed: state.random.next(), latency: state.plan.latency)
            func refuse(_ reason: APNsReason) -> Admission {
                admission.decision = .rejected(reason)
                return admission
            }
            if state.plan.shuttingDown { return refuse(.shutdown) }
            if let requestLine { return refuse(requestLine) }

            // Credentials: a client certificate (a certificate-based connection) or a provider token.
            if let certificate = connection.clientCertificate {
                guard case .trusted(_, let environment) = certificate else { return refuse(.badCertificate) }
                guard environment == .both || (environment == .sandbox) == (connection.environment == .development)
                else { return refuse(.badCertificateEnvironment) }
                guard let certificateTeam else { return refuse(.badCertificate) }
                admission.teamID = certificateTeam
            } else {
                guard let authorization = request.authorization else { return refuse(.missingProviderToken) }
                guard let jwt = Bearer.token(in: authorization).map(String.init) else {
                    return refuse(.invalidProviderToken)
                }
                switch state.verify(providerToken: jwt, rules: rules, now: now, nowSeconds: nowMilliseconds / 1000) {
                case .invalid(let reason, let keyID, let team):
                    admission.keyID = keyID
                    admission.teamID = team
                    return refuse(reason)
                case .valid(let keyID, let team, let issuedAt):
                    admission.keyID = keyID
                    admission.teamID = team
                    // A key restricted to one environment is refused by the other's host.
                    switch (state.keys[keyID]?.environment, connection.environment) {
                    case (.production?, .development), (.sandbox?, .production):
                        return refuse(.badEnvironmentKeyInToken)
                    default: break
                    }
                    if nowMilliseconds / 1000 - issuedAt > rules.providerTokenMaxAgeSeconds {
                        return refuse(.expiredProviderToken)
                    }
                    if let connectionKey = connection.keyID, connectionKey != keyID {
                        return refuse(.unrelatedKeyIdInToken)
                    }
                    connection.keyID = keyID
                }
            }
            connection.authenticated = true

            // Injected faults hit authenticated requests, as Apple's own failures do; the
            // connection's stream limit has been raised by then, so a stalled stream does not
            // block the next request.
            if let token,
                let fault = state.plan.take(where: { $0.matches(token: token.lowercased(), topic: request.topic) })
            {
                admission.decision = .injected(fault)
            }
            return admission
        }
    }

    /// The request line's reason, if it has one: the method, the path, repeated headers.
    private static func requestLineReason(_ request: SandboxAPNsRequest, token: String?) -> APNsReason? {
        guard request.method == "POST" else { return .methodNotAllowed }
        guard let token else { return .badPath }
        guard !token.isEmpty else { return .missingDeviceToken }
        guard !token.utf8.contains(UInt8(ascii: "/")) else { return .badPath }
        if request.duplicateHeaders { return .duplicateHeaders }
        return nil
    }

    /// The rules after admission: headers, topic and team, payload, and the device token.
    private func evaluate(
        _ request: SandboxAPNsRequest,
        token: String?,
        team: String?,
        apnsID: String,
        connection: SandboxConnectionState,
        now: ContinuousClock.Instant,
        at nowMilliseconds: Int64
    ) -> Evaluation {
        // Admission refused every request without a token, and set the team of every other.
        guard let token else { return .rejected(.badPath) }

        let topic: String
        let pushType: APNsPushType
        let priority: APNsPriority
        let expiration: Int64?
        do throws(Rejection) {
            let bundleID: String
            (topic, pushType, bundleID) = try Self.topic(of: request)
            try authorize(bundleID, team: team, connection: connection)
            (priority, expiration) = try Self.options(of: request, pushType: pushType)
            try Self.checkPayload(request, pushType: pushType)
        } catch {
            return .rejected(error.reason)
        }

        // The device token.
        guard APNsDeviceToken.isWellFormed(token) else { return .rejected(.badDeviceToken) }
        let normalized = token.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } ? token.lowercased() : token
        guard let tokenRecord = devices.apnsToken(normalized) else { return .rejected(.badDeviceToken) }
        // A token of the other environment is unknown here, as on Apple's two hosts.
        guard tokenRecord.environment == connection.environment else { return .rejected(.badDeviceToken) }
        guard tokenRecord.topic == topic else { return .rejected(.deviceTokenNotForTopic) }
        if let refusal = Self.refusal(tokenRecord.state) { return refusal }
        if let limit = rules.perTokenRateLimit, !admitToRateWindow(normalized, limit: limit, now: now) {
            return .rejected(.tooManyRequests)
        }
        return .accepted(
            SandboxNotification(
                apnsID: apnsID,
                token: normalized,
                topic: topic,
                pushType: pushType,
                priority: priority.rawValue,
                expiration: expiration,
                collapseID: request.collapseID,
                payload: String(decoding: request.body, as: UTF8.self),
                acceptedAt: nowMilliseconds
            )
        )
    }

    /// A rule of APNs' that a request breaks.
    private struct Rejection: Error {
        var reason: APNsReason

        init(_ reason: APNsReason) {
            self.reason = reason
        }
    }

    /// The topic, the push type (given, or read from the topic) and the app the topic names.
    private static func topic(of request: SandboxAPNsRequest) throws(Rejection) -> (String, APNsPushType, String) {
        guard let topic = request.topic, !topic.isEmpty else { throw Rejection(.missingTopic) }
        let pushType: APNsPushType
        if let value = request.pushType {
            guard let parsed = APNsPushType(rawValue: value) else { throw Rejection(.invalidPushType) }
            pushType = parsed
        } else {
            pushType = topic.hasSuffix(".voip") ? .voip : .alert
        }
        guard let suffix = pushType.topicSuffix else { return (topic, pushType, topic) }
        guard topic.hasSuffix(suffix) else { throw Rejection(.topicDisallowed) }
        return (topic, pushType, String(topic.dropLast(suffix.count)))
    }

    /// Whether the credentials may push to the app: a token of its team, or its own certificate.
    private func authorize(_ bundleID: String, team: String?, connection: SandboxConnectionState) throws(Rejection) {
        guard let appTeam = devices.team(ofApp: bundleID) else { throw Rejection(.badTopic) }
        guard appTeam == team else { throw Rejection(.topicDisallowed) }
        if case .trusted(let certificateBundle, _) = connection.clientCertificate, certificateBundle != bundleID {
            // A certificate is for one app (its topic and its VoIP topic), not for its team's others.
            throw Rejection(.topicDisallowed)
        }
    }

    /// The priority (given, or the push type's) and expiration, once the other headers pass.
    private static func options(
        of request: SandboxAPNsRequest,
        pushType: APNsPushType
    ) throws(Rejection) -> (APNsPriority, Int64?) {
        let priority: APNsPriority
        if let value = request.priority {
            guard let number = Int(value), let parsed = APNsPriority(rawValue: number) else {
                throw Rejection(.badPriority)
            }
            priority = parsed
        } else {
            priority = pushType == .background ? .conserve : .immediate
        }
        guard pushType.allows(priority) else { throw Rejection(.badPriority) }

        var expiration: Int64?
        if let value = request.expiration {
            guard let seconds = Int64(value), seconds >= 0 else { throw Rejection(.badExpirationDate) }
            expiration = seconds
        }
        if let collapseID = request.collapseID, collapseID.utf8.count > 64 {
            throw Rejection(.badCollapseId)
        }
        if let id = request.apnsID, !APNsUUID.isCanonical(id[...]) { throw Rejection(.badMessageId) }
        return (priority, expiration)
    }

    /// The payload: present, within the push type's limit, and a JSON dictionary.
    private static func checkPayload(_ request: SandboxAPNsRequest, pushType: APNsPushType) throws(Rejection) {
        if request.body.isEmpty { throw Rejection(.payloadEmpty) }
        if request.bodyTruncated || request.body.count > pushType.payloadLimit {
            throw Rejection(.payloadTooLarge)
        }
        guard (try? JSONCheck.check(request.body, limits: .apnsPayload)) != nil else {
            // Apple documents no reason for a body that is not a JSON dictionary; it is
            // treated as carrying no payload.
            throw Rejection(.payloadEmpty)
        }
    }

    /// Counts one push to `token` in its one-second window; false once the window is over `limit`.
    private func admitToRateWindow(_ token: String, limit: Int, now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            var window = state.rateWindows[token] ?? RateWindow(start: now, count: 0)
            if now - window.start >= .seconds(1) { window = RateWindow(start: now, count: 0) }
            window.count += 1
            state.rateWindows[token] = window
            return window.count <= limit
        }
    }
}
