/// The vendor SDK's rule for push tokens that arrive late (seed 004, "Handling Push Notification
/// Token Retrieval Delays"), as a state machine: events in, actions out, no I/O.
///
/// - First launch: start token retrieval and start a session without tokens at the same time;
///   while no token is known, push is "not available".
/// - A messaging or VoIP token arrives (independently, in either order): stop the session,
///   create a new one with the token(s), start it; persist the tokens.
/// - A later launch starts with the persisted tokens; a token that differs from the persisted
///   one (a stale token replaced by iOS) causes the same stop / recreate / start.
/// - A token equal to the one in use changes nothing.
public struct LateTokenMachine: Sendable {
    /// Where the app is.
    public enum State: Sendable, Hashable {
        /// Not launched yet.
        case idle
        /// A session runs with these tokens (possibly none).
        case running(AppGroupStore.Tokens)
    }

    /// What happened.
    public enum Event: Sendable, Hashable {
        /// The app started, with what it had persisted.
        case launched(persisted: AppGroupStore.Tokens)
        case messagingToken(String)
        case voipToken(String)
        /// Token retrieval gave nothing within its time limit.
        case retrievalTimedOut
    }

    /// What the app must do, in order.
    public enum Action: Sendable, Hashable {
        case startTokenRetrieval
        case startSession(AppGroupStore.Tokens)
        case stopSession
        case persist(AppGroupStore.Tokens)
        /// Tell the user push is not available ("Push service not available").
        case reportPushUnavailable
        /// Push works again.
        case reportPushAvailable
    }

    public private(set) var state: State = .idle

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.idle, .launched(let persisted)):
            state = .running(persisted)
            var actions: [Action] = [.startTokenRetrieval, .startSession(persisted)]
            if persisted.isEmpty { actions.append(.reportPushUnavailable) }
            return actions
        case (.idle, _):
            // Nothing runs before launch; a token seen now is handled once the app launches.
            return []
        case (.running(let tokens), .messagingToken(let token)):
            return replace(tokens, with: AppGroupStore.Tokens(messaging: token, voip: tokens.voip))
        case (.running(let tokens), .voipToken(let token)):
            return replace(tokens, with: AppGroupStore.Tokens(messaging: tokens.messaging, voip: token))
        case (.running(let tokens), .retrievalTimedOut):
            return tokens.isEmpty ? [.reportPushUnavailable] : []
        case (.running, .launched):
            return []
        }
    }

    private mutating func replace(_ old: AppGroupStore.Tokens, with new: AppGroupStore.Tokens) -> [Action] {
        guard new != old else { return [] }
        state = .running(new)
        var actions: [Action] = [.stopSession, .persist(new), .startSession(new)]
        if old.isEmpty { actions.append(.reportPushAvailable) }
        return actions
    }
}
