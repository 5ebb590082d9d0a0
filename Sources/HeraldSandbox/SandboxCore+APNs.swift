public import HeraldAPNsCore

/// One APNs request as the listener read it off an HTTP/2 stream.
public struct SandboxAPNsRequest: Sendable {
    public var method: String?
    public var path: String?
    public var authorization: String?
    public var topic: String?
    public var pushType: String?
    public var priority: String?
    public var expiration: String?
    public var collapseID: String?
    public var apnsID: String?
    /// An `apns-*` or `authorization` header appeared more than once.
    public var duplicateHeaders = false
    /// The body, up to one byte past the largest allowed payload.
    public var body: [UInt8] = []
    /// The body was longer than `body` holds.
    public var bodyTruncated = false

    public init() {}

    /// The most body bytes worth keeping: one past the VoIP limit proves "too large".
    public static let bodyCapacity = 5121
}

/// Per-connection facts that APNs rules depend on.
public struct SandboxConnectionState: Sendable {
    /// The key id of the first provider token sent on this connection.
    public var keyID: String?
    /// The TLS client certificate the connection presented, if any: such a connection is
    /// certificate-based and needs no provider token.
    public var clientCertificate: SandboxClientCertificate?
    /// Whether a valid provider token has been seen (the stream limit is raised after it).
    public var authenticated = false

    public init() {}
}

/// A TLS client certificate a connection presented.
public enum SandboxClientCertificate: Sendable, Hashable {
    /// Issued by the sandbox's CA for an app, for an environment.
    case trusted(bundleID: String, environment: SandboxKey.Environment)
    /// Not issued by the sandbox's CA, expired, or unreadable: 403 BadCertificate.
    case untrusted
}

/// What the listener must do with a request.
public enum SandboxAPNsOutcome: Sendable, Equatable {
    /// Answer on the stream, after `delay`.
    case respond(SandboxAPNsResponse, delay: Duration)
    /// Close the connection without answering.
    case drop
    /// Send GOAWAY with this reason in its debug data, then close.
    case goaway(APNsReason?)
    /// Never answer.
    case stall
}

/// An APNs answer.
public struct SandboxAPNsResponse: Sendable, Equatable {
    public var status: Int
    public var apnsID: String
    /// Sent on success, as Apple's development environment does.
    public var uniqueID: String?
    public var reason: APNsReason?
    /// For 410: when the token stopped being valid, in milliseconds since the epoch.
    public var timestamp: Int64?

    /// The JSON body Apple sends with an error: `{"reason":"…"}`, plus `"timestamp"` for 410.
    public var body: [UInt8]? {
        guard let reason else { return nil }
        if let timestamp {
            return Array(#"{"reason":"\#(reason.rawValue)","timestamp":\#(timestamp)}"#.utf8)
        }
        return Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8)
    }
}

extension SandboxCore {
    /// Applies every APNs rule to one request: answers, records it in the inspection log, and
    /// delivers or stores an accepted notification.
    public func handle(
        _ request: SandboxAPNsRequest,
        connection: inout SandboxConnectionState
    ) -> SandboxAPNsOutcome {
        let now = clock.now
        let nowMilliseconds = Self.epochMilliseconds()
        let givenID = request.apnsID.flatMap { APNsUUID.isCanonical($0[...]) ? $0 : nil }
        let token = Self.token(inPath: request.path)

        // The inspection entry keeps the request as read; records are built only when asked for.
        var delivery: (SandboxNotification, Subscriber)?
        var record: SandboxInspectionRecord?
        let (outcome, observers) = state.withLock {
            state -> (SandboxAPNsOutcome, [AsyncStream<SandboxInspectionRecord>.Continuation]) in
            // IDs need to be unique, not secret: a fast generator under the lock already held
            // beats a getrandom system call per ID.
            let apnsID = givenID ?? APNsUUID.random(using: &state.random)
            var entry = InspectionEntry(request: request, receivedAt: nowMilliseconds, apnsID: apnsID)
            let result = evaluate(
                request,
                token: token,
                apnsID: apnsID,
                connection: &connection,
                state: &state,
                now: now,
                nowMilliseconds: nowMilliseconds,
                entry: &entry
            )
            var outcome: SandboxAPNsOutcome
            switch result {
            case .accepted(let notification, let deviceID):
                let response = SandboxAPNsResponse(
                    status: 200,
                    apnsID: apnsID,
                    uniqueID: APNsUUID.random(using: &state.random)
                )
                outcome = .respond(response, delay: state.latency)
                entry.status = 200
                if let subscriber = state.subscribers[deviceID] {
                    delivery = (notification, subscriber)
                    entry.delivery = .delivered
                } else if notification.expiration == 0 {
                    entry.delivery = .discardedTryOnce
                } else {
                    let expiresAt =
                        notification.expiration.map { $0 * 1000 }
                        ?? nowMilliseconds + Int64(configuration.defaultStorage / .milliseconds(1))
                    if expiresAt > nowMilliseconds {
                        state.pending[PendingKey(deviceID: deviceID, topic: notification.topic)] = Pending(
                            notification: notification,
                            expiresAt: expiresAt
                        )
                        entry.delivery = .stored
                    } else {
                        entry.delivery = .discardedExpired
                    }
                }
            case .rejected(let reason, let timestamp):
                entry.status = reason.status
                entry.reason = reason
                entry.outcome = "rejected"
                outcome = .respond(
                    SandboxAPNsResponse(status: reason.status, apnsID: apnsID, reason: reason, timestamp: timestamp),
                    delay: state.latency
                )
            case .injected(let fault):
                entry.outcome = fault.action == .respond ? "injected" : fault.action.rawValue
                entry.reason = fault.reason
                switch fault.action {
                case .respond:
                    let status = fault.status ?? fault.reason?.status ?? 500
                    entry.status = status
                    outcome = .respond(
                        SandboxAPNsResponse(
                            status: status,
                            apnsID: apnsID,
                            reason: fault.reason,
                            // Apple sends a timestamp with every 410.
                            timestamp: status == 410 ? nowMilliseconds : nil
                        ),
                        delay: state.latency
                    )
                case .drop: outcome = .drop
                case .goaway: outcome = .goaway(fault.reason)
                case .stall: outcome = .stall
                }
            }
            state.sequence += 1
            entry.sequence = state.sequence
            state.inspection.append(entry)
            if state.inspectionObservers.isEmpty { return (outcome, []) }
            record = entry.record
            return (outcome, Array(state.inspectionObservers.values))
        }
        if let (notification, subscriber) = delivery {
            subscriber.continuation.yield(.notification(notification))
        }
        if let record {
            for observer in observers { observer.yield(record) }
        }
        return outcome
    }

    private enum Evaluation {
        case accepted(SandboxNotification, deviceID: String)
        case rejected(APNsReason, timestamp: Int64? = nil)
        case injected(SandboxFault)
    }

    static func token(inPath path: String?) -> String? {
        guard let path, path.utf8.starts(with: "/3/device/".utf8) else { return nil }
        return String(Substring(path.utf8.dropFirst(10)))
    }

    // The order follows what Apple checks first: the request line, the connection's credentials,
    // the headers, the payload, and last the device token against the topic.
    private func evaluate(
        _ request: SandboxAPNsRequest,
        token: String?,
        apnsID: String,
        connection: inout SandboxConnectionState,
        state: inout State,
        now: ContinuousClock.Instant,
        nowMilliseconds: Int64,
        entry: inout InspectionEntry
    ) -> Evaluation {
        if state.shuttingDown { return .rejected(.shutdown) }
        guard request.method == "POST" else { return .rejected(.methodNotAllowed) }
        guard let token else { return .rejected(.badPath) }
        guard !token.isEmpty else { return .rejected(.missingDeviceToken) }
        guard !token.utf8.contains(UInt8(ascii: "/")) else { return .rejected(.badPath) }
        if request.duplicateHeaders { return .rejected(.duplicateHeaders) }

        // Credentials: a client certificate (a certificate-based connection) or a provider token.
        let teamID: String
        if let certificate = connection.clientCertificate {
            switch certificate {
            case .untrusted:
                return .rejected(.badCertificate)
            case .trusted(let bundleID, let environment):
                guard environment == .sandbox else { return .rejected(.badCertificateEnvironment) }
                guard let team = state.apps[bundleID] else { return .rejected(.badCertificate) }
                teamID = team
                entry.teamID = team
            }
        } else {
            guard let authorization = request.authorization else { return .rejected(.missingProviderToken) }
            guard authorization.utf8.count > 7,
                authorization.utf8.prefix(7).lazy.map({ $0 | 0x20 }).elementsEqual("bearer ".utf8)
            else {
                return .rejected(.invalidProviderToken)
            }
            let jwt = String(Substring(authorization.utf8.dropFirst(7)))
            switch verify(providerToken: jwt, state: &state, now: now) {
            case .invalid(let reason, let keyID, let team):
                entry.keyID = keyID
                entry.teamID = team
                return .rejected(reason)
            case .valid(let keyID, let team, let issuedAt):
                entry.keyID = keyID
                entry.teamID = team
                let ageSeconds = nowMilliseconds / 1000 - issuedAt
                if ageSeconds > Int64(configuration.providerTokenMaxAge / .seconds(1)) {
                    return .rejected(.expiredProviderToken)
                }
                if let connectionKey = connection.keyID, connectionKey != keyID {
                    return .rejected(.unrelatedKeyIdInToken)
                }
                connection.keyID = keyID
                teamID = team
            }
        }
        connection.authenticated = true

        // Injected faults hit authenticated requests, as Apple's own failures do; the
        // connection's stream limit has been raised by then, so a stalled stream does not
        // block the next request.
        if !state.faults.isEmpty,
            let index = state.faults.firstIndex(where: {
                $0.matches(token: token.lowercased(), topic: request.topic)
            })
        {
            let fault = state.faults[index]
            if fault.count <= 1 {
                state.faults.remove(at: index)
            } else {
                state.faults[index].count -= 1
            }
            return .injected(fault)
        }

        // Headers.
        guard let topic = request.topic, !topic.isEmpty else { return .rejected(.missingTopic) }
        let pushType: APNsPushType
        if let value = request.pushType {
            guard let parsed = APNsPushType(rawValue: value) else { return .rejected(.invalidPushType) }
            pushType = parsed
        } else {
            pushType = topic.hasSuffix(".voip") ? .voip : .alert
        }
        let bundleID: String
        if let suffix = pushType.topicSuffix {
            guard topic.hasSuffix(suffix) else { return .rejected(.topicDisallowed) }
            bundleID = String(topic.dropLast(suffix.count))
        } else {
            bundleID = topic
        }
        guard let appTeam = state.apps[bundleID] else { return .rejected(.badTopic) }
        guard appTeam == teamID else { return .rejected(.topicDisallowed) }
        if case .trusted(let certificateBundle, _) = connection.clientCertificate, certificateBundle != bundleID {
            // A certificate is for one app (its topic and its VoIP topic), not for its team's others.
            return .rejected(.topicDisallowed)
        }

        let priority: APNsPriority
        if let value = request.priority {
            guard let number = Int(value), let parsed = APNsPriority(rawValue: number) else {
                return .rejected(.badPriority)
            }
            priority = parsed
        } else {
            priority = pushType == .background ? .conserve : .immediate
        }
        guard pushType.allows(priority) else { return .rejected(.badPriority) }

        var expiration: Int64?
        if let value = request.expiration {
            guard let seconds = Int64(value), seconds >= 0 else { return .rejected(.badExpirationDate) }
            expiration = seconds
        }
        if let collapseID = request.collapseID, collapseID.utf8.count > 64 {
            return .rejected(.badCollapseId)
        }
        if let id = request.apnsID, !APNsUUID.isCanonical(id[...]) { return .rejected(.badMessageId) }

        // Payload.
        if request.body.isEmpty { return .rejected(.payloadEmpty) }
        if request.bodyTruncated || request.body.count > pushType.payloadLimit {
            return .rejected(.payloadTooLarge)
        }
        guard JSONSyntax.isObject(request.body) else {
            // Apple documents no reason for a body that is not a JSON dictionary; it is
            // treated as carrying no payload.
            return .rejected(.payloadEmpty)
        }

        // The device token.
        guard APNsDeviceToken.isWellFormed(token) else { return .rejected(.badDeviceToken) }
        let normalized = token.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } ? token.lowercased() : token
        guard let tokenRecord = state.tokens[normalized] else { return .rejected(.badDeviceToken) }
        guard tokenRecord.topic == topic else { return .rejected(.deviceTokenNotForTopic) }
        switch tokenRecord.state {
        case .active: break
        case .unregistered(let at): return .rejected(.unregistered, timestamp: at)
        case .expired(let at): return .rejected(.expiredToken, timestamp: at)
        }
        if let limit = configuration.perTokenRateLimit {
            var window = state.rateWindows[normalized] ?? RateWindow(start: now, count: 0)
            if now - window.start >= .seconds(1) { window = RateWindow(start: now, count: 0) }
            window.count += 1
            state.rateWindows[normalized] = window
            if window.count > limit { return .rejected(.tooManyRequests) }
        }
        let notification = SandboxNotification(
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
        return .accepted(notification, deviceID: tokenRecord.deviceID)
    }

    /// Verifies a provider token once per distinct token text and caches the verdict; signature
    /// checks are costly and Apple does not repeat them per request either.
    private func verify(
        providerToken jwt: String,
        state: inout State,
        now: ContinuousClock.Instant
    ) -> ProviderTokenVerdict {
        if let cached = state.providerTokens[jwt] { return cached }
        if state.providerTokens.count >= 10_000 { state.providerTokens.removeAll(keepingCapacity: true) }
        state.signatureVerifications += 1

        guard let parsed = ParsedProviderToken(jwt[...]) else {
            let verdict = ProviderTokenVerdict.invalid(.invalidProviderToken, keyID: nil, teamID: nil)
            state.providerTokens[jwt] = verdict
            return verdict
        }
        let invalid = { (reason: APNsReason) in
            ProviderTokenVerdict.invalid(reason, keyID: parsed.keyID, teamID: parsed.teamID)
        }
        guard let key = state.keys[parsed.keyID] else {
            state.providerTokens[jwt] = invalid(.invalidProviderToken)
            return invalid(.invalidProviderToken)
        }
        let verdict: ProviderTokenVerdict
        let nowSeconds = Self.epochMilliseconds() / 1000
        if key.revoked {
            verdict = invalid(.forbidden)
        } else if key.environment == .production {
            verdict = invalid(.badEnvironmentKeyInToken)
        } else if key.teamID != parsed.teamID || !parsed.isSigned(by: key.publicKey) {
            verdict = invalid(.invalidProviderToken)
        } else if parsed.issuedAt > nowSeconds + 300 {
            // Issued more than five minutes in the future: the provider's clock is wrong. Not
            // cached, since the same token becomes acceptable once the clocks agree.
            return invalid(.invalidProviderToken)
        } else if nowSeconds - parsed.issuedAt > Int64(configuration.providerTokenMaxAge / .seconds(1)) {
            // Checked before the update rule: an expired token must not count as the team's new one.
            verdict = invalid(.expiredProviderToken)
        } else {
            // A new valid token: the team's previous one must be old enough to be replaced.
            let generationKey = parsed.teamID + "/" + parsed.keyID
            if let previous = state.tokenGenerations[generationKey], previous.token != jwt,
                now - previous.since < configuration.providerTokenUpdateInterval
            {
                // Not cached: once the interval has passed the same token is welcome.
                return invalid(.tooManyProviderTokenUpdates)
            }
            if state.tokenGenerations[generationKey]?.token != jwt {
                state.tokenGenerations[generationKey] = TokenGeneration(token: jwt, since: now)
            }
            verdict = .valid(keyID: parsed.keyID, teamID: parsed.teamID, issuedAt: parsed.issuedAt)
        }
        state.providerTokens[jwt] = verdict
        return verdict
    }
}
