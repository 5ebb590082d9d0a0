import HeraldStore
import Testing

@testable import HeraldRelay

/// `UndeliverableRule`: what becomes of a message from the recipients, the policies and now; no
/// store, no clock.
@Suite("Undeliverable rule")
struct UndeliverableRuleTests {
    static let hold60 = UndeliverablePolicy(policy: .hold, holdFor: .seconds(60))
    static let hold3600 = UndeliverablePolicy(policy: .hold, holdFor: .seconds(3600))
    static let refuse = UndeliverablePolicy(policy: .refuse, holdFor: .seconds(3600))

    @Test(
        "decide: push with a device; else held for the longest hold of the apps that hold; else refused",
        arguments: [
            (1, [refuse], UndeliverableRule.Decision.push),
            (2, [hold60], .push),
            (0, [hold60], .hold(until: 1_000 + 60_000)),
            (0, [refuse, hold60, hold3600], .hold(until: 1_000 + 3_600_000)),
            (0, [refuse], .refuse),
            (0, [refuse, refuse], .refuse),
            (0, [], .refuse),
            (0, [UndeliverablePolicy(policy: .hold, holdFor: .seconds(0))], .refuse),
        ] as [(Int, [UndeliverablePolicy], UndeliverableRule.Decision)]
    )
    func decide(recipients: Int, policies: [UndeliverablePolicy], expected: UndeliverableRule.Decision) {
        #expect(UndeliverableRule.decide(recipients: recipients, policies: policies, now: 1_000) == expected)
    }

    @Test(
        "takes: only an app that holds, before its own hold and the message's end",
        arguments: [
            (hold60, 1_000 + 59_999, true),
            (hold60, 1_000 + 60_000, false),
            (hold3600, 1_000 + 99_999, true),
            // The message's hold ends first (held for another app's shorter hold).
            (hold3600, 1_000 + 100_000, false),
            (refuse, 1_001, false),
        ] as [(UndeliverablePolicy, Int64, Bool)]
    )
    func takes(policy: UndeliverablePolicy, now: Int64, expected: Bool) {
        #expect(UndeliverableRule.takes(policy, heldAt: 1_000, heldUntil: 1_000 + 100_000, now: now) == expected)
    }

    @Test("an app's own policy, else the relay's default for what it leaves out")
    func effectivePolicy() {
        let relay = UndeliverableConfiguration(policy: .hold, holdFor: .seconds(600))
        var app = AppRecord(id: "com.example.chat", teamID: "TEAM123456")
        #expect(
            UndeliverablePolicy(app: nil, default: relay) == UndeliverablePolicy(policy: .hold, holdFor: .seconds(600))
        )
        #expect(
            UndeliverablePolicy(app: app, default: relay) == UndeliverablePolicy(policy: .hold, holdFor: .seconds(600))
        )
        app.undeliverable = .refuse
        #expect(
            UndeliverablePolicy(app: app, default: relay)
                == UndeliverablePolicy(policy: .refuse, holdFor: .seconds(600))
        )
        app.holdFor = 30
        #expect(
            UndeliverablePolicy(app: app, default: relay) == UndeliverablePolicy(policy: .refuse, holdFor: .seconds(30))
        )
    }
}
