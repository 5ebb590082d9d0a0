import NIOCore
import Testing

@testable import HeraldAPNs

private typealias Machine = APNsConnectionStateMachine<String>

private func stream(_ id: Int32) -> Machine.StreamID { Machine.StreamID(id) }

private func at(_ nanoseconds: UInt64) -> NIODeadline { .uptimeNanoseconds(nanoseconds) }

private func response(_ status: Int, apnsID: String? = nil, body: ByteBuffer? = nil) -> APNsWireResponse {
    APNsWireResponse(status: status, apnsID: apnsID, uniqueID: nil, body: body)
}

extension APNsConnectionStateMachine where Request == String {
    /// Sends each request, answerable until `deadline`.
    fileprivate mutating func open(_ requests: String..., deadline: NIODeadline = .distantFuture) {
        for request in requests { _ = handle(.send(request, deadline: deadline)) }
    }

    /// The whole answer in one HEADERS frame, as APNs sends a 200.
    fileprivate mutating func answer(_ id: Int32, status: Int = 200) -> Actions {
        handle(.frame(.headers(stream(id), status: status, apnsID: nil, uniqueID: nil, endStream: true)))
    }
}

/// The APNs connection's lifecycle, event by event: which requests are answered, which are
/// resent (not processed), which are lost, and when the connection closes.
@Suite("APNs connection lifecycle", .timeLimit(.minutes(1)))
struct APNsConnectionStateMachineTests {
    @Test("requests get odd stream ids in order; the first starts the deadline sweep")
    func streamIDs() {
        var machine = Machine()
        #expect(machine.handle(.send("a", deadline: .distantFuture)) == [.write(stream(1)), .startSweep])
        #expect(machine.handle(.send("b", deadline: .distantFuture)) == [.write(stream(3))])
        #expect(machine.handle(.send("c", deadline: .distantFuture)) == [.write(stream(5))])
        #expect(machine.state == .active)
        #expect(machine.openStreams == 3)
    }

    @Test("an answer in HEADERS and DATA frames completes its request with status, ids and body")
    func answers() {
        var machine = Machine()
        machine.open("a", "b")
        #expect(machine.answer(3) == [.succeed("b", response(200))])
        let head = Machine.Frame.headers(stream(1), status: 410, apnsID: "id-a", uniqueID: nil, endStream: false)
        #expect(machine.handle(.frame(head)) == [])
        #expect(machine.handle(.frame(.data(stream(1), ByteBuffer(string: #"{"reason":"#), endStream: false))) == [])
        #expect(
            machine.handle(.frame(.data(stream(1), ByteBuffer(string: #""Unregistered"}"#), endStream: true)))
                == [
                    .succeed(
                        "a",
                        response(410, apnsID: "id-a", body: ByteBuffer(string: #"{"reason":"Unregistered"}"#))
                    )
                ]
        )
        // Answered streams are forgotten: a late frame for one changes nothing.
        #expect(machine.answer(1) == [])
        #expect(machine.openStreams == 0)
    }

    @Test("a body is not grown past 4 KiB")
    func bodyLimit() {
        var machine = Machine()
        machine.open("a")
        let big = ByteBuffer(repeating: 0x61, count: 4096)
        _ = machine.handle(.frame(.headers(stream(1), status: 400, apnsID: nil, uniqueID: nil, endStream: false)))
        _ = machine.handle(.frame(.data(stream(1), big, endStream: false)))
        #expect(
            machine.handle(.frame(.data(stream(1), ByteBuffer(string: "more"), endStream: true)))
                == [.succeed("a", response(400, body: big))]
        )
    }

    @Test("GOAWAY while streams are open: those above its last stream id are resent, the rest answered")
    func goAwayWithOpenStreams() {
        var machine = Machine()
        machine.open("a", "b", "c", "d")
        // The pool hears first, so the requests failed next are not resent on this connection.
        #expect(
            machine.handle(.frame(.goAway(lastStreamID: stream(3))))
                == [.tellPool(.goingAway), .failAll(["c", "d"], .notProcessed)]
        )
        #expect(machine.state == .draining(lastStreamID: stream(3)))
        #expect(machine.handle(.send("e", deadline: .distantFuture)) == [.fail("e", .notProcessed)])
        // Streams 1 and 3 are still owed answers; the last one sends the final PING.
        #expect(machine.answer(3) == [.succeed("b", response(200))])
        #expect(machine.state == .draining(lastStreamID: stream(3)))
        #expect(machine.answer(1) == [.succeed("a", response(200)), .sendPing(Machine.finalPing)])
        #expect(machine.state == .closing)
    }

    @Test("the final PING's ack closes a drained connection; an idle PING's ack does not")
    func finalPingClose() {
        var machine = Machine()
        machine.open("a")
        _ = machine.handle(.frame(.goAway(lastStreamID: stream(1))))
        #expect(machine.answer(1) == [.succeed("a", response(200)), .sendPing(Machine.finalPing)])
        #expect(machine.pingOutstanding)
        #expect(machine.handle(.frame(.pingAck(Machine.idlePing))) == [])
        #expect(machine.handle(.frame(.pingAck(Machine.finalPing))) == [.closeChannel(.drained)])
        // The sweep still ran; the pool hears of the close once the channel is gone.
        #expect(machine.handle(.channelInactive) == [.stopSweep, .tellPool(.closed)])
        #expect(machine.state == .closed)
    }

    @Test("GOAWAY with nothing open: the final PING at once; no ack within an idle interval closes")
    func goAwayWhenIdle() {
        var machine = Machine()
        #expect(
            machine.handle(.frame(.goAway(lastStreamID: .rootStream)))
                == [.tellPool(.goingAway), .sendPing(Machine.finalPing)]
        )
        #expect(machine.state == .closing)
        #expect(machine.handle(.frame(.goAway(lastStreamID: .rootStream))) == [])
        #expect(machine.handle(.idle) == [.closeChannel(.pingUnanswered)])
    }

    @Test("a second GOAWAY lowers the last stream id, never raises it; the pool hears once")
    func secondGoAway() {
        var machine = Machine()
        machine.open("a", "b", "c", "d")
        #expect(machine.handle(.frame(.goAway(lastStreamID: stream(7)))) == [.tellPool(.goingAway)])
        #expect(machine.handle(.frame(.goAway(lastStreamID: stream(3)))) == [.failAll(["c", "d"], .notProcessed)])
        #expect(machine.state == .draining(lastStreamID: stream(3)))
        #expect(machine.handle(.frame(.goAway(lastStreamID: stream(7)))) == [])
        #expect(machine.state == .draining(lastStreamID: stream(3)))
        #expect(machine.openStreams == 2)
    }

    @Test("a drop mid-batch: answered requests stay answered, the rest are lost, nothing new is taken")
    func dropMidBatch() {
        var machine = Machine()
        machine.open("a", "b", "c", "d", "e")
        _ = machine.answer(1)
        _ = machine.answer(5)
        #expect(
            machine.handle(.channelInactive)
                == [.stopSweep, .tellPool(.closed), .failAll(["b", "d", "e"], .connectionLost)]
        )
        #expect(machine.state == .closed)
        #expect(machine.openStreams == 0)
        #expect(machine.handle(.send("f", deadline: .distantFuture)) == [.fail("f", .notProcessed)])
        #expect(machine.answer(3) == [])
        #expect(machine.handle(.idle) == [])
        #expect(machine.handle(.error) == [])
        #expect(machine.handle(.channelInactive) == [])
    }

    @Test("a drop while draining loses the answers still owed")
    func dropWhileDraining() {
        var machine = Machine()
        machine.open("a", "b", "c")
        _ = machine.handle(.frame(.goAway(lastStreamID: stream(3))))
        #expect(
            machine.handle(.channelInactive) == [
                .stopSweep, .tellPool(.closed), .failAll(["a", "b"], .connectionLost),
            ]
        )
    }

    @Test("REFUSED_STREAM is not processed (resent); any other reset loses the answer")
    func streamResets() {
        var machine = Machine()
        machine.open("a", "b", "c")
        #expect(machine.handle(.frame(.reset(stream(1), .refusedStream))) == [.fail("a", .notProcessed)])
        #expect(machine.handle(.frame(.reset(stream(3), .internalError))) == [.fail("b", .connectionLost)])
        #expect(machine.handle(.frame(.reset(stream(3), .refusedStream))) == [])
        // While draining, the reset of the last owed stream ends the drain.
        _ = machine.handle(.frame(.goAway(lastStreamID: stream(5))))
        #expect(
            machine.handle(.frame(.reset(stream(5), .cancel)))
                == [.fail("c", .connectionLost), .sendPing(Machine.finalPing)]
        )
    }

    @Test("requests past their deadline time out and are cancelled; the sweep stops when none is open")
    func timeouts() {
        var machine = Machine()
        machine.open("a", deadline: at(100))
        machine.open("b", deadline: at(200))
        machine.open("c", deadline: at(100))
        #expect(machine.handle(.sweep(now: at(50))) == [])
        #expect(
            machine.handle(.sweep(now: at(100)))
                == [.expire([.init(streamID: stream(1), request: "a"), .init(streamID: stream(5), request: "c")])]
        )
        #expect(machine.answer(3) == [.succeed("b", response(200))])
        #expect(machine.handle(.sweep(now: at(300))) == [.stopSweep])
        #expect(!machine.sweeping)
        #expect(machine.handle(.sweep(now: at(350))) == [])
        #expect(machine.handle(.send("d", deadline: at(400))) == [.write(stream(7)), .startSweep])
    }

    @Test("the last owed request timing out ends the drain")
    func timeoutWhileDraining() {
        var machine = Machine()
        machine.open("a", deadline: at(100))
        _ = machine.handle(.frame(.goAway(lastStreamID: stream(1))))
        #expect(
            machine.handle(.sweep(now: at(150)))
                == [.expire([.init(streamID: stream(1), request: "a")]), .sendPing(Machine.finalPing)]
        )
        #expect(machine.state == .closing)
    }

    @Test("idle: a PING; any frame since keeps the connection; silence through another interval closes it")
    func idlePing() {
        var machine = Machine()
        #expect(machine.handle(.idle) == [.sendPing(Machine.idlePing)])
        #expect(machine.handle(.frame(.pingAck(Machine.idlePing))) == [])
        #expect(machine.handle(.idle) == [.sendPing(Machine.idlePing)])
        #expect(machine.handle(.frame(.other)) == [])
        #expect(machine.handle(.idle) == [.sendPing(Machine.idlePing)])
        #expect(machine.handle(.idle) == [.closeChannel(.pingUnanswered)])
    }

    @Test("a draining connection is PINGed when idle like an active one")
    func idleWhileDraining() {
        var machine = Machine()
        machine.open("a")
        _ = machine.handle(.frame(.goAway(lastStreamID: stream(1))))
        #expect(machine.handle(.idle) == [.sendPing(Machine.idlePing)])
        #expect(machine.handle(.idle) == [.closeChannel(.pingUnanswered)])
    }

    @Test("the last stream id drains the connection like a GOAWAY covering every stream")
    func streamIDExhaustion() {
        var machine = Machine(highestStreamID: 5)
        machine.open("a", "b")
        #expect(machine.handle(.send("c", deadline: .distantFuture)) == [.write(stream(5)), .tellPool(.goingAway)])
        #expect(machine.state == .draining(lastStreamID: stream(5)))
        #expect(machine.handle(.send("d", deadline: .distantFuture)) == [.fail("d", .notProcessed)])
        // A GOAWAY now is no news to the pool.
        #expect(machine.handle(.frame(.goAway(lastStreamID: stream(5)))) == [])
        _ = machine.answer(1)
        _ = machine.answer(5)
        #expect(machine.answer(3) == [.succeed("b", response(200)), .sendPing(Machine.finalPing)])
    }

    @Test("a single stream id: the first request is also the last")
    func oneStreamID() {
        var machine = Machine(highestStreamID: 1)
        #expect(
            machine.handle(.send("a", deadline: .distantFuture))
                == [.write(stream(1)), .startSweep, .tellPool(.goingAway)]
        )
    }

    @Test("the server's stream limit reaches the pool while the connection takes requests")
    func streamLimit() {
        var machine = Machine()
        #expect(machine.handle(.frame(.settings(maxConcurrentStreams: 1000))) == [.tellPool(.streamLimit(1000))])
        #expect(machine.handle(.frame(.settings(maxConcurrentStreams: nil))) == [])
        #expect(machine.handle(.frame(.settings(maxConcurrentStreams: 10))) == [.tellPool(.streamLimit(10))])
        machine.open("a")
        _ = machine.handle(.frame(.goAway(lastStreamID: stream(1))))
        #expect(machine.handle(.frame(.settings(maxConcurrentStreams: 500))) == [])
    }

    @Test("an error closes the channel; the close itself is reported by channelInactive")
    func error() {
        var machine = Machine()
        machine.open("a")
        #expect(machine.handle(.error) == [.closeChannel(.error)])
        #expect(machine.state == .active)
        #expect(
            machine.handle(.channelInactive) == [.stopSweep, .tellPool(.closed), .failAll(["a"], .connectionLost)]
        )
    }
}
