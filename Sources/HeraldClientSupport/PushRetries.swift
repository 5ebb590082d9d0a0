public import HeraldDomain
import HeraldMacros
import HeraldPush

/// What one attempt to send a push came to, as a client's own attempt reports it to
/// `PushRetries`.
public enum SendAttempt<Result: Sendable>: Sendable {
    /// The push is settled (or cannot be sent now): its result.
    case done(Result)
    /// The access token was dropped for a new one: try again, the refresh not counted as an attempt.
    case refreshed
    /// Try again; `problem` is why this attempt failed, `retryAfter` how long the network asked
    /// to wait at least.
    case retry(problem: String, retryAfter: Duration?)
}

/// The retry rules the FCM and Push Kit senders share: a number of attempts with full-jitter
/// backoff between them, `Retry-After` honoured, one free attempt after an access-token
/// refresh, and never an attempt after the push's expiration.
@MemberwiseInit
public struct PushRetries: Sendable {
    /// Attempts per push before the client answers "retry later" (the relay then retries).
    public var maximumAttempts: Int
    /// Full-jitter backoff between attempts: base × 2^(n-1), capped at `maximumDelay`; a
    /// `Retry-After` longer than `maximumDelay` is left to the relay.
    public var baseDelay: Duration
    public var maximumDelay: Duration

    /// Runs `attempt` until it settles the push, the attempts are spent (`retryLater` with the
    /// last problem) or the next attempt could only start after `expiration` (`expired`).
    ///
    /// - Parameters:
    ///   - expiration: Seconds since the epoch; no attempt starts at or after it, unless
    ///     `nowOrNever` (one attempt, whatever the time).
    ///   - attempt: One attempt at `now` (seconds since the epoch); `refreshed` says whether the
    ///     access token was already renewed once for this push.
    public func send<Result: Sendable>(
        expiration: Int64,
        nowOrNever: Bool,
        clock: any HeraldClock,
        metrics: PushClientMetrics,
        expired: Result,
        retryLater: (String) -> Result,
        attempt: (_ now: Int64, _ refreshed: Bool) async -> SendAttempt<Result>
    ) async -> Result {
        var count = 0
        var refreshed = false
        var lastProblem = ""
        var wait: Duration = .zero
        let attempts = nowOrNever ? 1 : maximumAttempts
        while count < attempts {
            count += 1
            if count > 1 {
                metrics.retries.increment()
                wait = max(wait, Backoff(base: baseDelay, maximum: maximumDelay).delay(attempt: count - 1))
                if clock.seconds() + wait.components.seconds >= expiration {
                    metrics.failed(reason: "expired")
                    return expired
                }
                try? await Task.sleep(for: wait)
                wait = .zero
            }
            // Never sent after its expiration: a call that could not ring in time must not ring later.
            let now = clock.seconds()
            guard now < expiration || nowOrNever else {
                metrics.failed(reason: "expired")
                return expired
            }
            switch await attempt(now, refreshed) {
            case .done(let result):
                return result
            case .refreshed:
                refreshed = true
                count -= 1  // a refresh is not a failed delivery attempt
            case .retry(let problem, let retryAfter):
                lastProblem = problem
                if let retryAfter { wait = retryAfter }
            }
        }
        metrics.failed(reason: "retry-later")
        return retryLater(lastProblem)
    }

    /// A passing failure's next step: another attempt here when the network's `Retry-After` is
    /// within the backoff's range, else the push settles as `retryLater`, so the relay schedules
    /// it no sooner than the network asked.
    public func retry<Result: Sendable>(
        problem: String,
        retryAfter: Duration?,
        metrics: PushClientMetrics,
        retryLater: (_ problem: String, _ retryAfter: Duration) -> Result
    ) -> SendAttempt<Result> {
        if let retryAfter, retryAfter > maximumDelay {
            metrics.failed(reason: "retry-later")
            return .done(retryLater(problem, retryAfter))
        }
        return .retry(problem: problem, retryAfter: retryAfter)
    }
}

/// Runs `body` for every item, at most `width` at once; one result per item, in order
/// (`missing` where a task produced none, which only cancellation can cause).
public func fanOut<Item: Sendable, Result: Sendable>(
    _ items: [Item],
    width: Int,
    missing: Result,
    _ body: @escaping @Sendable (Item) async -> Result
) async -> [Result] {
    var results = [Result?](repeating: nil, count: items.count)
    await withTaskGroup(of: (Int, Result).self) { group in
        var next = 0
        func start() {
            let index = next
            let item = items[index]
            group.addTask { (index, await body(item)) }
            next += 1
        }
        while next < min(max(1, width), items.count) { start() }
        for await (index, result) in group {
            results[index] = result
            if next < items.count { start() }
        }
    }
    return results.map { $0 ?? missing }
}
