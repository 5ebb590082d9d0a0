import Crypto
import HeraldAPNs
import HeraldAPNsCore
import HeraldSimulation
import Synchronization
import Testing

/// A restarted provider takes up its last token instead of signing a new one at once, which APNs
/// would refuse (TooManyProviderTokenUpdates) within 20 minutes of the previous one.
@Suite("Provider token across restarts", .timeLimit(.minutes(1)))
struct ProviderTokenRestoreTests {
    static let key = P256.Signing.PrivateKey()
    static let signer = ProviderTokenSigner(privateKey: key, keyID: "KEY1234567", teamID: "TEAM123456")

    @Test("a young token made by the same key is reused, and new tokens are reported for keeping")
    func restoresYoungToken() throws {
        let kept = Mutex<[String]>([])
        let first = ProviderTokenManager(
            signer: Self.signer,
            wallClock: TestClock(frozenAt: 1_000_000_000),
            onNewToken: { token in kept.withLock { $0.append(token.text) } }
        )
        let made = try first.current()
        #expect(kept.withLock { $0 } == [made.text])

        // Ten minutes later, after a restart.
        let second = ProviderTokenManager(signer: Self.signer, wallClock: TestClock(frozenAt: 1_000_600_000))
        #expect(second.restore(made.text + "\n"))
        #expect(try second.current() == made)
        #expect(second.tokensMade == 0)
    }

    @Test("tokens of another key, team or age, and garbage, are not reused")
    func refusesForeignOrOldTokens() throws {
        let other = ProviderTokenSigner(
            privateKey: P256.Signing.PrivateKey(),
            keyID: "KEY1234567",
            teamID: "TEAM123456"
        )
        let foreign = try other.makeToken(issuedAt: 1_000_000)
        let manager = ProviderTokenManager(signer: Self.signer, wallClock: TestClock(frozenAt: 1_000_600_000))
        #expect(!manager.restore(foreign.text))
        let otherTeam = ProviderTokenSigner(privateKey: Self.key, keyID: "KEY1234567", teamID: "TEAM999999")
        #expect(!manager.restore(try otherTeam.makeToken(issuedAt: 1_000_000).text))
        #expect(!manager.restore("not a token"))
        let old = try Self.signer.makeToken(issuedAt: 1_000_600 - 51 * 60)
        #expect(!manager.restore(old.text))
        let future = try Self.signer.makeToken(issuedAt: 1_000_700)
        #expect(!manager.restore(future.text))
        _ = try manager.current()
        #expect(manager.tokensMade == 1)
    }
}
