import HeraldPush
import Testing

@Suite(.timeLimit(.minutes(1)))
struct BackoffTests {
    @Test("the ceiling doubles from the base per attempt and stops at the maximum")
    func ceilings() {
        let backoff = Backoff(base: .milliseconds(100), maximum: .seconds(1))
        #expect(
            (0...6).map { backoff.ceiling(attempt: $0) } == [
                .milliseconds(100), .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                .seconds(1), .seconds(1),
            ]
        )
        // Far attempts neither overflow nor trap.
        #expect(backoff.ceiling(attempt: 10_000) == .seconds(1))
    }

    @Test("full jitter draws from zero to the ceiling, equal jitter from half of it", arguments: [1, 2, 3, 8])
    func jitterBounds(attempt: Int) {
        var generator = SplitMix(seed: UInt64(attempt))
        for jitter in [Backoff.Jitter.full, .equal] {
            let backoff = Backoff(base: .milliseconds(50), maximum: .seconds(2), jitter: jitter)
            let ceiling = backoff.ceiling(attempt: attempt)
            let floor = jitter == .full ? Duration.zero : ceiling / 2
            let draws = (0..<2_000).map { _ in backoff.delay(attempt: attempt, using: &generator) }
            #expect(draws.allSatisfy { $0 >= floor && $0 <= ceiling })
            // The draws spread over the range rather than sticking to one end.
            let middle = floor + (ceiling - floor) / 2
            let low = draws.filter { $0 < middle }.count
            #expect(low > 700 && low < 1_300)
        }
    }

    @Test("nanoseconds saturate instead of trapping")
    func nanoseconds() {
        #expect(Duration.milliseconds(1_500).nanoseconds == 1_500_000_000)
        #expect(Duration.seconds(Int64.max).nanoseconds == .max)
        #expect(Duration.seconds(Int64.min).nanoseconds == .min)
    }
}

/// A seeded generator, so the draws are the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
