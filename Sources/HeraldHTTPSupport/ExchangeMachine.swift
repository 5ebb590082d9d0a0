/// When an HTTP/1 connection's header-read timer runs: the decisions of `HTTPConnectionGuard`,
/// apart from the channel so they can be read (and tested) on their own.
///
/// The timer runs while a request head is being read and no response is owed: from the
/// connection's start, and from the first byte after every response has been written. A head
/// stops it. Bytes that come while a response is still owed (a pipelined next request) do not
/// start it; the idle timeout bounds that case. After a protocol upgrade (WebSocket) it never
/// runs again. On a TLS listener the timer bounds the handshake instead: it runs from the start
/// until the handshake completes.
struct ExchangeMachine: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// A head is being read; the timer runs.
        case readingHead
        /// `owed` heads arrived whose responses are not finished; no timer.
        case exchanging(owed: Int)
        /// Every response written, no byte of a next request yet; no timer (the idle timeout's
        /// business).
        case betweenRequests
        /// The connection speaks another protocol now, or is closing.
        case done
    }

    enum Action: Sendable, Equatable {
        case none
        case startTimer
        case stopTimer
        /// The head did not come in time: answer 408 (nothing else is being written) and close.
        case refuseSlowHead
    }

    private(set) var state = State.readingHead

    /// The connection opened: its first head is awaited.
    mutating func opened() -> Action {
        state == .readingHead ? .startTimer : .none
    }

    mutating func bytesRead() -> Action {
        guard state == .betweenRequests else { return .none }
        state = .readingHead
        return .startTimer
    }

    mutating func headReceived() -> Action {
        switch state {
        case .readingHead:
            state = .exchanging(owed: 1)
            return .stopTimer
        case .betweenRequests:
            // The head's bytes came before the previous response's end was seen.
            state = .exchanging(owed: 1)
            return .none
        case .exchanging(let owed):
            state = .exchanging(owed: owed + 1)
            return .none
        case .done:
            return .none
        }
    }

    mutating func responseEnded() -> Action {
        guard case .exchanging(let owed) = state else { return .none }
        state = owed > 1 ? .exchanging(owed: owed - 1) : .betweenRequests
        return .none
    }

    /// Whether an answer may be written now without cutting into another response.
    var mayAnswer: Bool {
        switch state {
        case .readingHead, .betweenRequests: true
        case .exchanging, .done: false
        }
    }

    mutating func upgraded() -> Action {
        let wasTiming = state == .readingHead
        state = .done
        return wasTiming ? .stopTimer : .none
    }

    /// A TLS connection finished its handshake: from here the channel's own idle timeouts bound
    /// it (the bytes of its requests are not watched).
    mutating func handshakeCompleted() -> Action {
        let wasTiming = state == .readingHead
        state = .done
        return wasTiming ? .stopTimer : .none
    }

    mutating func timerFired() -> Action {
        guard state == .readingHead else { return .none }
        state = .done
        return .refuseSlowHead
    }

    mutating func closed() -> Action {
        let wasTiming = state == .readingHead
        state = .done
        return wasTiming ? .stopTimer : .none
    }
}
