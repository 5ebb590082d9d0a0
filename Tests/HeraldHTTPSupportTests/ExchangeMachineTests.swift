import Testing

@testable import HeraldHTTPSupport

@Suite(.timeLimit(.minutes(1)))
struct ExchangeMachineTests {
    @Test("the header timer runs from the start until the head, and again from a later request's first byte")
    func keepAlive() {
        var machine = ExchangeMachine()
        #expect(machine.opened() == .startTimer)
        #expect(machine.bytesRead() == .none)
        #expect(machine.headReceived() == .stopTimer)
        #expect(!machine.mayAnswer)
        #expect(machine.responseEnded() == .none)
        #expect(machine.state == .betweenRequests)
        // An idle kept-alive connection is the idle timeout's business, not this timer's.
        #expect(machine.timerFired() == .none)
        #expect(machine.bytesRead() == .startTimer)
        #expect(machine.timerFired() == .refuseSlowHead)
        #expect(machine.state == .done)
    }

    @Test("pipelined heads: each owes a response; the timer waits until every one is written")
    func pipelined() {
        var machine = ExchangeMachine()
        _ = machine.opened()
        _ = machine.headReceived()
        #expect(machine.bytesRead() == .none)
        #expect(machine.headReceived() == .none)
        #expect(machine.state == .exchanging(owed: 2))
        _ = machine.responseEnded()
        #expect(machine.state == .exchanging(owed: 1))
        _ = machine.responseEnded()
        #expect(machine.mayAnswer)
    }

    @Test("after an upgrade or a close, nothing runs a timer again")
    func upgradedAndClosed() {
        var upgraded = ExchangeMachine()
        _ = upgraded.opened()
        _ = upgraded.headReceived()
        #expect(upgraded.upgraded() == .none)
        #expect(upgraded.bytesRead() == .none)
        #expect(upgraded.timerFired() == .none)

        var closed = ExchangeMachine()
        _ = closed.opened()
        #expect(closed.closed() == .stopTimer)
        #expect(closed.bytesRead() == .none)
    }
}
