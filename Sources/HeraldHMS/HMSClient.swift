import AsyncHTTPClient
import Foundation
import HeraldClientSupport
public import HeraldDomain
import HeraldHMSCore
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle

/// The provider's Huawei Push Kit sender: an app-level OAuth 2.0 access token (client
/// credentials, shared by every send), `messages:send` one token per request, Push Kit's result
/// codes, retries that honour `Retry-After` and never outlive the message, and dead-token
/// feedback. Modelled on `FCMClient`; the token cache, the retry loop and the fan-out are the
/// ones it uses (HeraldClientSupport).
///
/// Run it under a `ServiceGroup` (it closes its connections on graceful shutdown), then call
/// `send(batch:)` from any task.
public final class HMSClient: Service, Sendable {
    private let sender: PushHTTPSender
    private let tokens: AccessTokenCache
    /// `<baseURL>/v1/<appId>/messages:send`.
    private let sendURL: String
    private let category: String?
    private let feedback: @Sendable (HMSTokenFeedback) async -> Void
    private let logger: Logger
    private let clock: any HeraldClock

    /// - Parameters:
    ///   - clock: What expirations are read from.
    ///   - feedback: Called once per message whose token Push Kit declared dead, before `send`
    ///     returns.
    /// - Throws: `HMSCredentialsError` for credentials that cannot work.
    public init(
        configuration: HMSClientConfiguration,
        logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any HeraldClock = WallClock(),
        feedback: @escaping HMSTokenFeedback.Handler = { _ in }
    ) throws {
        try configuration.credentials.check()
        sender = PushHTTPSender(network: "hms", tuning: configuration.tuning, group: group)
        var base = configuration.baseURL
        while base.hasSuffix("/") { base.removeLast() }
        sendURL = "\(base)/v1/\(configuration.credentials.appID)/messages:send"
        category = configuration.highUrgencyCategory
        (self.logger, self.clock, self.feedback) = (logger, clock, feedback)
        let grants = HMSAccessTokens(
            credentials: configuration.credentials,
            http: sender.http,
            timeout: configuration.requestTimeout,
            logger: logger
        )
        tokens = sender.accessTokens(network: "hms", fetch: grants.grant)
        appID = configuration.credentials.appID
    }

    /// The Huawei app messages are sent as.
    public let appID: String

    /// Closes the connections on graceful shutdown.
    public func run() async throws { try await sender.runUntilShutdown() }

    /// Sends every message, at most `maximumConcurrentSends` at once; one result per message, in
    /// order.
    public func send(batch pushes: [HMSPush]) async -> [HMSResult] {
        await sender.batch(pushes, notSent: HMSResult.retryLater(reason: "not sent", retryAfter: nil)) {
            await self.send($0)
        }
    }

    /// Sends one message and follows Push Kit's answer: retries flow control (503, 429),
    /// 81000001 and connection trouble (waiting at least `Retry-After`), gets a new access token
    /// once on 80200003, and reports dead tokens to the feedback handler.
    public func send(_ push: HMSPush) async -> HMSResult {
        do {
            try push.message(now: push.expiration, category: nil).validate()
        } catch {
            sender.metrics.failed(reason: error.code.text)
            return .failed(code: error.code, status: error.code.status, message: error.description)
        }
        // One attempt for "now or never"; a token refresh is not an attempt.
        return await sender.retries.send(
            expiration: push.expiration,
            nowOrNever: push.isNowOrNever,
            clock: clock,
            metrics: sender.metrics,
            expired: HMSResult.expired,
            retryLater: { problem in HMSResult.retryLater(reason: problem, retryAfter: nil) },
            attempt: { now, refreshed in await self.attempt(push, now: now, refreshed: refreshed) }
        )
    }

    /// One attempt: an access token, the message as it is `now`, and Push Kit's answer.
    private func attempt(_ push: HMSPush, now: Int64, refreshed: Bool) async -> SendAttempt<HMSResult> {
        let accessToken: String
        do {
            accessToken = try await tokens.token()
        } catch {
            return tokenTrouble(error)
        }
        // Encoding a message of strings cannot fail; the empty body it would leave is refused.
        let body = (try? JSONEncoder().encode(HMSSendRequest(message: push.message(now: now, category: category))))
        let reply: HTTPAnswer
        do {
            let request = HTTPClientRequest.bearerJSON(url: sendURL, accessToken: accessToken, body: body ?? Data())
            reply = try await sender.post(request, limit: 256 * 1024)
        } catch  where error.isUnreachable {
            // Backing this message off on its own would only delay it past Huawei's return:
            // whoever sends it holds it until Push Kit answers again.
            sender.metrics.failed(reason: "unreachable")
            return .done(.unreachable(reason: "cannot connect to Push Kit: \(error)"))
        } catch {
            logger.debug("Push Kit attempt failed", metadata: ["error": "\(error)"])
            return .retry(problem: "Push Kit unreachable: \(error)", retryAfter: nil)
        }
        return await follow(HMSReply(reply), for: push, accessToken: accessToken, refreshed: refreshed)
    }

    /// Follows Push Kit's answer to an attempt.
    private func follow(
        _ reply: HMSReply,
        for push: HMSPush,
        accessToken: String,
        refreshed: Bool
    ) async -> SendAttempt<HMSResult> {
        let metrics = sender.metrics
        switch reply.classification(token: push.token) {
        case .delivered:
            metrics.delivered.increment()
            return .done(.delivered(requestID: reply.answer?.requestId ?? ""))
        case .tokenDead:
            let code = reply.code ?? .allTokensInvalid
            metrics.failed(reason: code.text)
            await feedback(HMSTokenFeedback(token: push.token, code: code))
            return .done(.tokenDead(code: code))
        case .refreshTokenAndRetry where !refreshed:
            await tokens.invalidate(accessToken)
            return .refreshed
        case .retry:
            return sender.retries.retry(problem: reply.summary, retryAfter: reply.retryAfter, metrics: metrics) {
                HMSResult.retryLater(reason: $0, retryAfter: $1)
            }
        case .refreshTokenAndRetry, .configuration, .permanent:
            // Refused for good: the operator hears of it (once a minute per kind), since the
            // app's setup or what the relay sends must change. The message itself is never logged.
            let kind = reply.answer?.code ?? "\(reply.status)"
            if sender.alerts.shouldAlert(kind) {
                logger.error(
                    "Push Kit refused a message for good",
                    metadata: ["status": "\(reply.status)", "code": "\(kind)"]
                )
            }
            metrics.failed(reason: kind)
            return .done(.failed(code: reply.code, status: reply.status, message: reply.summary))
        }
    }

    /// What an attempt does when no access token came: unreachable at once, a refused client
    /// for good (and for the operator), anything else retried.
    private func tokenTrouble(_ error: any Error) -> SendAttempt<HMSResult> {
        guard let failure = error as? HMSTokenFailure else { return .retry(problem: "\(error)", retryAfter: nil) }
        switch failure.kind {
        case .unreachable:
            sender.metrics.failed(reason: "unreachable")
            return .done(.unreachable(reason: "cannot connect to Huawei's token endpoint: \(failure.detail)"))
        case .refused:
            logger.error("Huawei refused the app's client credentials", metadata: ["error": "\(failure.detail)"])
            sender.metrics.failed(reason: "credentials")
            return .done(.failed(code: nil, status: 401, message: failure.detail))
        case .passing:
            return .retry(problem: failure.detail, retryAfter: nil)
        }
    }
}
