import HeraldDevice
import Testing

/// Seed 004's token-delay rule, every case.
@Suite("Late-token rule", .timeLimit(.minutes(1)))
struct LateTokenMachineTests {
    typealias Tokens = AppGroupStore.Tokens

    @Test("first launch: retrieval and a session without tokens start together; push is not available")
    func firstLaunch() {
        var machine = LateTokenMachine()
        #expect(
            machine.handle(.launched(persisted: Tokens()))
                == [.startTokenRetrieval, .startSession(Tokens()), .reportPushUnavailable]
        )
    }

    @Test("messaging first, then VoIP: stop / recreate / start twice")
    func messagingFirst() {
        var machine = LateTokenMachine()
        _ = machine.handle(.launched(persisted: Tokens()))
        #expect(
            machine.handle(.messagingToken("m1"))
                == [
                    .stopSession, .persist(Tokens(messaging: "m1")), .startSession(Tokens(messaging: "m1")),
                    .reportPushAvailable,
                ]
        )
        #expect(
            machine.handle(.voipToken("v1"))
                == [
                    .stopSession, .persist(Tokens(messaging: "m1", voip: "v1")),
                    .startSession(Tokens(messaging: "m1", voip: "v1")),
                ]
        )
        #expect(machine.state == .running(Tokens(messaging: "m1", voip: "v1")))
    }

    @Test("VoIP first, then messaging")
    func voipFirst() {
        var machine = LateTokenMachine()
        _ = machine.handle(.launched(persisted: Tokens()))
        #expect(
            machine.handle(.voipToken("v1"))
                == [
                    .stopSession, .persist(Tokens(voip: "v1")), .startSession(Tokens(voip: "v1")), .reportPushAvailable,
                ]
        )
        #expect(
            machine.handle(.messagingToken("m1")).contains(.startSession(Tokens(messaging: "m1", voip: "v1")))
        )
    }

    @Test("both at once: two restarts, each session has what was known then, the last has both")
    func bothAtOnce() {
        var machine = LateTokenMachine()
        _ = machine.handle(.launched(persisted: Tokens()))
        let first = machine.handle(.messagingToken("m1"))
        let second = machine.handle(.voipToken("v1"))
        #expect(first.filter { $0 == .stopSession }.count == 1)
        #expect(second.last == .startSession(Tokens(messaging: "m1", voip: "v1")))
    }

    @Test("neither within the timeout: push service not available; a late token still restarts")
    func neither() {
        var machine = LateTokenMachine()
        _ = machine.handle(.launched(persisted: Tokens()))
        #expect(machine.handle(.retrievalTimedOut) == [.reportPushUnavailable])
        #expect(machine.handle(.messagingToken("late")).first == .stopSession)
        #expect(machine.handle(.retrievalTimedOut) == [])
    }

    @Test("later launch with persisted tokens: the same token changes nothing, a new one restarts")
    func persistedTokens() {
        var machine = LateTokenMachine()
        let persisted = Tokens(messaging: "m1", voip: "v1")
        #expect(machine.handle(.launched(persisted: persisted)) == [.startTokenRetrieval, .startSession(persisted)])
        #expect(machine.handle(.messagingToken("m1")) == [])
        #expect(machine.handle(.voipToken("v1")) == [])
        #expect(
            machine.handle(.messagingToken("m2"))
                == [
                    .stopSession, .persist(Tokens(messaging: "m2", voip: "v1")),
                    .startSession(Tokens(messaging: "m2", voip: "v1")),
                ]
        )
    }

    @Test("nothing happens before launch")
    func beforeLaunch() {
        var machine = LateTokenMachine()
        #expect(machine.handle(.messagingToken("m")) == [])
        #expect(machine.state == .idle)
    }
}
