import HeraldDomain
import HeraldSandbox

/// The sandbox's wall clock as a `HeraldClock`: what the provider's tokens are issued by in a test
/// stack, so that a test moving the sandbox's clock on (`SandboxClock.advance`) ages them as APNs
/// sees them, instead of waiting.
struct SandboxWallClock: HeraldClock {
    let sandbox: SandboxClock

    func now() -> Int64 { sandbox.epochMilliseconds }

    /// Sleeps in real time until the sandbox's clock reads `deadline` (an advance brings it closer).
    func sleep(until deadline: Int64) async throws { try await sleepInRealTime(until: deadline) }
}
