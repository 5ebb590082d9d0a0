import Foundation
import HeraldDomain
public import HeraldRelayAPI
import Synchronization

/// The live channels of apps in the foreground (seed 003's real-time path) this node holds: one
/// per device.
///
/// While a device's channel is open and its app says it is active in a conversation, messages for
/// that conversation go over the channel instead of a push. Each must be acknowledged; a message
/// not acknowledged within `ackTimeout`, or still unacknowledged when the channel closes, is
/// handed to `fallback`, which queues the push: nothing is lost between the two paths.
///
/// What happens here is told to the relay's `LiveSessionDirectory`, so that other nodes sharing
/// the store know where the channel is and hand its messages to this node.
public final class LiveChannels: Sendable {
    /// One open channel.
    public struct Session: Sendable {
        public let id: UInt64
        public let deviceID: String
        /// The channel's name among every node's channels (unique across nodes and restarts).
        public let sessionID: String
        /// What to write to the device, in order; ends when the channel is replaced or closed.
        public let frames: AsyncStream<LiveServerFrame>
    }

    private struct Open {
        var id: UInt64
        var sessionID: String
        var continuation: AsyncStream<LiveServerFrame>.Continuation
        var activeConversation: String?
        var pending: [String: LiveMessage] = [:]
    }

    private struct State {
        var open: [String: Open] = [:]
        var nextID: UInt64 = 0
        var fallback: (@Sendable (String, String) async -> Void)?
        var directory: any LiveSessionDirectory = ProcessLiveDirectory()
        /// The relay's clock (see `attach`); the wall clock until then.
        var clock: any HeraldClock = WallClock()
        /// Where acknowledgement deadlines wait (see `attach`); none fall back before then.
        var timers: RelayTimers?
    }

    private let state = Mutex(State())
    /// Makes session ids unique across processes.
    private let instance = UUID().uuidString
    let ackTimeout: Duration

    public init(ackTimeout: Duration = .seconds(10)) {
        self.ackTimeout = ackTimeout
    }

    /// The relay these channels serve: its `clock` and
    /// `timers` time the acknowledgements, `directory` learns of the channels, and `fallback`
    /// queues the push for a message the device did not acknowledge: (device id, message id).
    func attach(
        clock: any HeraldClock,
        timers: RelayTimers,
        directory: any LiveSessionDirectory,
        fallback: @escaping @Sendable (String, String) async -> Void
    ) {
        state.withLock { state in
            state.clock = clock
            state.timers = timers
            state.directory = directory
            state.fallback = fallback
        }
    }

    private var directory: (any LiveSessionDirectory, Int64) {
        state.withLock { ($0.directory, $0.clock.now()) }
    }

    /// How many channels are open now.
    public var openCount: Int { state.withLock { $0.open.count } }

    /// Opens the device's channel; a channel it had is closed (its unacknowledged messages fall back).
    public func open(deviceID: String) async -> Session {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveServerFrame.self)
        let (session, replaced) = state.withLock { state -> (Session, Open?) in
            state.nextID += 1
            let sessionID = "\(instance)-\(state.nextID)"
            let replaced = state.open[deviceID]
            state.open[deviceID] = Open(id: state.nextID, sessionID: sessionID, continuation: continuation)
            return (Session(id: state.nextID, deviceID: deviceID, sessionID: sessionID, frames: stream), replaced)
        }
        if let replaced { await settle(replaced, deviceID: deviceID) }
        let (directory, now) = directory
        await directory.publish(deviceID: deviceID, sessionID: session.sessionID, conversation: nil, now: now)
        return session
    }

    /// The app says where it is.
    public func presence(_ session: Session, active conversation: String?) async {
        let current = state.withLock { state -> Bool in
            guard state.open[session.deviceID]?.id == session.id else { return false }
            state.open[session.deviceID]?.activeConversation = conversation
            return true
        }
        guard current else { return }
        let (directory, now) = directory
        await directory.publish(
            deviceID: session.deviceID,
            sessionID: session.sessionID,
            conversation: conversation,
            now: now
        )
    }

    /// The app has the message.
    public func acknowledge(_ session: Session, messageID: String) async {
        let (pending, timers) = state.withLock { state -> (Bool, RelayTimers?) in
            guard state.open[session.deviceID]?.id == session.id else { return (false, nil) }
            return (state.open[session.deviceID]?.pending.removeValue(forKey: messageID) != nil, state.timers)
        }
        timers?.cancel(.acknowledgement(deviceID: session.deviceID, messageID: messageID))
        // The delivery's record closes without a push.
        if pending { _ = await directory.0.settle(messageID: messageID, deviceID: session.deviceID) }
    }

    /// The channel ended: what it did not acknowledge falls back to push.
    public func close(_ session: Session) async {
        let closed = state.withLock { state -> Open? in
            guard state.open[session.deviceID]?.id == session.id else { return nil }
            return state.open.removeValue(forKey: session.deviceID)
        }
        if let closed { await settle(closed, deviceID: session.deviceID) }
        await directory.0.withdraw(deviceID: session.deviceID, sessionID: session.sessionID)
    }

    /// Whether the device's app is on screen in `conversation` with its channel open here.
    public func isActive(deviceID: String, in conversation: String) -> Bool {
        state.withLock { $0.open[deviceID]?.activeConversation == conversation }
    }

    /// Whether a message sent over the device's channel here still waits for its acknowledgement
    /// (a simulation moving the clock past the acknowledgement timeout waits for it first).
    public func isAwaitingAcknowledgement(deviceID: String, messageID: String) -> Bool {
        state.withLock { $0.open[deviceID]?.pending[messageID] != nil }
    }

    /// Whether the device has a channel open here.
    public func isOpen(deviceID: String) -> Bool {
        state.withLock { $0.open[deviceID] != nil }
    }

    /// The channels open here, by session id (the directory's heartbeat).
    var sessionIDs: Set<String> {
        state.withLock { Set($0.open.values.map(\.sessionID)) }
    }

    /// Sends a message over the device's channel; false when it has none (the caller pushes).
    func deliver(_ message: LiveMessage, to deviceID: String) -> Bool {
        let (clock, timers) = state.withLock { ($0.clock, $0.timers) }
        let deadline = clock.now() + ackTimeout.milliseconds
        let sent = state.withLock { state -> Bool in
            guard var open = state.open[deviceID] else { return false }
            open.pending[message.messageID] = message
            state.open[deviceID] = open
            open.continuation.yield(.message(message))
            return true
        }
        guard sent else { return false }
        let messageID = message.messageID
        timers?.schedule(.acknowledgement(deviceID: deviceID, messageID: messageID), at: deadline) { [weak self] in
            await self?.expire(messageID: messageID, deviceID: deviceID)
        }
        return true
    }

    /// Sends a frame that needs no acknowledgement (a call's stop or state) over the device's
    /// channel; false when it has none here.
    @discardableResult
    public func send(_ frame: LiveServerFrame, to deviceID: String) -> Bool {
        state.withLock { state -> Bool in
            guard let open = state.open[deviceID] else { return false }
            open.continuation.yield(frame)
            return true
        }
    }

    /// The acknowledgement deadline passed: the message is pushed, unless it was acknowledged
    /// or settled meanwhile (run by `RelayTimers`).
    private func expire(messageID: String, deviceID: String) async {
        let (expired, fallback) = state.withLock { state -> (Bool, (@Sendable (String, String) async -> Void)?) in
            guard state.open[deviceID]?.pending.removeValue(forKey: messageID) != nil else { return (false, nil) }
            return (true, state.fallback)
        }
        if expired, let fallback { await fallback(deviceID, messageID) }
    }

    /// A channel closed or replaced: its unacknowledged messages are queued as pushes before the
    /// close returns, in the closing task rather than a task of their own.
    private func settle(_ closed: Open, deviceID: String) async {
        closed.continuation.finish()
        let (fallback, timers) = state.withLock { ($0.fallback, $0.timers) }
        for messageID in closed.pending.keys {
            timers?.cancel(.acknowledgement(deviceID: deviceID, messageID: messageID))
        }
        guard let fallback else { return }
        for messageID in closed.pending.keys { await fallback(deviceID, messageID) }
    }
}
