import Testing

@testable import HeraldSandbox

/// The inspection log on its own: bounds, numbering, filters, observers.
@Suite(.timeLimit(.minutes(1)))
struct InspectionLogTests {
    static func record(token: String? = nil) -> SandboxFCMInspectionRecord {
        var record = SandboxFCMInspectionRecord(kind: .send, receivedAt: 0)
        record.token = token
        return record
    }

    @Test func itKeepsTheNewestUpToItsCapacityAndNumbersEveryEntry() {
        let log = InspectionLog<SandboxFCMInspectionRecord>(capacity: 3)
        for _ in 0..<5 { log.append(Self.record()) }
        #expect(log.count == 3)
        #expect(log.records.map(\.sequence) == [3, 4, 5])
    }

    @Test func aCapacityBelowOneKeepsOne() {
        let log = InspectionLog<SandboxFCMInspectionRecord>(capacity: 0)
        #expect(log.capacity == 1)
        log.append(Self.record())
        log.append(Self.record())
        #expect(log.records.map(\.sequence) == [2])
    }

    @Test func clearingKeepsTheNumbering() {
        let log = InspectionLog<SandboxFCMInspectionRecord>(capacity: 10)
        log.append(Self.record())
        log.append(Self.record())
        log.removeAll()
        #expect(log.records.isEmpty)
        #expect(log.append(Self.record()).sequence == 3)
    }

    @Test func filtersAndLimitsApplyToTheNewest() {
        let log = InspectionLog<SandboxFCMInspectionRecord>(capacity: 10)
        for token in ["a", "b", "a", "a", "b"] { log.append(Self.record(token: token)) }
        let onlyA: (SandboxFCMInspectionRecord) -> Bool = { $0.token == "a" }
        #expect(log.records(where: onlyA, limit: nil).map(\.sequence) == [1, 3, 4])
        #expect(log.records(where: onlyA, limit: 2).map(\.sequence) == [3, 4])
        #expect(log.records(where: nil, limit: 1).map(\.sequence) == [5])
        #expect(log.records(where: nil, limit: -1).isEmpty)
    }

    @Test func observersGetEveryNewRecordUntilFinished() async {
        let log = InspectionLog<SandboxFCMInspectionRecord>(capacity: 1)
        log.append(Self.record(token: "before"))
        var updates = log.updates().makeAsyncIterator()
        log.append(Self.record(token: "first"))
        log.append(Self.record(token: "second"))
        log.finishUpdates()
        #expect(await updates.next()?.token == "first")
        #expect(await updates.next()?.sequence == 3)
        #expect(await updates.next() == nil)
    }
}
