import NIOCore
import NIOHTTP2

/// The lifecycle of one HTTP/2 connection to APNs, as a state machine: events in, actions out,
/// no I/O. `APNsClientHandler` feeds it what happens on the channel and performs what it answers;
/// every rule about how a request ends and when the connection goes lives here:
///
/// - Requests get odd stream ids in order while the connection is active; any other state
///   refuses them as not processed, so the pool sends them elsewhere.
/// - GOAWAY: streams above its last stream id were not processed and fail as such (the pool
///   resends them); those at or below it are still answered. A later GOAWAY may lower the last
///   stream id, never raise it. The pool hears `goingAway` once.
/// - The client's own stream ids running out drains the connection the same way.
/// - A draining connection owed no more answers sends a final PING and closes on its ack: the
///   ack comes after everything the server sent before it, so nothing is left unread.
/// - REFUSED_STREAM means not processed (RFC 9113 §8.7); any other reset, or the channel
///   closing, loses the answer (APNs may or may not have the push).
/// - A request past its deadline fails with `timeout` at the next sweep and its stream is
///   cancelled; the sweep runs only while streams are open.
/// - Every frame read proves the connection alive. An idle connection is PINGed; one that
///   stays silent for another whole interval is closed.
struct APNsConnectionStateMachine<Request: Sendable>: Sendable {
    typealias StreamID = HTTP2StreamID

    /// Where the connection is in its life.
    ///
    /// The open streams are kept beside the state rather than in its cases: every state but
    /// `closed` has them, and a dictionary held in an enum payload is copied when mutated in
    /// place, on the path every push takes.
    enum State: Sendable, Hashable {
        /// Takes new requests.
        case active
        /// Takes no new requests (GOAWAY received, or the stream ids are used up); the open
        /// streams, all at or below `lastStreamID`, are still owed their answers.
        case draining(lastStreamID: StreamID)
        /// Owed nothing: the final PING is out and the channel closes on its ack.
        case closing
        /// The channel is gone.
        case closed
    }

    /// What happened on the connection.
    enum Event: Sendable {
        /// A request to send, to be answered by `deadline`.
        case send(Request, deadline: NIODeadline)
        /// A frame was read.
        case frame(Frame)
        /// Nothing was read or written for a whole PING interval.
        case idle
        /// The deadline sweep's tick.
        case sweep(now: NIODeadline)
        /// The channel closed.
        case channelInactive
        /// The channel reported an error.
        case error
    }

    /// The frames the lifecycle cares about, reduced to what it needs.
    enum Frame: Sendable {
        /// HEADERS on a stream: the answer's head (or trailers); nil for a header not present.
        case headers(StreamID, status: Int?, apnsID: String?, uniqueID: String?, endStream: Bool)
        /// DATA on a stream: part of the answer's body (nil when empty).
        case data(StreamID, ByteBuffer?, endStream: Bool)
        /// RST_STREAM from the server.
        case reset(StreamID, HTTP2ErrorCode)
        case goAway(lastStreamID: StreamID)
        /// SETTINGS, with MAX_CONCURRENT_STREAMS when present.
        case settings(maxConcurrentStreams: Int?)
        /// A PING acknowledgement carrying this data.
        case pingAck(UInt64)
        /// Any other frame (WINDOW_UPDATE, the server's PING, SETTINGS ack…).
        case other
    }

    /// Why the connection closes itself.
    enum CloseReason: Sendable, Hashable {
        /// Draining finished and the final PING was acknowledged.
        case drained
        /// A whole idle interval passed without a frame after a PING.
        case pingUnanswered
        /// The channel reported an error.
        case error
    }

    /// A request whose deadline passed, and the stream to cancel.
    struct Expired: Sendable {
        let streamID: StreamID
        let request: Request
    }

    /// What the handler must do, in order.
    enum Action: Sendable {
        /// Send the request just submitted on this new stream.
        case write(StreamID)
        /// The answer is complete.
        case succeed(Request, APNsWireResponse)
        /// The request ends without an answer.
        case fail(Request, APNsClientError)
        /// Several requests end without an answer, for one reason, in stream order.
        case failAll([Request], APNsClientError)
        /// Fail these with `timeout` and cancel (RST_STREAM) their streams.
        case expire([Expired])
        case sendPing(UInt64)
        case closeChannel(CloseReason)
        /// Start the repeating deadline sweep (it feeds `.sweep`).
        case startSweep
        case stopSweep
        case tellPool(APNsConnectionEvent)
    }

    /// The actions for one event, in order; iterating hands each one over once. The first two
    /// are held inline and moved out, not copied, so the per-frame events (one action or none)
    /// allocate nothing; only rare events (GOAWAY, a drop) spill into an array.
    struct Actions: Sendable, Sequence, IteratorProtocol, ExpressibleByArrayLiteral {
        private var first: Action?
        private var second: Action?
        private var more: [Action] = []

        init() {}

        init(_ action: Action) {
            first = action
        }

        init(arrayLiteral actions: Action...) {
            for action in actions { append(action) }
        }

        mutating func append(_ action: Action) {
            if first == nil {
                first = action
            } else if second == nil {
                second = action
            } else {
                more.append(action)
            }
        }

        mutating func next() -> Action? {
            if let action = first.take() { return action }
            if let action = second.take() { return action }
            return more.isEmpty ? nil : more.removeFirst()
        }
    }

    /// A request waiting for its answer, and the answer so far.
    private struct Stream: Sendable {
        let request: Request
        let deadline: NIODeadline
        var status: Int?
        var apnsID: String?
        var uniqueID: String?
        var body: ByteBuffer?
    }

    /// The idle PING's data.
    static var idlePing: UInt64 { 0 }
    /// The final PING's data, distinct from the idle one so only its ack closes the connection.
    static var finalPing: UInt64 { 0x6865_7261_6C64_4649 }
    /// APNs's error bodies are small JSON: a body longer than this is not kept whole.
    static var bodyLimit: Int { 4096 }

    private(set) var state: State = .active
    private var streams: [StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    /// The highest stream id this connection opens.
    private let highestStreamID: Int32
    /// A PING (idle or final) has been sent and no frame has been read since.
    private(set) var pingOutstanding = false
    /// The deadline sweep is running.
    private(set) var sweeping = false

    /// - Parameter highestStreamID: the last (odd) stream id to open; the default keeps clear of
    ///   the 2³¹−1 ceiling HTTP/2 sets.
    init(highestStreamID: Int32 = .max - 4) {
        precondition(highestStreamID > 0 && highestStreamID % 2 == 1, "client stream ids are odd")
        self.highestStreamID = highestStreamID
    }

    /// Requests waiting for their answers.
    var openStreams: Int { streams.count }

    /// Takes one event in; answers what to do about it, in order.
    mutating func handle(_ event: Event) -> Actions {
        switch event {
        case .send(let request, let deadline):
            return send(request, deadline: deadline)
        case .frame(let frame):
            // Any frame at all shows the connection is alive.
            pingOutstanding = false
            return read(frame)
        case .idle:
            return idle()
        case .sweep(let now):
            return sweep(now: now)
        case .channelInactive:
            return channelInactive()
        case .error:
            if case .closed = state { return Actions() }
            return Actions(.closeChannel(.error))
        }
    }

    private mutating func send(_ request: Request, deadline: NIODeadline) -> Actions {
        guard case .active = state else { return Actions(.fail(request, .notProcessed)) }
        let streamID = StreamID(nextStreamID)
        streams[streamID] = Stream(request: request, deadline: deadline)
        var actions = Actions(.write(streamID))
        if !sweeping {
            sweeping = true
            actions.append(.startSweep)
        }
        if nextStreamID > highestStreamID - 2 {
            // Stream ids are finite: this connection takes no more, the pool opens another, and
            // this one drains like after a GOAWAY that covers every stream it opened.
            state = .draining(lastStreamID: streamID)
            actions.append(.tellPool(.goingAway))
        } else {
            nextStreamID += 2
        }
        return actions
    }

    private mutating func read(_ frame: Frame) -> Actions {
        switch frame {
        case .headers(let streamID, let status, let apnsID, let uniqueID, let endStream):
            guard let index = streams.index(forKey: streamID) else { return Actions() }
            if let status { streams.values[index].status = status }
            if let apnsID { streams.values[index].apnsID = apnsID }
            if let uniqueID { streams.values[index].uniqueID = uniqueID }
            return endStream ? complete(at: index) : Actions()
        case .data(let streamID, let buffer, let endStream):
            guard let index = streams.index(forKey: streamID) else { return Actions() }
            if var chunk = buffer {
                if streams.values[index].body == nil {
                    streams.values[index].body = chunk
                } else if streams.values[index].body!.readableBytes < Self.bodyLimit {
                    streams.values[index].body!.writeBuffer(&chunk)
                }
            }
            return endStream ? complete(at: index) : Actions()
        case .reset(let streamID, let code):
            guard let stream = streams.removeValue(forKey: streamID) else { return Actions() }
            // REFUSED_STREAM means the server did not process it (RFC 9113 §8.7).
            let error = code == .refusedStream ? APNsClientError.notProcessed : .connectionLost
            var actions = Actions(.fail(stream.request, error))
            closeIfDrained(&actions)
            return actions
        case .goAway(let lastStreamID):
            return goAway(lastStreamID: lastStreamID)
        case .settings(let limit):
            // A draining connection takes no requests, so its stream limit no longer matters.
            guard let limit, case .active = state else { return Actions() }
            return Actions(.tellPool(.streamLimit(limit)))
        case .pingAck(let data):
            guard case .closing = state, data == Self.finalPing else { return Actions() }
            return Actions(.closeChannel(.drained))
        case .other:
            return Actions()
        }
    }

    private mutating func complete(at index: [StreamID: Stream].Index) -> Actions {
        let stream = streams.remove(at: index).value
        let response = APNsWireResponse(
            status: stream.status ?? 0,
            apnsID: stream.apnsID,
            uniqueID: stream.uniqueID,
            body: stream.body
        )
        var actions = Actions(.succeed(stream.request, response))
        closeIfDrained(&actions)
        return actions
    }

    private mutating func goAway(lastStreamID: StreamID) -> Actions {
        var actions = Actions()
        let last: StreamID
        switch state {
        case .active:
            last = lastStreamID
            // Told first, so requests failed below are not resent on this connection.
            actions.append(.tellPool(.goingAway))
        case .draining(let previous):
            // RFC 9113 §6.8: a later GOAWAY may lower the last stream id but not raise it; and
            // streams above the earlier one have already been failed and forgotten.
            last = min(previous, lastStreamID)
        case .closing, .closed:
            // Nothing is open: nothing to disown, and the pool already knows.
            return Actions()
        }
        state = .draining(lastStreamID: last)
        // Streams above the last one were not processed: they fail as such and are resent elsewhere.
        let unprocessed = streams.keys.filter { $0 > last }.sorted()
        if !unprocessed.isEmpty {
            actions.append(.failAll(unprocessed.map { streams.removeValue(forKey: $0)!.request }, .notProcessed))
        }
        closeIfDrained(&actions)
        return actions
    }

    /// Once a draining connection is owed nothing, the final PING goes out.
    private mutating func closeIfDrained(_ actions: inout Actions) {
        guard case .draining = state, streams.isEmpty else { return }
        state = .closing
        pingOutstanding = true
        actions.append(.sendPing(Self.finalPing))
    }

    private mutating func idle() -> Actions {
        switch state {
        case .closed:
            return Actions()
        case .closing:
            // Owed nothing, and no ack within a whole interval: nothing is left to wait for.
            return Actions(.closeChannel(.pingUnanswered))
        case .active, .draining:
            if pingOutstanding {
                // A whole idle interval without even a PING answer: the connection is dead.
                return Actions(.closeChannel(.pingUnanswered))
            }
            pingOutstanding = true
            return Actions(.sendPing(Self.idlePing))
        }
    }

    private mutating func sweep(now: NIODeadline) -> Actions {
        guard !streams.isEmpty else {
            guard sweeping else { return Actions() }
            sweeping = false
            return Actions(.stopSweep)
        }
        var expiredIDs: [StreamID] = []
        for (streamID, stream) in streams where stream.deadline <= now { expiredIDs.append(streamID) }
        guard !expiredIDs.isEmpty else { return Actions() }
        expiredIDs.sort()
        let expired = expiredIDs.map { Expired(streamID: $0, request: streams.removeValue(forKey: $0)!.request) }
        var actions = Actions(.expire(expired))
        closeIfDrained(&actions)
        return actions
    }

    private mutating func channelInactive() -> Actions {
        if case .closed = state { return Actions() }
        state = .closed
        pingOutstanding = false
        var actions = Actions()
        if sweeping {
            sweeping = false
            actions.append(.stopSweep)
        }
        // Told first, so requests failed below are not resent on this connection.
        actions.append(.tellPool(.closed))
        if !streams.isEmpty {
            let lost = streams.sorted { $0.key < $1.key }.map(\.value.request)
            streams.removeAll()
            actions.append(.failAll(lost, .connectionLost))
        }
        return actions
    }
}

extension APNsConnectionStateMachine.Expired: Equatable where Request: Equatable {}
extension APNsConnectionStateMachine.Action: Equatable where Request: Equatable {}

extension APNsConnectionStateMachine.Actions: CustomStringConvertible {
    var description: String { "\(Array(self))" }
}

extension APNsConnectionStateMachine.Actions: Equatable where Request: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.elementsEqual(rhs) }
}
