import Foundation
import HeraldStore
import HeraldTestSupport
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

@testable import HeraldStorePostgres

#if canImport(Glibc)
import Glibc
#endif

/// What only the PostgreSQL store does: its URL, its errors at start, migrations shared by nodes,
/// wake-ups across nodes and the janitor's lock. Every promise of the protocols is checked by
/// the conformance suite.
@Suite("PostgreSQL store", .timeLimit(.minutes(2)))
struct PostgresStoreTests {
    @Test("a URL gives host, port, user, database, sslmode and schema; defaults as libpq's")
    func urls() throws {
        let full = try PostgresStoreConfiguration(
            url: "postgres://herald:s%40cret@db.internal:6432/push?sslmode=require&schema=herald_a"
        )
        #expect(full.host == "db.internal")
        #expect(full.port == 6432)
        #expect(full.user == "herald")
        #expect(full.password == "s@cret")
        #expect(full.database == "push")
        #expect(full.tls == .require)
        #expect(full.schema == "herald_a")
        #expect(!full.description.contains("s@cret"))

        let short = try PostgresStoreConfiguration(url: "postgresql://127.0.0.1")
        #expect(short.port == 5432)
        #expect(short.user == "postgres")
        #expect(short.database == "postgres")
        #expect(short.tls == .prefer)
        #expect(short.schema == "public")
    }

    @Test(
        "a bad URL is refused with a reason and without its password",
        arguments: [
            ("mysql://u@h/db", "not a PostgreSQL URL"),
            ("postgres:///db", "names no host"),
            ("postgres://u:pw@h/db?sslmode=maybe", "sslmode=maybe"),
            ("postgres://u@h/db?schema=x;drop", "letters, digits and _"),
            ("postgres://u@h/db?pool=3", "not a known option"),
        ]
    )
    func badURLs(url: String, reason: String) {
        #expect {
            try PostgresStoreConfiguration(url: url)
        } throws: { error in
            let text = "\(error)"
            return (error as? StoreError) == .unavailable && text.contains(reason) && !text.contains(":pw@")
        }
    }

    @Test("an unreachable server or an unknown database fails at open, at once, naming what failed")
    func unreachable() async throws {
        var closed = try PostgresEngine.testConfiguration()
        closed.port = try Self.closedPort()
        closed.connectTimeout = .seconds(2)
        let refused = await #expect(throws: StoreError.unavailable) {
            _ = try await PostgresStore.open(configuration: closed, logger: Logger(label: "test"))
        }
        #expect(refused?.detail.contains("cannot connect to postgres://") == true)
        #expect(refused?.detail.contains(":\(closed.port)/") == true)

        var unknown = try PostgresEngine.testConfiguration()
        unknown.database = "no_such_database"
        let missing = await #expect(throws: StoreError.unavailable) {
            _ = try await PostgresStore.open(configuration: unknown, logger: Logger(label: "test"))
        }
        #expect(missing?.detail.contains("no_such_database") == true)
    }

    @Test("the store serves while its service runs: a call before run() waits for it; a graceful shutdown closes it")
    func runsAsAService() async throws {
        let engine = try PostgresEngine()
        let configuration = engine.configurationOnNewStorage()
        let logger = Logger(label: "test.service")
        let store = try await PostgresStore.open(configuration: configuration, logger: logger)
        // Asked before the pool runs: answered once it does.
        let early = Task { try await store.apps() }
        let group = ServiceGroup(services: [store], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(try await early.value.isEmpty)
            try await store.saveApp(StoreFixtures.app())
            #expect(try await store.apps().count == 1)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // Shut down: every connection closed, calls fail at once.
        let closed = await #expect(throws: StoreError.unavailable) { _ = try await store.apps() }
        #expect(closed?.detail.contains("the store is closed") == true)
        // `close()` after the shutdown, and `withOpen`'s close, return at once.
        await store.close()
        let apps = try await PostgresStore.withOpen(configuration: configuration, logger: logger) {
            try await $0.apps()
        }
        #expect(apps.count == 1)
        await engine.tearDown()
    }

    @Test("nodes starting at the same moment migrate once; a schema newer than the build is refused")
    func migrations() async throws {
        let engine = try PostgresEngine()
        defer { Task { await engine.tearDown() } }
        let schema = engine.makeStorage()
        // Eight nodes start together on an empty schema, with a statement timeout far shorter than
        // the whole upgrade: seven of them wait for the lock longer than that, which must not fail.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { _ = try await engine.openStore(schema, statementTimeout: .milliseconds(30)) }
            }
            try await group.waitForAll()
        }
        let store = try await engine.openStore(schema)
        let versions = try await store.rows(
            "read the migrations",
            "SELECT version FROM herald_migrations ORDER BY version"
        )
        .map { try $0.decode(Int.self) }
        #expect(versions == Array(1...PostgresMigrations.latest))

        try await store.execute(
            unsafeSQL: "INSERT INTO herald_migrations (version, name) VALUES (999, 'from the future')"
        )
        let refused = await #expect(throws: StoreError.unavailable) {
            _ = try await engine.openStore(schema)
        }
        #expect(refused?.detail.contains("version 999, newer than this build") == true)
        await engine.tearDown()
    }

    @Test("an ingest on one node wakes a follower on another; the follower hears of it without polling")
    func wakeUpsAcrossNodes() async throws {
        let engine = try PostgresEngine()
        let schema = engine.makeStorage()
        let nodeA = try await engine.openStore(schema)
        let nodeB = try await engine.openStore(schema)
        try await nodeB.saveApp(StoreFixtures.app())
        try await nodeB.saveDevice(StoreFixtures.device("d1"))

        let wakes = Recorded<Int>()
        let follower = Task { await nodeA.followQueuedElsewhere { wakes.append(contentsOf: [1]) } }
        // The first call says "listening": anything queued before may have been missed.
        _ = await wakes.wait(forCount: 1)
        #expect(
            try await nodeB.accept(StoreFixtures.ingest([StoreFixtures.push("p1", device: "d1", at: 0)])) == .accepted
        )
        _ = await wakes.wait(forCount: 2)
        follower.cancel()
        await follower.value
        await engine.tearDown()
    }

    @Test("the smallest pool still runs statements while all three wake-up channels are listened to")
    func listenersDoNotTakeThePool() async throws {
        let engine = try PostgresEngine()
        let schema = engine.makeStorage()
        let other = try await engine.openStore(schema)
        var configuration = engine.base
        configuration.schema = schema
        configuration.poolSize = 2
        configuration.connectTimeout = .seconds(1)
        let node = try await PostgresStore.openRunning(configuration: configuration, logger: Logger(label: "test.pool"))
        let queued = Recorded<Int>()
        let handed = Recorded<Int>()
        let chats = Recorded<ChatEventNotice>()
        let followers = [
            Task { await node.followQueuedElsewhere { queued.append(contentsOf: [1]) } },
            Task { await node.followLiveHandovers(nodeID: "n1") { handed.append(contentsOf: [1]) } },
            Task { await node.followChatEvents(nodeID: "n1") { chats.append(contentsOf: [$0]) } },
        ]
        // Each says "listening" with its first call; the chat channel, by hearing an announcement.
        _ = await queued.wait(forCount: 1)
        _ = await handed.wait(forCount: 1)
        // The chat listener cannot say when its LISTEN is in place (PostgreSQL tells no one), so
        // the announcement is repeated until it is heard.
        let notice = ChatEventNotice(conversation: "c1", position: 1)
        try await eventually("the chat channel to hear an announcement", every: .milliseconds(50)) {
            if !chats.all.isEmpty { return true }
            await other.announceChatEvent(notice, to: ["n1"])
            return false
        }
        #expect(chats.all.first == notice)
        // Three connections listen; both of the pool's are still there for statements.
        async let first = node.deviceCount()
        async let second = node.apps()
        #expect(try await first == 0)
        #expect(try await second.isEmpty)
        for follower in followers { follower.cancel() }
        for follower in followers { await follower.value }
        await node.close()
        await engine.tearDown()
    }

    @Test("the janitor's sweep runs on one node at a time: while another holds it, a node skips its turn")
    func janitorOnOneNode() async throws {
        let engine = try PostgresEngine()
        let schema = engine.makeStorage()
        let store = try await engine.openStore(schema)
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        _ = try await store.accept(
            StoreFixtures.ingest([], message: StoreFixtures.message("m1", at: 0, expires: 10))
        )
        var configuration = engine.base
        configuration.schema = schema
        let other = try await PostgresMigrations.connect(configuration, logger: Logger(label: "test"))
        try await other.run("BEGIN", logger: Logger(label: "test"))
        try await other.run(
            "SELECT pg_advisory_xact_lock(hashtext('herald janitor ' || current_schema()))",
            logger: Logger(label: "test")
        )
        let skipped = try await store.deleteExpired(now: 100, historyBefore: 0)
        #expect(skipped.messages == 0)
        #expect(try await store.message(id: "m1") != nil)
        try await other.run("COMMIT", logger: Logger(label: "test"))
        try await other.close()
        let swept = try await store.deleteExpired(now: 100, historyBefore: 0)
        #expect(swept.messages == 1)
        #expect(try await store.message(id: "m1") == nil)
        await engine.tearDown()
    }

    /// A loopback port nothing listens on: bound by the kernel's choice, then closed.
    static func closedPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

@Suite("PostgreSQL store: the server goes away", .timeLimit(.minutes(2)))
struct PostgresOutageTests {
    @Test("while the server is down calls fail fast as unavailable; when it is back the store works again by itself")
    func serverRestart() async throws {
        let cluster = try PrivateCluster()
        defer { cluster.remove() }
        var configuration = try PostgresStoreConfiguration(url: cluster.url)
        configuration.connectTimeout = .seconds(2)
        let store = try await PostgresStore.openRunning(configuration: configuration, logger: Logger(label: "test"))
        defer { Task { await store.close() } }
        try await store.saveApp(StoreFixtures.app())
        #expect(try await store.apps().count == 1)

        try cluster.stop()
        let clock = ContinuousClock()
        let started = clock.now
        await #expect(throws: StoreError.unavailable) { _ = try await store.apps() }
        await #expect(throws: StoreError.unavailable) { try await store.saveApp(StoreFixtures.app()) }
        let waited = clock.now - started
        #expect(waited < .seconds(6), "failed after \(waited)")

        try cluster.start()
        // Back without a restart of the store: the pool connects again on a later call (its
        // reconnection has no signal: polled).
        try await eventually("the store answering again", every: .milliseconds(200)) {
            (try? await store.apps().count) == 1
        }
    }
}
