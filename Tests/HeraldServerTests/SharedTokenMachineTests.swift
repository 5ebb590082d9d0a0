import HeraldStore
import Testing

@testable import HeraldServer

/// The decisions of `SharedTokenMachine`, one node's view of its key's shared provider token.
@Suite
struct SharedTokenMachineTests {
    static let minute: Int64 = 60_000

    static func record(version: Int64, issuedAt: Int64) -> ProviderTokenRecord {
        ProviderTokenRecord(teamID: "TEAM", keyID: "KEY", version: version, sealedToken: [1], issuedAt: issuedAt)
    }

    @Test("a young stored token is adopted once; a due one is replaced by compare-and-set on its version")
    func adoptThenReplace() {
        var machine = SharedTokenMachine()
        #expect(machine.handle(.look) == .read)
        let stored = Self.record(version: 3, issuedAt: 0)
        #expect(machine.handle(.stored(stored, now: 10 * Self.minute)) == .adopt(stored))
        #expect(machine.handle(.adopted(stored)) == .none)
        #expect(machine.held == .adopted(version: 3, issuedAt: 0))
        // The same version again: nothing to do.
        #expect(machine.handle(.stored(stored, now: 20 * Self.minute)) == .none)
        // 50 minutes old: due.
        #expect(machine.handle(.stored(stored, now: 50 * Self.minute)) == .publishNew(replacing: 3))
        // Another node won: its token is adopted.
        let winner = Self.record(version: 4, issuedAt: 50 * Self.minute)
        #expect(machine.handle(.stored(winner, now: 50 * Self.minute)) == .adopt(winner))
    }

    @Test("nothing stored: the first node publishes a new token")
    func firstToken() {
        var machine = SharedTokenMachine()
        #expect(machine.handle(.stored(nil, now: 0)) == .publishNew(replacing: nil))
        let mine = Self.record(version: 1, issuedAt: 0)
        #expect(machine.handle(.stored(mine, now: 0)) == .adopt(mine))
    }

    @Test("store down: keep the token held until 55 minutes, sign alone only without one or past that")
    func storeDown() {
        var machine = SharedTokenMachine()
        #expect(machine.handle(.storeFailed(now: 0)) == .signLocally)
        #expect(machine.handle(.signedLocally(issuedAt: 0)) == .none)
        #expect(machine.handle(.storeFailed(now: 54 * Self.minute)) == .none)
        #expect(machine.handle(.storeFailed(now: 55 * Self.minute)) == .signLocally)
    }

    @Test("a token signed while the store was away is published, not a second new one; a young stored one wins")
    func localTokenAfterOutage() {
        var machine = SharedTokenMachine()
        _ = machine.handle(.signedLocally(issuedAt: 10 * Self.minute))
        #expect(machine.handle(.stored(nil, now: 12 * Self.minute)) == .publishHeld(replacing: nil))
        let due = Self.record(version: 7, issuedAt: 0)
        #expect(machine.handle(.stored(due, now: 55 * Self.minute)) == .publishHeld(replacing: 7))
        let young = Self.record(version: 8, issuedAt: 11 * Self.minute)
        #expect(machine.handle(.stored(young, now: 12 * Self.minute)) == .adopt(young))
    }

    @Test("a stored token that does not open with this key is replaced")
    func unopenable() {
        var machine = SharedTokenMachine()
        let foreign = Self.record(version: 2, issuedAt: 0)
        #expect(machine.handle(.unopenable(foreign, now: Self.minute)) == .publishNew(replacing: 2))
    }
}
