import AsyncHTTPClient
import Foundation
import HeraldClientSupport
public import HeraldDomain
public import HeraldFCMCore
import HeraldMacros
public import Logging
import Metrics
public import NIOCore
public import NIOPosix
import NIOSSL
public import ServiceLifecycle
import Synchronization

/// The provider's FCM HTTP v1 sender: OAuth2 with the service account (one shared access token),
/// `messages:send` over HTTP/2, FCM's answer rules, retries that honour `Retry-After` and never
/// outlive the message, and dead-token feedback.
///
/// Built on async-http-client rather than on the frame-level pool the APNs client uses: FCM
/// needs none of APNs' connection-level behaviour (stream limits that change with the provider
/// token, GOAWAY reasons), and one multiplexed HTTP/2 connection carries the load.
///
/// Run it under a `ServiceGroup` (it closes its connections on graceful shutdown), then call
/// `send(_:)` from any task.
public final class FCMClient: Service, Sendable {
    private let configuration: FCMClientConfiguration
    private let http: HTTPClient
    private let tokens: FCMAccessTokens
    private let sendURL: String
    private let logger: Logger
    private let clock: any HeraldClock
    private let feedback: @Sendable (FCMTokenFeedback) async -> Void
    private let metrics = PushClientMetrics(network: "fcm")
    private let alerts = RateLimitedAlerts(interval: .seconds(60))

    /// - Parameters:
    ///   - clock: What expirations and the OAuth assertion's `iat` are read from.
    ///   - feedback: Called once per message whose token FCM declared dead, before `send` returns.
    public init(
        configuration: FCMClientConfiguration,
        logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any HeraldClock = WallClock(),
        feedback: @escaping @Sendable (FCMTokenFeedback) async -> Void = { _ in }
    ) throws {
        try configuration.account.check()
        var tls = TLSConfiguration.makeClientConfiguration()
        if let ca = configuration.caCertificatePath { tls.trustRoots = .file(ca) }
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        httpConfiguration.httpVersion = .automatic
        httpConfiguration.timeout = .init(connect: .seconds(10))
        // A connection that cannot be made fails the request at once (`unreachable`) instead of
        // holding it through the client's own reconnect backoff: the relay then holds FCM's
        // pushes and probes every 250 ms, so FCM's return is noticed at once.
        httpConfiguration.connectionPool.retryConnectionEstablishment = false
        http = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: httpConfiguration)
        self.configuration = configuration
        self.logger = logger
        self.feedback = feedback
        self.clock = clock
        let base =
            configuration.baseURL.hasSuffix("/") ? String(configuration.baseURL.dropLast()) : configuration.baseURL
        sendURL = base + "/v1/projects/" + configuration.account.projectID + "/messages:send"
        tokens = FCMAccessTokens(
            signer: try FCMAssertionSigner(account: configuration.account),
            http: http,
            margin: configuration.tokenRefreshMargin,
            timeout: configuration.requestTimeout,
            clock: clock,
            logger: logger
        )
    }

    /// The Firebase project messages go to.
    public var projectID: String { configuration.account.projectID }

    public func run() async throws {
        try? await gracefulShutdown()
        try await http.shutdown()
    }

    /// Sends every message, at most `maximumConcurrentSends` at once; one result per message, in order.
    public func send(batch pushes: [FCMPush]) async -> [FCMResult] {
        var results = [FCMResult?](repeating: nil, count: pushes.count)
        await withTaskGroup(of: (Int, FCMResult).self) { group in
            var next = 0
            let width = max(1, configuration.maximumConcurrentSends)
            while next < min(width, pushes.count) {
                let index = next
                group.addTask { (index, await self.send(pushes[index])) }
                next += 1
            }
            for await (index, result) in group {
                results[index] = result
                if next < pushes.count {
                    let index = next
                    group.addTask { (index, await self.send(pushes[index])) }
                    next += 1
                }
            }
        }
        return results.map { $0 ?? .retryLater(reason: "not sent", retryAfter: nil) }
    }

    /// Sends one message and follows FCM's answer: retries QUOTA_EXCEEDED, UNAVAILABLE, INTERNAL
    /// and connection trouble (waiting at least `Retry-After`), refreshes the access token once
    /// on UNAUTHENTICATED, and reports dead tokens to the feedback handler.
    public func send(_ push: FCMPush) async -> FCMResult {
        do {
            try push.message(now: push.expiration).validate()
        } catch {
            metrics.failed(reason: "invalid")
            return .failed(code: .invalidArgument, status: 400, message: error.description)
        }
        var attempt = 0
        var refreshed = false
        var lastProblem = ""
        var wait: Duration = .zero
        // "Now or never": one attempt (FCM keeps a ttl of 0 for no one); a token refresh still
        // does not count.
        let attempts = push.isNowOrNever ? 1 : configuration.maximumAttempts
        while attempt < attempts {
            attempt += 1
            if attempt > 1 {
                metrics.retries.increment()
                wait = max(wait, backoff(attempt: attempt - 1))
                if clock.seconds() + Self.wholeSeconds(wait) >= push.expiration {
                    metrics.failed(reason: "expired")
                    return .expired
                }
                try? await Task.sleep(for: wait)
                wait = .zero
            }
            // Never sent after its expiration: a call that could not ring in time must not ring later.
            let now = clock.seconds()
            guard now < push.expiration || push.isNowOrNever else {
                metrics.failed(reason: "expired")
                return .expired
            }
            switch await self.attempt(push, now: now, refreshed: refreshed) {
            case .done(let result):
                return result
            case .refreshed:
                refreshed = true
                attempt -= 1  // a refresh is not a failed delivery attempt
            case .retry(let problem, let retryAfter):
                lastProblem = problem
                if let retryAfter { wait = retryAfter }
            }
        }
        metrics.failed(reason: "retry-later")
        return .retryLater(reason: lastProblem, retryAfter: nil)
    }

    /// What one attempt of `send(_:)` came to.
    private enum AttemptOutcome {
        /// The message is settled (or cannot be sent now): its result.
        case done(FCMResult)
        /// The access token was dropped for a new one: try again, the refresh not counted as an
        /// attempt.
        case refreshed
        /// Try again; `problem` is why this attempt failed, `retryAfter` how long FCM asked to
        /// wait at least.
        case retry(problem: String, retryAfter: Duration?)
    }

    /// One attempt: gets an access token, posts the message as it is `now`, and reads FCM's answer.
    private func attempt(_ push: FCMPush, now: Int64, refreshed: Bool) async -> AttemptOutcome {
        let accessToken: String
        do {
            accessToken = try await tokens.token()
        } catch let error as FCMClientError where error.isUnreachable {
            metrics.failed(reason: "unreachable")
            return .done(.unreachable(reason: error.message))
        } catch let error as FCMClientError where !error.isRetryable {
            logger.error("FCM refused the service account", metadata: ["error": "\(error)"])
            metrics.failed(reason: "credentials")
            return .done(.failed(code: nil, status: 401, message: error.message))
        } catch {
            return .retry(problem: "\(error)", retryAfter: nil)
        }
        let answer: Answer
        do {
            answer = try await post(push.message(now: now), accessToken: accessToken)
        } catch let error as FCMClientError where error.isUnreachable {
            // Backing this message off on its own would only delay it past FCM's return:
            // whoever sends it holds it until FCM answers again.
            metrics.failed(reason: "unreachable")
            return .done(.unreachable(reason: error.message))
        } catch {
            logger.debug("FCM attempt failed", metadata: ["error": "\(error)"])
            return .retry(problem: "\(error)", retryAfter: nil)
        }
        return await follow(answer, for: push, accessToken: accessToken, refreshed: refreshed)
    }

    /// Follows FCM's answer to an attempt.
    private func follow(
        _ answer: Answer,
        for push: FCMPush,
        accessToken: String,
        refreshed: Bool
    ) async
        -> AttemptOutcome
    {
        switch FCMClassification(status: answer.status, code: answer.error?.fcmErrorCode) {
        case .delivered:
            metrics.delivered.increment()
            return .done(.delivered(name: answer.name ?? ""))
        case .tokenDead:
            metrics.failed(reason: "UNREGISTERED")
            await feedback(FCMTokenFeedback(token: push.token, code: .unregistered))
            return .done(.tokenDead(code: .unregistered))
        case .refreshTokenAndRetry where !refreshed:
            await tokens.invalidate(accessToken)
            return .refreshed
        case .retry:
            // Worth waiting for here only within the backoff's range; otherwise the relay
            // schedules the message no sooner than FCM asked.
            if let after = answer.retryAfter, after > configuration.retryMaximumDelay {
                metrics.failed(reason: "retry-later")
                return .done(.retryLater(reason: answer.summary, retryAfter: after))
            }
            return .retry(problem: answer.summary, retryAfter: answer.retryAfter)
        case .refreshTokenAndRetry, .configuration, .permanent:
            // Refused for good: the operator hears of it (once a minute per kind), since it
            // is the configuration or what the relay sends that must change.
            let kind = answer.error?.fcmErrorCode?.rawValue ?? answer.error?.error.status ?? "\(answer.status)"
            if alerts.shouldAlert(kind) {
                logger.error(
                    "FCM refused a message for good",
                    metadata: ["status": "\(answer.status)", "error": "\(answer.summary)"]
                )
            }
            metrics.failed(reason: kind)
            return .done(.failed(code: answer.error?.fcmErrorCode, status: answer.status, message: answer.detail))
        }
    }

    // MARK: - The wire

    private struct Answer {
        var status: Int
        var name: String?
        var error: FCMErrorBody?
        var retryAfter: Duration?

        var summary: String {
            guard let error else { return "HTTP \(status)" }
            let code = error.fcmErrorCode?.rawValue ?? error.error.status
            return "\(code) (\(status)): \(error.error.message)"
        }

        /// Google's message, after the `google.rpc` status when there is no FCM code to name it.
        var detail: String {
            guard let error else { return "HTTP \(status)" }
            return error.fcmErrorCode == nil ? "\(error.error.status): \(error.error.message)" : error.error.message
        }
    }

    private func post(_ message: FCMMessage, accessToken: String) async throws -> Answer {
        var request = HTTPClientRequest(url: sendURL)
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer " + accessToken)
        request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(FCMSendRequest(message: message))))
        metrics.sent.increment()
        metrics.inFlight.increment()
        defer { metrics.inFlight.decrement() }
        let started = ContinuousClock.now
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await http.execute(request, timeout: TimeAmount(configuration.requestTimeout))
            body = try await response.body.collect(upTo: 1024 * 1024)
        } catch {
            throw FCMClientError.classify(error, otherwise: FCMClientError.transport)
        }
        metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
        let data = Data(body.readableBytesView)
        var answer = Answer(status: Int(response.status.code))
        if response.status == .ok {
            answer.name = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["name"] as? String
        } else {
            answer.error = try? JSONDecoder().decode(FCMErrorBody.self, from: data)
            answer.retryAfter = response.headers.first(name: "retry-after").flatMap(Self.retryAfter)
        }
        return answer
    }

    /// `Retry-After` as seconds or as an HTTP date.
    static func retryAfter(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .seconds(max(0, Int64(date.timeIntervalSinceNow.rounded(.up))))
    }

    /// Full jitter: a random wait up to base × 2^(n-1), capped.
    private func backoff(attempt: Int) -> Duration {
        Backoff(base: configuration.retryBaseDelay, maximum: configuration.retryMaximumDelay).delay(attempt: attempt)
    }

    static func wholeSeconds(_ duration: Duration) -> Int64 { duration.components.seconds }
}

/// Told to the feedback handler when FCM says a registration token is dead.
@MemberwiseInit
public struct FCMTokenFeedback: Sendable, Hashable {
    public var token: String
    public var code: FCMErrorCode
}

/// How an FCM answer is handled.
typealias FCMClassification = AnswerClassification

extension AnswerClassification {
    /// Sorts FCM's answer.
    init(status: Int, code: FCMErrorCode?) {
        switch (status, code) {
        case (200, _): self = .delivered
        case (_, .unregistered?): self = .tokenDead
        case (_, .quotaExceeded?), (_, .unavailable?), (_, .internal?): self = .retry
        case (_, .senderIDMismatch?), (_, .thirdPartyAuthError?): self = .configuration
        case (_, .invalidArgument?), (_, .unspecifiedError?): self = .permanent
        // No FCM code: Google's own answers.
        case (401, nil): self = .refreshTokenAndRetry
        case (403, nil): self = .configuration
        case (404, nil): self = .configuration  // the project does not exist
        case (429, nil), (500...599, nil): self = .retry
        default: self = .permanent
        }
    }
}
