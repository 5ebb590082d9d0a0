import Foundation
import GRDB
import HeraldPush
import HeraldStore
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldStoreSQLite

@Suite("SQLite push path without webhooks")
struct SQLiteWebhookCostTests {
    @Test("while no app has a webhook, claims and completions run no webhook statement; with one they do")
    func noWebhookNoStatement() async throws {
        let directory = NSTemporaryDirectory() + "herald-webhook-cost-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(
            configuration: .init(path: directory + "/herald.sqlite"),
            logger: Logger(label: "test.webhook-cost")
        )
        let statements = Mutex<[String]>([])
        try await store.write { db in
            db.trace { event in statements.withLock { $0.append("\(event)") } }
        }
        func webhookStatements() -> Int {
            statements.withLock { all in
                defer { all.removeAll() }
                return all.filter { $0.contains("webhook_events") }.count
            }
        }
        try await store.saveApp(StoreFixtures.app())
        try await store.saveDevice(StoreFixtures.device("d1"))
        func finishOne(_ id: String, at time: Int64) async throws {
            _ = try await store.accept(StoreFixtures.ingest([StoreFixtures.push(id, device: "d1", at: time)]))
            let claimed = try await store.claim(
                limit: 10,
                owner: "w",
                now: time,
                leaseUntil: time + 1_000,
                networks: Set(PushNetwork.allCases)
            )
            #expect(claimed.map(\.entry.pushID) == [id])
            try await store.complete(
                [PushCompletion(pushID: id, disposition: .finish(.delivered), reason: nil, deadToken: nil)],
                now: time + 1
            )
        }
        _ = webhookStatements()
        try await finishOne("p1", at: 10)
        #expect(webhookStatements() == 0)

        var hooked = StoreFixtures.app()
        hooked.webhook = AppWebhook(url: "https://backend.example/hooks", sealedSecret: [1])
        try await store.saveApp(hooked)
        _ = webhookStatements()
        try await finishOne("p2", at: 20)
        #expect(webhookStatements() == 1)
        #expect(try await store.webhookEvent(id: "push.delivered:p2")?.event.type == .pushDelivered)

        try await store.saveApp(StoreFixtures.app())
        _ = webhookStatements()
        try await finishOne("p3", at: 30)
        #expect(webhookStatements() == 0, "the webhook removed: back to none")
    }
}
