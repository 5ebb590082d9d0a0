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
    private let sender: PushHTTPSender
    private let tokens: AccessTokenCache
    private let sendURL: String
    private let logger: Logger
    private let clock: any HeraldClock
    private let feedback: @Sendable (FCMTokenFeedback) async -> Void

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
        let sender = PushHTTPSender(network: "fcm", tuning: configuration.tuning, group: group)
        self.sender = sender
        self.configuration = configuration
        self.logger = logger
        self.feedback = feedback
        self.clock = clock
        let base =
            configuration.baseURL.hasSuffix("/") ? String(configuration.baseURL.dropLast()) : configuration.baseURL
        sendURL = base + "/v1/projects/" + configuration.account.projectID + "/messages:send"
        let request = FCMAccessTokens(
            signer: try FCMAssertionSigner(account: configuration.account),
            http: sender.http,
            timeout: configuration.requestTimeout,
            clock: clock,
            logger: logger
        )
        tokens = sender.accessTokens(network: "fcm", fetch: request.grant)
    }

    /// The Firebase project messages go to.
    public var projectID: String { configuration.account.projectID }

    public func run() async throws {
        try await sender.runUntilShutdown()
    }

    /// Sends every message, at most `maximumConcurrentSends` at once; one result per message, in order.
    public func send(batch pushes: [FCMPush]) async -> [FCMResult] {
        await sender.batch(pushes, notSent: .retryLater(reason: "not sent", retryAfter: nil)) { await self.send($0) }
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
        // "Now or never": one attempt (FCM keeps a ttl of 0 for no one); a token refresh still
        // does not count.
        return await retries.send(
            expiration: push.expiration,
            nowOrNever: push.isNowOrNever,
            clock: clock,
            metrics: metrics,
            expired: .expired,
            retryLater: { .retryLater(reason: $0, retryAfter: nil) },
            attempt: { now, refreshed in await self.attempt(push, now: now, refreshed: refreshed) }
        )
    }

    private var retries: PushRetries { sender.retries }
    private var metrics: PushClientMetrics { sender.metrics }

    private typealias AttemptOutcome = SendAttempt<FCMResult>

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
            return retries.retry(problem: answer.summary, retryAfter: answer.retryAfter, metrics: metrics) {
                .retryLater(reason: $0, retryAfter: $1)
            }
        case .refreshTokenAndRetry, .configuration, .permanent:
            // Refused for good: the operator hears of it (once a minute per kind), since it
            // is the configuration or what the relay sends that must change.
            let kind = answer.error?.fcmErrorCode?.rawValue ?? answer.error?.error.status ?? "\(answer.status)"
            if sender.alerts.shouldAlert(kind) {
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
        let request = HTTPClientRequest.bearerJSON(
            url: sendURL,
            accessToken: accessToken,
            body: try JSONEncoder().encode(FCMSendRequest(message: message))
        )
        let response: HTTPAnswer
        do {
            response = try await sender.post(request, limit: 1024 * 1024)
        } catch {
            throw FCMClientError.classify(error, otherwise: FCMClientError.transport)
        }
        var answer = Answer(status: response.status)
        if response.status == 200 {
            answer.name = (try? JSONSerialization.jsonObject(with: response.body) as? [String: Any])?["name"] as? String
        } else {
            answer.error = try? JSONDecoder().decode(FCMErrorBody.self, from: response.body)
            answer.retryAfter = response.retryAfter
        }
        return answer
    }

    /// `Retry-After` as seconds or as an HTTP date.
    static func retryAfter(_ value: String) -> Duration? { HTTPAnswer.retryAfter(value) }
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
