import AsyncHTTPClient
import Foundation
import HeraldConsole
import HeraldCrypto
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import NIOCore
import Testing

/// The console on two relay nodes sharing one PostgreSQL database: one session for both, a
/// sign-out on one ends it on the other, and a node's live stream shows what the other accepted.
@Suite("The console in a cluster")
struct ConsoleClusterTests {
    static let password = "correct horse battery"

    @Test(
        "PostgreSQL, two nodes: a session signed in on A is B's too; signed out on B, A refuses it; A's live stream shows B's push"
    )
    func oneConsoleOnEveryNode() async throws {
        var console = ConsoleConfiguration()
        console.livePollInterval = .milliseconds(100)
        try await TwoNodeCluster.with(console: console) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let hash = try PasswordHash.hash(Self.password, strength: .minimum)
            try await a.store.apply(
                .saveOperator(
                    OperatorRecord(name: "olivia", role: .operator, passwordHash: hash, createdAt: 0),
                    audit: nil
                )
            )
            // A browser's client: it sees each redirect (the cluster's own client follows them).
            let http = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: .init(redirectConfiguration: .disallow)
            )
            defer { _ = http.shutdown() }
            let onA = ConsoleClient(base: a.baseURL, http: http)
            let signedIn = try await onA.signIn("olivia", Self.password)
            #expect(signedIn.status == 303, "\(signedIn.status): \(signedIn.body)")
            let onB = ConsoleClient(base: b.baseURL, http: http)
            onB.restore(onA.cookies)
            #expect(try await onB.get("/console/overview").status == 200)

            // A's live stream, then a message accepted by B for a phone activated on B.
            let phone = try await cluster.phone(user: "u1", on: b)
            var request = HTTPClientRequest(url: a.baseURL + "/console/live/events")
            request.headers.add(
                name: "cookie",
                value: onA.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
            )
            let response = try await http.execute(request, timeout: .seconds(30))
            var chunks = response.body.makeAsyncIterator()
            var received = ""
            var pushID = ""
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, let chunk = try await chunks.next() {
                received += String(buffer: chunk)
                if pushID.isEmpty, received.contains("retry: 3000") {
                    let message = MessageRequest(
                        to: "u1",
                        from: Party(id: "agent-7", name: "Dana"),
                        conversation: "c-1",
                        text: "from node b"
                    )
                    let reply = try await cluster.post("/v1/messages", body: message, to: b)
                    let receipt = try JSONDecoder().decode(IngestReceipt.self, from: reply.body)
                    pushID = try #require(receipt.pushes.first { $0.deviceID == phone.deviceID }).pushID
                }
                if !pushID.isEmpty, received.contains("\"push_id\":\"\(pushID)\"") { break }
            }
            #expect(!pushID.isEmpty && received.contains("\"push_id\":\"\(pushID)\""), "A's stream missed B's push")
            #expect(!received.contains("from node b") && !received.contains("Dana"))

            let csrf = try #require(try await onB.get("/console/overview").csrf)
            #expect(try await onB.post("/console/sign-out", form: [("csrf", csrf)]).status == 303)
            #expect(try await onA.get("/console/overview").status == 303, "A still takes a session B ended")
        }
    }
}
