import HeraldAPNsCore
import Synchronization
import Testing

@testable import HeraldSandbox

/// `FaultPlan.take`: the first matching fault answers, counting down, and goes once used up;
/// faults that do not match stay queued as they were.
@Suite struct FaultPlanTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// The queued faults, as (token, count).
        let queued: [(String, Int)]
        let token: String
        /// The token of the fault taken, nil for none.
        let taken: String?
        /// The queue after, as (token, count).
        let left: [(String, Int)]

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "nothing queued", queued: [], token: "a", taken: nil, left: []),
        Case(name: "no match", queued: [("b", 2)], token: "a", taken: nil, left: [("b", 2)]),
        Case(name: "last use goes", queued: [("a", 1), ("b", 1)], token: "a", taken: "a", left: [("b", 1)]),
        Case(name: "counts down", queued: [("b", 1), ("a", 3)], token: "a", taken: "a", left: [("b", 1), ("a", 2)]),
        Case(name: "first match only", queued: [("a", 1), ("a", 5)], token: "a", taken: "a", left: [("a", 5)]),
    ]

    @Test(arguments: cases) func takesOneUse(_ example: Case) {
        var plan = FaultPlan<SandboxFault>()
        plan.faults = example.queued.map { SandboxFault(reason: .badDeviceToken, count: $0.1, token: $0.0) }
        let taken = plan.take(where: { $0.token == example.token })
        #expect(taken?.token == example.taken)
        #expect(plan.faults.map { [$0.token ?? "", "\($0.count)"] } == example.left.map { [$0.0, "\($0.1)"] })
    }

    @Test func clearingKeepsShutdownAndDropsLatency() {
        let emulator = PlanHolder()
        emulator.setLatency(.milliseconds(50))
        emulator.beginShutdown()
        emulator.changePlan { $0.faults.append(SandboxFault(reason: .badDeviceToken)) }
        emulator.clearFaults()
        let plan = emulator.plan
        #expect(plan.faults.isEmpty && plan.latency == .zero && plan.shuttingDown)
    }
}

/// A `FaultPlanning` with nothing but its plan.
private final class PlanHolder: FaultPlanning {
    private let state = Mutex(FaultPlan<SandboxFault>())

    var plan: FaultPlan<SandboxFault> { state.withLock { $0 } }

    func changePlan(_ change: (inout FaultPlan<SandboxFault>) -> Void) { state.withLock { change(&$0) } }
}
