public import Crypto
import Foundation
public import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
public import HeraldDomain
public import HeraldStore
public import Logging
public import Metrics
public import ServiceLifecycle
import Synchronization

/// One APNs provider token per key across every node that shares a store: a cluster of `herald
/// serve` nodes, or several `herald provider` nodes on one database.
///
/// APNs refuses a key's new token within 20 minutes of the last (429
/// TooManyProviderTokenUpdates), so nodes that each signed their own would refuse each other. The
/// current token and its `iat` live in the store (`ProviderTokenStore`), sealed with a key derived
/// from the .p8 (only holders of the key can open it; a reader of the database cannot). Before the
/// first push (`prepare()`) a node adopts the stored token, or signs and publishes the first;
/// then it looks at the store every `pollInterval`, and at once when APNs refuses the token. When
/// the token is 50 minutes old the nodes race a compare-and-set: one signs and publishes, the
/// others adopt its token. `tokens`, the manager the APNs client asks on every push, never signs
/// on its own.
///
/// When the store cannot be reached the node keeps the token it holds; with none yet (or one
/// about to expire) it signs one for itself and says so: pushes go out, at the risk that APNs
/// refuses this node's or the others' token as a too-early update until the store answers again
/// and the node adopts the cluster's (or publishes its own, when the store has none).
public final class SharedProviderToken: Service, Sendable {
    /// How often a node looks at the store, and when the token is replaced.
    public struct Configuration: Sendable, Hashable {
        /// How often the store is read (30 s): another node's new token is adopted within this.
        public var pollInterval: Duration = .seconds(30)
        /// The age at which the token is replaced (50 minutes; Apple allows 20 to 60).
        public var refreshAfter: Duration = ProviderTokenManager.defaultRefreshAfter
        /// The age past which a node that cannot reach the store signs a token of its own
        /// (55 minutes; APNs calls a token older than 60 expired).
        public var localFallbackAfter: Duration = .seconds(55 * 60)

        public init() {}
    }

    /// The manager the APNs client asks on every push: it only ever holds adopted tokens.
    public let tokens: ProviderTokenManager
    private let store: any ProviderTokenStore
    private let signer: ProviderTokenSigner
    private let seal: ProviderTokenSeal
    private let configuration: Configuration
    private let machine: Mutex<SharedTokenMachine>
    private let looks: AsyncStream<Void>
    private let lookNow: AsyncStream<Void>.Continuation
    private let clock: any HeraldClock
    private let logger: Logger
    private let metrics: any MetricsFactory

    /// - Parameters:
    ///   - privateKey: The .p8's key: it signs the tokens and derives the key that seals them.
    ///   - clock: What tokens are dated and aged by.
    ///   - metrics: Where `herald_apns_provider_tokens_total` goes (the process's backend when nil).
    public init(
        store: any ProviderTokenStore,
        privateKey: P256.Signing.PrivateKey,
        keyID: String,
        teamID: String,
        configuration: Configuration = Configuration(),
        clock: any HeraldClock = WallClock(),
        metrics: (any MetricsFactory)? = nil,
        logger: Logger
    ) throws {
        self.metrics = metrics ?? MetricsSystem.factory
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        signer = ProviderTokenSigner(privateKey: privateKey, keyID: keyID, teamID: teamID)
        seal = try ProviderTokenSeal(privateKey: privateKey, keyID: keyID, teamID: teamID)
        machine = Mutex(
            SharedTokenMachine(
                timing: .init(
                    refreshAfter: configuration.refreshAfter.milliseconds,
                    localFallbackAfter: configuration.localFallbackAfter.milliseconds
                )
            )
        )
        // One pending look is enough however many pushes were refused meanwhile.
        (looks, lookNow) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let lookNow = lookNow
        tokens = ProviderTokenManager(
            signer: signer,
            refreshAfter: configuration.refreshAfter,
            wallClock: clock,
            coordination: .shared(onStale: { _ in lookNow.yield() })
        )
    }

    /// Takes up a token this node kept before it shared one (the text of an earlier release's
    /// token cache file), so that the first token published is that one, not a new one APNs
    /// would refuse within 20 minutes of it. Used only if this key signed it, it is younger than
    /// `refreshAfter`, and the store holds no younger token; call it before `prepare()`.
    @discardableResult
    public func seed(_ text: String) -> Bool {
        guard let token = signer.restore(text), tokens.held == nil else { return false }
        let age = clock.now() - token.issuedAt * 1000
        guard age >= 0, age < configuration.refreshAfter.milliseconds, tokens.adopt(token) else { return false }
        _ = machine.withLock { $0.handle(.signedLocally(issuedAt: token.issuedAt * 1000)) }
        return true
    }

    /// Takes up the cluster's token (or publishes the first): call it before the first push.
    /// Returns once a token is held, from the store or, when it cannot be reached, signed here.
    public func prepare() async {
        await step(.look)
        if tokens.held == nil {
            await step(.storeFailed(now: clock.now()))
        }
    }

    /// Looks at the store every `pollInterval`, and at once when APNs refused the token, until
    /// the service group shuts down.
    public func run() async throws {
        let interval = configuration.pollInterval
        let lookNow = lookNow
        let looks = looks
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // The poll: a look every interval, beside those refusals ask for.
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        lookNow.yield()
                    }
                }
                for await _ in looks {
                    await self.step(.look)
                    // Pushes refused one after the other ask for a look each: one a second is plenty.
                    try? await Task.sleep(for: .seconds(1))
                }
                group.cancelAll()
            }
        }
    }

    /// Feeds `event` to the machine and does what it says, until it has nothing more to do.
    private func step(_ first: SharedTokenMachine.Event) async {
        var event = first
        // A handful of steps at most (read, publish, adopt); the bound only guards the loop.
        for _ in 0..<8 {
            let action = machine.withLock { $0.handle(event) }
            guard let next = await perform(action) else { return }
            event = next
        }
    }

    private func perform(_ action: SharedTokenMachine.Action) async -> SharedTokenMachine.Event? {
        switch action {
        case .none:
            return nil
        case .read:
            do {
                let record = try await store.providerToken(teamID: signer.teamID, keyID: signer.keyID)
                return .stored(record, now: clock.now())
            } catch {
                logger.warning(
                    "cannot read the shared APNs provider token; keeping the one held",
                    metadata: ["error": "\(error)"]
                )
                return .storeFailed(now: clock.now())
            }
        case .adopt(let record):
            // Its own token, read back after publishing it, is not counted as adopted.
            let held = tokens.held
            guard let text = try? seal.open(record.sealedToken), let token = signer.restore(text),
                tokens.adopt(token)
            else {
                logger.warning(
                    "the shared APNs provider token does not open with this key; replacing it",
                    metadata: ["key_id": "\(signer.keyID)", "version": "\(record.version)"]
                )
                return .unopenable(record, now: clock.now())
            }
            if held != token { tokenCount("adopted") }
            logger.info(
                "using the stored APNs provider token",
                metadata: [
                    "key_id": "\(signer.keyID)", "version": "\(record.version)",
                    "age_seconds": "\((clock.now() - record.issuedAt) / 1000)",
                ]
            )
            return .adopted(record)
        case .publishNew(let replacing):
            guard let token = signedNow() else { return nil }
            return await publish(token, replacing: replacing, new: true)
        case .publishHeld(let replacing):
            guard let token = tokens.held else { return nil }
            return await publish(token, replacing: replacing, new: false)
        case .signLocally:
            guard let token = signedNow() else { return nil }
            tokens.adopt(token)
            tokenCount("alone")
            logger.warning(
                "the store cannot be reached: this node signed an APNs provider token of its own; APNs may refuse it or the other nodes' as too frequent an update until the store answers",
                metadata: ["key_id": "\(signer.keyID)"]
            )
            return .signedLocally(issuedAt: token.issuedAt * 1000)
        }
    }

    /// A token signed now, or nil (logged) when the key cannot sign.
    private func signedNow() -> ProviderToken? {
        do {
            return try signer.makeToken(issuedAt: clock.now() / 1000)
        } catch {
            logger.error("cannot sign an APNs provider token", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Counts a token this node took up, by where it came from (`herald_apns_provider_tokens_total`).
    private func tokenCount(_ source: String) {
        Counter(
            label: "herald_apns_provider_tokens_total",
            dimensions: [("key_id", signer.keyID), ("source", source)],
            factory: metrics
        ).increment()
    }

    /// Stores `token` if the stored one is still `replacing`; what the store holds afterwards
    /// (ours or the winner's) is the next event.
    private func publish(_ token: ProviderToken, replacing: Int64?, new: Bool) async -> SharedTokenMachine.Event {
        do {
            let swap = try await store.replaceProviderToken(
                teamID: signer.teamID,
                keyID: signer.keyID,
                sealedToken: seal.seal(token),
                issuedAt: token.issuedAt * 1000,
                replacing: replacing
            )
            if case .replaced(let record) = swap {
                // Held at once: the store's answer, read next, is this token, not one to adopt.
                tokens.adopt(token)
                tokenCount("published")
                logger.notice(
                    "published a new APNs provider token to the store",
                    metadata: ["key_id": "\(signer.keyID)", "version": "\(record.version)"]
                )
            }
            return .stored(swap.stored, now: clock.now())
        } catch {
            guard new else { return .storeFailed(now: clock.now()) }
            // Signed but perhaps not stored: send with it rather than sign yet another.
            tokens.adopt(token)
            tokenCount("alone")
            logger.warning(
                "cannot publish the new APNs provider token; this node uses it alone until the store answers",
                metadata: ["error": "\(error)"]
            )
            return .signedLocally(issuedAt: token.issuedAt * 1000)
        }
    }
}

/// Seals a provider token for the store with a key derived from the .p8's private key
/// (BLAKE2b keyed with the private scalar, then XChaCha20-Poly1305 bound to the team and key id):
/// every holder of the .p8 opens it; a reader of the database, or a node with another key, cannot.
struct ProviderTokenSeal: Sendable {
    private let key: MasterKey
    private let context: String

    init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) throws {
        key = try MasterKey.derived(
            fromSecret: Array(privateKey.rawRepresentation),
            label: "herald apns provider token v1"
        )
        context = "apns-provider-token:\(teamID)/\(keyID)"
    }

    func seal(_ token: ProviderToken) -> [UInt8] {
        key.seal(SecureBytes(copying: Array(token.text.utf8)), context: context)
    }

    func open(_ sealed: [UInt8]) throws -> String {
        let bytes = try key.open(sealed, context: context)
        return String(decoding: bytes.copyBytes(), as: UTF8.self)
    }
}
