import HeraldRelay
import HeraldStore
import Synchronization
import Testing

/// The quota rules, with a clock the test moves: no HTTP, no store.
@Suite("Quotas")
struct QuotaTests {
    static let app = Caller(keyID: "0123456789abcdef", appID: "com.example.chat", scopes: [.send])

    @Test func aBucketRefillsAtItsRateUpToItsBurst() {
        var bucket = TokenBucket(rate: 2, burst: 3, now: 0)
        #expect(bucket.wait(for: 3, at: 0) == .zero)
        bucket.take(3, at: 0)
        // Empty: one token comes every 500 ms.
        #expect(bucket.wait(for: 1, at: 0) == .milliseconds(500))
        #expect(bucket.wait(for: 1, at: 250) == .milliseconds(250))
        #expect(bucket.wait(for: 1, at: 500) == .zero)
        // Never more than the burst, however long it waited.
        #expect(bucket.wait(for: 3, at: 60_000) == .zero)
        #expect(bucket.wait(for: 4, at: 60_000) == .milliseconds(500))
    }

    /// (quota of the app, the key's own rate, messages asked at t=0 one after another, what each
    /// gets: nil admitted, else the Retry-After in seconds).
    @Test(
        arguments: [
            // No quota: everything.
            (nil, nil, [1, 1, 1], [nil, nil, nil]),
            // The app's: 2 at once, 1 a second.
            (MessageQuota(messagesPerSecond: 1, burst: 2), nil, [1, 1, 1], [nil, nil, 1]),
            // The key's is the tighter one.
            (MessageQuota(messagesPerSecond: 100, burst: 100), 0.5, [1, 1], [nil, 2]),
            // A broadcast takes its members at once, all or none.
            (MessageQuota(messagesPerSecond: 1, burst: 5), nil, [3, 3, 2], [nil, 1, nil]),
        ] as [(MessageQuota?, Double?, [Int], [Int?])]
    )
    func requestsAreAdmittedOrToldWhenTheyFit(
        quota: MessageQuota?,
        keyRate: Double?,
        asks: [Int],
        expected: [Int?]
    ) {
        let book = QuotaBook(apps: quota.map { ["com.example.chat": $0] } ?? [:])
        var caller = Self.app
        caller.ratePerSecond = keyRate
        let answers: [Int?] = asks.map { count in
            do throws(RelayError) {
                try book.admit(caller, count: count, at: 0)
                return nil
            } catch {
                #expect(error.isTooManyRequests)
                return error.retryAfter.map { Int($0.components.seconds) }
            }
        }
        #expect(answers == expected)
    }

    @Test func theAdminKeyAndOtherAppsAreNotCountedAndCallsNeverAre() throws {
        let book = QuotaBook(defaultQuota: MessageQuota(messagesPerSecond: 1, burst: 1))
        try book.admit(Self.app, count: 1, at: 0)
        #expect(throws: RelayError.self) { try book.admit(Self.app, count: 1, at: 0) }
        // Another app has a bucket of its own; the configured key has none.
        var other = Self.app
        other.appID = "com.example.other"
        try book.admit(other, count: 1, at: 0)
        for _ in 0..<100 { try book.admit(.configuredKey, count: 1, at: 0) }
        // A second later the app's bucket holds one again.
        try book.admit(Self.app, count: 1, at: 1_000)
    }

    @Test func moreThanTheBurstAtOnceIsABadRequestNotAWait() {
        let book = QuotaBook(apps: ["com.example.chat": MessageQuota(messagesPerSecond: 10, burst: 10)])
        do throws(RelayError) {
            try book.admit(Self.app, count: 11, at: 0)
            Issue.record("11 messages were admitted against a burst of 10")
        } catch {
            #expect(error.isInvalidField)
            #expect(error.field == "to")
        }
    }

    @Test func aReloadKeepsTheLevelOfUnchangedQuotasAndResetsChangedOnes() throws {
        let tight = MessageQuota(messagesPerSecond: 0.001, burst: 1)
        let book = QuotaBook(apps: ["com.example.chat": tight])
        try book.admit(Self.app, count: 1, at: 0)
        book.replace(apps: ["com.example.chat": tight], defaultQuota: nil)
        #expect(throws: RelayError.self) { try book.admit(Self.app, count: 1, at: 0) }
        book.replace(apps: ["com.example.chat": MessageQuota(messagesPerSecond: 0.001, burst: 2)], defaultQuota: nil)
        try book.admit(Self.app, count: 2, at: 0)
        book.replace(apps: [:], defaultQuota: nil)
        for _ in 0..<10 { try book.admit(Self.app, count: 1, at: 0) }
    }

    @Test func anAppsQueueCapCountsTheStoreOnceASecondAndWhatItAdmitted() async throws {
        let caps = QueueCaps(apps: ["com.example.chat": 3])
        let reads = Mutex<[String]>([])
        let queued = Mutex(1)
        func read(_ app: String) async throws(RelayError) -> Int {
            reads.withLock { $0.append(app) }
            return queued.withLock { $0 }
        }
        // 1 queued in the store: two more fit, the third does not (counted here, not read again).
        try await caps.admit(app: "com.example.chat", count: 1, at: 0, read: read)
        try await caps.admit(app: "com.example.chat", count: 1, at: 500, read: read)
        do throws(RelayError) {
            try await caps.admit(app: "com.example.chat", count: 1, at: 900, read: read)
            Issue.record("a fourth queued message was admitted against a cap of 3")
        } catch {
            #expect(error.isTooManyRequests)
            #expect(error.retryAfter == .seconds(5))
        }
        #expect(reads.withLock { $0 } == ["com.example.chat"])
        // A second later the store is read again: the dispatcher sent them all.
        queued.withLock { $0 = 0 }
        try await caps.admit(app: "com.example.chat", count: 3, at: 1_000, read: read)
        #expect(reads.withLock { $0.count } == 2)
        // An app without a cap is never read.
        try await caps.admit(app: "com.example.other", count: 1_000, at: 1_000, read: read)
        #expect(reads.withLock { $0.count } == 2)
    }
}
