import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldObservability
import HeraldSimulation
import HeraldStore
import HeraldStoreSQLite
import HeraldTestSupport
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

@testable import HeraldServer

/// `SharedProviderToken` on a real store (SQLite, with real libsodium and ES256 keys): what it
/// keeps there, who adopts and who signs, and what it does when the store is away.
@Suite(.timeLimit(.minutes(1)))
struct SharedProviderTokenServiceTests {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"

    static let logger: Logger = {
        var logger = Logger(label: "test.shared-token")
        logger.logLevel = .critical
        return logger
    }()

    static func withStore(_ body: (SQLiteStore) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "herald-shared-token-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await body(try SQLiteStore(configuration: .init(path: directory + "/herald.sqlite"), logger: logger))
    }

    static func node(
        _ store: any ProviderTokenStore,
        key: P256.Signing.PrivateKey,
        keyID: String = keyID,
        aheadBy offset: Int64 = 0,
        metrics: (any MetricsFactory)? = nil
    ) throws -> SharedProviderToken {
        // Real time, `offset` ahead.
        let clock = TestClock()
        clock.advance(by: .milliseconds(offset))
        return try SharedProviderToken(
            store: store,
            privateKey: key,
            keyID: keyID,
            teamID: teamID,
            clock: clock,
            metrics: metrics,
            logger: logger
        )
    }

    @Test("each token a node takes up is counted by where it came from: published by one node, adopted by the next")
    func tokensCounted() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = HeraldMetricsFactory(registry: registry)
        let keyID = "COUNTED123"
        func count(_ source: String) -> Double {
            let series = "herald_apns_provider_tokens_total{key_id=\"\(keyID)\",source=\"\(source)\"} "
            let line = registry.emitToString().split(separator: "\n").first { $0.hasPrefix(series) }
            return line.flatMap { Double($0.dropFirst(series.count)) } ?? 0
        }
        try await Self.withStore { store in
            let key = P256.Signing.PrivateKey()
            for _ in 0..<3 { await (try Self.node(store, key: key, keyID: keyID, metrics: factory)).prepare() }
            #expect(count("published") == 1)
            #expect(count("adopted") == 2)
            #expect(count("alone") == 0)
        }
    }

    @Test("the stored token is sealed; a node with the same .p8 adopts it, one with another .p8 replaces it")
    func sealedAdoptedReplaced() async throws {
        try await Self.withStore { store in
            let key = P256.Signing.PrivateKey()
            let first = try Self.node(store, key: key)
            await first.prepare()
            let token = try #require(first.tokens.held)
            let record = try #require(try await store.providerToken(teamID: Self.teamID, keyID: Self.keyID))
            #expect(record.version == 1 && record.issuedAt == token.issuedAt * 1000)
            // Not a part of the JWT (header, claims, signature) is in the stored bytes.
            for part in token.text.split(separator: ".") {
                let bytes = Array(part.utf8)
                let found = (0...(record.sealedToken.count - bytes.count)).contains {
                    Array(record.sealedToken[$0..<($0 + bytes.count)]) == bytes
                }
                #expect(!found, "a part of the token is in the database in the clear")
            }

            let second = try Self.node(store, key: key)
            await second.prepare()
            #expect(second.tokens.held == token)
            #expect(try await store.providerToken(teamID: Self.teamID, keyID: Self.keyID)?.version == 1)
            // A shared manager never signs on its own, not even when APNs says the token expired.
            #expect(try second.tokens.refresh(expired: token) == token)
            #expect(first.tokens.tokensMade == 0 && second.tokens.tokensMade == 0)

            // Another .p8 under the same key id cannot open it (nor use it): it stores its own.
            let stranger = try Self.node(store, key: P256.Signing.PrivateKey())
            await stranger.prepare()
            let replaced = try #require(stranger.tokens.held)
            #expect(replaced != token)
            #expect(try await store.providerToken(teamID: Self.teamID, keyID: Self.keyID)?.version == 2)
        }
    }

    @Test("when the token is due one node replaces it; another told that APNs refused its token adopts it at once")
    func dueTokenReplacedAndAdopted() async throws {
        try await Self.withStore { store in
            let key = P256.Signing.PrivateKey()
            let node = try Self.node(store, key: key)
            await node.prepare()
            let old = try #require(node.tokens.held)
            // A node whose clock reads 50 minutes later finds the token due and replaces it.
            let later = try Self.node(store, key: key, aheadBy: 50 * 60 * 1000)
            await later.prepare()
            let new = try #require(later.tokens.held)
            #expect(new != old)
            #expect(try await store.providerToken(teamID: Self.teamID, keyID: Self.keyID)?.version == 2)

            let group = ServiceGroup(services: [node], logger: Self.logger)
            let running = Task { try await group.run() }
            // As the APNs client does on InvalidProviderToken or TooManyProviderTokenUpdates; the
            // poll (30 s) is far off, so only this can make the node look now.
            node.tokens.rejected(old)
            // Adopting it is the node's own loop's doing, with no signal: polled.
            try await eventually("the node to adopt the new token") { node.tokens.held == new }
            await group.triggerGracefulShutdown()
            try await running.value
        }
    }

    @Test("a young token kept in the cache file of an earlier release is published rather than a new one")
    func seededFromTheFile() async throws {
        try await Self.withStore { store in
            let key = P256.Signing.PrivateKey()
            let signer = ProviderTokenSigner(privateKey: key, keyID: Self.keyID, teamID: Self.teamID)
            let now = Int64(Date().timeIntervalSince1970)
            let node = try Self.node(store, key: key)
            // Too old (50 minutes), or another key's: not taken.
            #expect(!node.seed(try signer.makeToken(issuedAt: now - 50 * 60).text))
            let stranger = ProviderTokenSigner(privateKey: .init(), keyID: Self.keyID, teamID: Self.teamID)
            #expect(!node.seed(try stranger.makeToken(issuedAt: now).text))
            let kept = try signer.makeToken(issuedAt: now - 5 * 60)
            #expect(node.seed(kept.text + "\n"))
            await node.prepare()
            #expect(node.tokens.held == kept)
            let record = try #require(try await store.providerToken(teamID: Self.teamID, keyID: Self.keyID))
            #expect(record.version == 1 && record.issuedAt == kept.issuedAt * 1000)
        }
    }

    @Test("with the store away and no token yet, a node signs its own rather than send none")
    func storeAway() async throws {
        let node = try Self.node(UnreachableStore(), key: P256.Signing.PrivateKey())
        #expect(throws: APNsClientError.self) { try node.tokens.current() }
        await node.prepare()
        let token = try node.tokens.current()
        #expect(token.keyID == Self.keyID)
    }

    struct UnreachableStore: ProviderTokenStore {
        func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
            throw StoreError.unavailable
        }

        func apply(_ changes: [StoreChange]) async throws -> [ChangeOutcome] {
            throw StoreError.unavailable
        }
    }
}
