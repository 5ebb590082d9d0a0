import Foundation
import HeraldRelayAPI
import HeraldStore
import Testing

/// Several nodes share one store, and each caches apps: a change another node saved must reach
/// this node's pushes within the cache's lifetime, not at its next restart.
@Suite struct AppCacheTests {
    @Test("an app changed in the store by another node is read again once the cached entry is 5 s old")
    func changedElsewhere() async throws {
        try await RelayHarness.with { harness in
            let phone = try await harness.phone(user: "ida")
            func send() async throws {
                let body = #"{"to":"ida","from":{"id":"a","name":"Ada"},"conversation":"c","text":"hi"}"#
                let receipt = try await harness.call(.POST, "/v1/messages", body: body).decode(IngestReceipt.self)
                try await harness.push(try #require(receipt.pushes.first?.pushID), reaches: .delivered)
            }
            try await send()
            // Another node raises the app's default priority: written to the shared store only.
            var app = try #require(try await harness.store.app(id: RelayHarness.bundleID))
            app.messagePriority = 10
            try await harness.store.saveApp(app)
            harness.clock.advance(by: .milliseconds(4_000))
            try await send()
            harness.clock.advance(by: .milliseconds(1_000))
            try await send()
            #expect(harness.accepted(token: phone.messagingToken).map(\.priority) == ["5", "5", "10"])
        }
    }
}
