import Foundation
import HeraldAPNsCore
import HeraldClientSupport
public import HeraldDomain
public import Logging
import Metrics
public import NIOCore
public import NIOPosix
import NIOSSL
public import ServiceLifecycle
import Synchronization

/// The provider's APNs client: validates, sends over a pool of HTTP/2 connections with one shared
/// provider token, follows Apple's answer rules, and reports dead tokens.
///
/// Run it under a `ServiceGroup` (it connects on `run()` and drains on graceful shutdown), then
/// call `send(_:)` from any task.
public final class APNsClient: Service, Sendable {
    /// How long a push refused with TooManyProviderTokenUpdates waits at least before it is
    /// tried again: the token APNs holds for the key becomes replaceable within 20 minutes, and
    /// retrying at once only earns the same answer.
    public static let tokenUpdateRetry: Duration = .seconds(60)

    private let configuration: APNsClientConfiguration
    private let tokens: ProviderTokenManager
    private let pool: APNsConnectionPool
    private let logger: Logger
    private let clock: any HeraldClock
    private let feedback: @Sendable (APNsTokenFeedback) async -> Void
    private let metrics: PushClientMetrics
    private let warnings = RateLimitedAlerts(interval: .seconds(60))

    /// - Parameters:
    ///   - clock: What a push's expiration is checked against.
    ///   - feedback: Called once per push whose token APNs declared dead, before `send` returns.
    public init(
        configuration: APNsClientConfiguration,
        tokens: ProviderTokenManager,
        logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any HeraldClock = WallClock(),
        feedback: @escaping @Sendable (APNsTokenFeedback) async -> Void = { _ in }
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let ca = configuration.caCertificatePath {
            tls.trustRoots = .file(ca)
        }
        let sslContext = try NIOSSLContext(configuration: tls)
        self.configuration = configuration
        self.tokens = tokens
        self.logger = logger
        self.feedback = feedback
        self.clock = clock
        pool = APNsConnectionPool(configuration: configuration, sslContext: sslContext, group: group, logger: logger)
        metrics = PushClientMetrics(network: "apns")
    }

    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.pool.run() }
            try? await gracefulShutdown()
            pool.shutdown()
            group.cancelAll()
        }
    }

    /// Pushes in flight, and waiting for a stream.
    public var load: (inFlight: Int, queued: Int) { (pool.inFlight, pool.queued) }

    /// Sends one push and follows APNs' answer: retries what may be retried (same apns-id,
    /// exponential backoff with jitter, never past the push's expiration), refreshes the provider
    /// token once on ExpiredProviderToken, and reports dead tokens to the feedback handler.
    public func send(_ notification: APNsNotification) async -> APNsResult {
        do {
            try notification.validate()
        } catch {
            metrics.failed(reason: "invalid")
            return .failed(reason: nil, status: 400)
        }
        var attempt = 0
        var refreshed = false
        var lastProblem = ""
        // Whether the last attempt was refused with TooManyProviderTokenUpdates.
        var tokenUpdatesRefused = false
        // "Now or never" (expiration 0): one attempt, since APNs itself will not keep it either;
        // a retry would deliver it late. A provider token refresh still does not count.
        let attempts = notification.expiration == 0 ? 1 : configuration.maximumAttempts
        while attempt < attempts {
            attempt += 1
            if let expired = await waitForAttempt(attempt, of: notification) { return expired }
            switch await self.attempt(notification, refreshed: refreshed) {
            case .done(let result):
                return result
            case .refreshed:
                refreshed = true
                attempt -= 1  // the refresh is not a failed delivery attempt
            case .again:
                continue
            case .retry(let problem, let refused):
                lastProblem = problem
                tokenUpdatesRefused = refused
            }
        }
        metrics.failed(reason: "retry-later")
        // Refused for the token to the last: retrying within minutes only earns the same answer.
        return .retryLater(reason: lastProblem, after: tokenUpdatesRefused ? Self.tokenUpdateRetry : nil)
    }

    /// What one attempt of `send(_:)` came to.
    private enum AttemptOutcome {
        /// The push is settled (or cannot be sent now): its result.
        case done(APNsResult)
        /// The provider token was refreshed: try again, the refresh not counted as an attempt.
        case refreshed
        /// Try again, nothing new learnt.
        case again
        /// Try again; `problem` is why this attempt failed, `tokenUpdatesRefused` whether APNs
        /// refused the provider token with TooManyProviderTokenUpdates.
        case retry(problem: String, tokenUpdatesRefused: Bool)
    }

    /// Waits out the backoff before a retry; the push's result instead when it would expire
    /// first, or has expired meanwhile.
    private func waitForAttempt(_ attempt: Int, of notification: APNsNotification) async -> APNsResult? {
        if attempt > 1 {
            metrics.retries.increment()
            let delay = backoff(attempt: attempt - 1)
            if notification.isExpired(after: delay, now: clock.now()) {
                metrics.failed(reason: "expired")
                return .expired
            }
            try? await Task.sleep(for: delay)
        }
        // A push is never sent after its expiration: a call that could not ring in time must
        // not ring later. Checked again after the backoff, which a busy machine can stretch.
        if notification.isExpired(after: .zero, now: clock.now()) {
            metrics.failed(reason: "expired")
            return .expired
        }
        return nil
    }

    /// One attempt: signs (or reuses) the provider token, sends on a leased stream, and reads
    /// APNs' answer.
    private func attempt(_ notification: APNsNotification, refreshed: Bool) async -> AttemptOutcome {
        let token: ProviderToken
        do {
            token = try tokens.current()
        } catch {
            logger.error("cannot sign the APNs provider token", metadata: ["error": "\(error)"])
            metrics.failed(reason: "signing")
            return .done(.failed(reason: nil, status: 0))
        }
        let started = ContinuousClock.now
        let response: APNsWireResponse
        do {
            response = try await exchange(notification, token: token)
        } catch {
            return unanswered(notification, error)
        }
        metrics.latency.recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        return await follow(response, for: notification, token: token, refreshed: refreshed)
    }

    /// Sends the push on a stream leased for it and waits for APNs' answer.
    private func exchange(_ notification: APNsNotification, token: ProviderToken) async throws -> APNsWireResponse {
        let lease = try await pool.lease(timeout: configuration.requestTimeout)
        metrics.sent.increment()
        metrics.inFlight.increment()
        defer {
            metrics.inFlight.decrement()
            pool.release(lease)
        }
        return try await lease.connection.send(
            APNsWireRequest(
                path: "/3/device/" + notification.deviceToken,
                authorization: "bearer " + token.text,
                notification: notification
            ),
            timeout: configuration.requestTimeout
        ).get()
    }

    /// An attempt that got no answer from APNs.
    private func unanswered(_ notification: APNsNotification, _ error: any Error) -> AttemptOutcome {
        guard let error = error as? APNsClientError else {
            return .retry(problem: "\(error)", tokenUpdatesRefused: false)
        }
        if error.isUnreachable {
            // Every connection failed: backing this push off on its own would only delay
            // it past APNs' return. Whoever sends it holds it until APNs answers again.
            metrics.failed(reason: "unreachable")
            return .done(.unreachable(reason: error.message))
        }
        guard error.isRetryable else {
            metrics.failed(reason: "shutdown")
            return .done(.retryLater(reason: error.message))
        }
        logger.debug(
            "APNs attempt failed",
            metadata: ["apns-id": "\(notification.apnsID)", "error": "\(error)"]
        )
        return .retry(problem: error.message, tokenUpdatesRefused: false)
    }

    /// Follows APNs' answer to an attempt.
    private func follow(
        _ response: APNsWireResponse,
        for notification: APNsNotification,
        token: ProviderToken,
        refreshed: Bool
    ) async -> AttemptOutcome {
        let answer = ErrorBody(response.body)
        let reason = answer.reason
        if let final = await settle(response, answer, for: notification) { return .done(final) }
        switch APNsClassification(status: response.status, reason: reason) {
        case .delivered, .tokenDead, .permanent:
            return .again  // settled above
        case .refreshTokenAndRetry where !refreshed:
            _ = try? tokens.refresh(expired: token)
            return .refreshed
        case .refreshTokenAndRetry, .configuration:
            if reason == .invalidProviderToken { tokens.rejected(token) }
            if warnings.shouldAlert() {
                logger.error(
                    "APNs refused the provider's credentials or configuration",
                    metadata: ["status": "\(response.status)", "reason": "\(reason?.rawValue ?? "none")"]
                )
            }
            metrics.failed(reason: reason?.rawValue ?? String(response.status))
            return .done(.failed(reason: reason, status: response.status))
        case .retry where reason == .tooManyProviderTokenUpdates:
            return tokenUpdatesRefused(token)
        case .retry:
            return .retry(problem: reason?.rawValue ?? "HTTP \(response.status)", tokenUpdatesRefused: false)
        }
    }

    /// APNs refused the provider token with TooManyProviderTokenUpdates: tried again later.
    private func tokenUpdatesRefused(_ token: ProviderToken) -> AttemptOutcome {
        // A shared token may have moved on meanwhile: the coordinator looks at once.
        tokens.rejected(token)
        if warnings.shouldAlert() {
            logger.error(
                "APNs refuses this provider token: another token of the same key was used less than 20 minutes ago (another process signing with this key, or a token made by hand with `herald keys token --token-cache ''`); pushes wait and are tried again",
                metadata: ["key_id": "\(token.keyID)", "team_id": "\(token.teamID)"]
            )
        }
        return .retry(
            problem: "TooManyProviderTokenUpdates: APNs refused the provider token of key \(token.keyID) "
                + "because another token of that key was used less than 20 minutes ago; tried again later",
            tokenUpdatesRefused: true
        )
    }

    /// Sends many pushes at once: the first attempt of each goes out in one submission per
    /// connection and is awaited together; pushes that need more (a retry, a token refresh) then
    /// take the one-by-one path of `send(_:)`. Results are in the order of `notifications`.
    public func send(batch notifications: [APNsNotification]) async -> [APNsResult] {
        var results = [APNsResult?](repeating: nil, count: notifications.count)
        let token: ProviderToken
        do {
            token = try tokens.current()
        } catch {
            return await withTaskGroup(of: (Int, APNsResult).self) { group in
                for (index, push) in notifications.enumerated() { group.addTask { (index, await self.send(push)) } }
                for await (index, result) in group { results[index] = result }
                return results.map { $0 ?? .retryLater(reason: "not sent") }
            }
        }
        // Lease a stream for every valid push; group the pushes by connection.
        var groups: [ObjectIdentifier: (APNsConnection, [(Int, APNsConnectionPool.Lease)])] = [:]
        var later: [Int] = []
        for (index, push) in notifications.enumerated() {
            guard (try? push.validate()) != nil else {
                metrics.failed(reason: "invalid")
                results[index] = .failed(reason: nil, status: 400)
                continue
            }
            // Only streams free now: waiting here for a stream that this same batch holds would
            // wait for nothing. The rest go the one-by-one way, which waits properly.
            guard let lease = pool.tryLease() else {
                later.append(index)
                continue
            }
            groups[ObjectIdentifier(lease.connection), default: (lease.connection, [])].1.append((index, lease))
        }
        let authorization = "bearer " + token.text
        var retry: [Int] = later
        for (connection, members) in groups.values {
            metrics.sent.increment(by: members.count)
            let requests = members.map { index, _ in
                APNsWireRequest(
                    path: "/3/device/" + notifications[index].deviceToken,
                    authorization: authorization,
                    notification: notifications[index]
                )
            }
            // Every answered request's latency, as the one-by-one path records it.
            let latency = metrics.latency
            let answers =
                (try? await connection.send(batch: requests, timeout: configuration.requestTimeout) {
                    latency.recordNanoseconds($0.nanoseconds)
                }.get()) ?? []
            for (position, (index, lease)) in members.enumerated() {
                pool.release(lease)
                guard position < answers.count, case .success(let response) = answers[position] else {
                    retry.append(index)
                    continue
                }
                let answer = ErrorBody(response.body)
                if let final = await settle(response, answer, for: notifications[index]) {
                    results[index] = final
                } else if notifications[index].expiration == 0,
                    case .retry = APNsClassification(status: response.status, reason: answer.reason)
                {
                    // "Now or never" had its attempt, and APNs answered it.
                    metrics.failed(reason: "retry-later")
                    results[index] = .retryLater(reason: answer.reason?.rawValue ?? "HTTP \(response.status)")
                } else {
                    // The single-push path has the rules for the rest (backoff, one refresh, errors).
                    retry.append(index)
                }
            }
        }
        if !retry.isEmpty {
            await withTaskGroup(of: (Int, APNsResult).self) { group in
                for index in retry { group.addTask { (index, await self.send(notifications[index])) } }
                for await (index, result) in group { results[index] = result }
            }
        }
        return results.map { $0 ?? .retryLater(reason: "not sent") }
    }

    /// Full jitter: a random wait up to base × 2^(n-1), capped.
    private func backoff(attempt: Int) -> Duration {
        Backoff(base: configuration.retryBaseDelay, maximum: configuration.retryMaximumDelay).delay(attempt: attempt)
    }

    /// The final result for an answer that settles the push (delivered, token dead, refused for
    /// good), telling the feedback handler about dead tokens; nil when the push needs more.
    private func settle(
        _ response: APNsWireResponse,
        _ answer: ErrorBody,
        for notification: APNsNotification
    ) async
        -> APNsResult?
    {
        switch APNsClassification(status: response.status, reason: answer.reason) {
        case .delivered:
            metrics.delivered.increment()
            return .delivered(apnsID: response.apnsID ?? notification.apnsID, uniqueID: response.uniqueID)
        case .tokenDead:
            let dead = answer.reason ?? .unregistered
            metrics.failed(reason: dead.rawValue)
            await feedback(
                APNsTokenFeedback(
                    deviceToken: notification.deviceToken,
                    topic: notification.topic,
                    reason: dead,
                    timestamp: answer.timestamp
                )
            )
            return .tokenDead(reason: dead, timestamp: answer.timestamp)
        case .permanent:
            metrics.failed(reason: answer.reason?.rawValue ?? String(response.status))
            return .failed(reason: answer.reason, status: response.status)
        case .retry, .refreshTokenAndRetry, .configuration:
            return nil
        }
    }
}

/// APNs' JSON error body: `{"reason": "…", "timestamp": …}`, read once.
struct ErrorBody {
    var reason: APNsReason?
    var timestamp: Int64?

    init(_ body: ByteBuffer?) {
        guard let body,
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        else { return }
        reason = (object["reason"] as? String).flatMap(APNsReason.init(rawValue:))
        timestamp = (object["timestamp"] as? NSNumber)?.int64Value
    }
}
