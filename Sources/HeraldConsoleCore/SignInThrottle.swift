/// How many failed sign-ins the console takes before it stops trying passwords, as data: a
/// guesser gets `attempts` tries per `window` for one account name and `addressAttempts` from one
/// address, then waits until the oldest failure leaves the window.
///
/// Both limits count failures only. The name's limit holds from every address: once a name has
/// had `attempts` failures in the window, even its right password waits until the oldest leaves
/// it (a guesser cannot spread guesses over many addresses; an operator whose name is being
/// guessed waits out the window). A refused attempt does not check the password at all, so the
/// throttle also bounds the CPU and memory that Argon2id spends on guesses.
public struct SignInThrottle: Sendable {
    /// The limits.
    public struct Limits: Sendable, Hashable {
        /// Failed sign-ins per account name within `window`.
        public var attempts: Int = 5
        /// Failed sign-ins from one address within `window`, whatever the names.
        public var addressAttempts: Int = 20
        /// How far back failures count.
        public var window: Duration = .seconds(300)
        /// How many names and addresses are remembered at most; past it the oldest are forgotten
        /// (so a flood of names cannot grow the node's memory without bound).
        public var capacity: Int = 10_000

        public init() {}
    }

    /// The throttle's answer to a sign-in about to be checked.
    public enum Decision: Sendable, Hashable {
        case allowed
        /// Refused without checking the password; may be tried again after this long.
        case refused(retryAfter: Duration)
    }

    public let limits: Limits
    /// Failure times (milliseconds) by key, oldest first; a key is `name:` or `address:` prefixed.
    private var failures: [String: [Int64]] = [:]
    /// Keys in the order they were last failed, for forgetting the oldest.
    private var order: [String] = []

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Whether a sign-in as `name` from `address` at `now` may check its password.
    public mutating func decide(name: String, address: String, now: Int64) -> Decision {
        let byName = wait(Self.key(name: name), limit: limits.attempts, now: now)
        let byAddress = wait(Self.key(address: address), limit: limits.addressAttempts, now: now)
        let longest = max(byName, byAddress)
        return longest > 0 ? .refused(retryAfter: .milliseconds(longest)) : .allowed
    }

    /// Counts a failed sign-in (a wrong password or an unknown name: the same, so a guesser
    /// cannot tell which names exist).
    public mutating func recordFailure(name: String, address: String, now: Int64) {
        for key in [Self.key(name: name), Self.key(address: address)] {
            var times = (failures[key] ?? []).filter { $0 > now - limits.window.milliseconds }
            times.append(now)
            failures[key] = times
            order.removeAll { $0 == key }
            order.append(key)
        }
        while order.count > limits.capacity {
            failures[order.removeFirst()] = nil
        }
    }

    /// A successful sign-in forgets the name's failures (not the address's: one right password
    /// must not reset a guesser's count for other names from there).
    public mutating func recordSuccess(name: String) {
        let key = Self.key(name: name)
        failures[key] = nil
        order.removeAll { $0 == key }
    }

    /// Milliseconds until `key` may try again; 0 when it may now.
    private func wait(_ key: String, limit: Int, now: Int64) -> Int64 {
        let recent = (failures[key] ?? []).filter { $0 > now - limits.window.milliseconds }
        guard recent.count >= limit else { return 0 }
        // The attempt frees up when the failure that filled the limit leaves the window.
        return recent[recent.count - limit] + limits.window.milliseconds - now
    }

    private static func key(name: String) -> String { "name:" + name.lowercased() }
    private static func key(address: String) -> String { "address:" + address }
}
