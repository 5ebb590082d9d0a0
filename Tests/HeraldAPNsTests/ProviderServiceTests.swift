import AsyncHTTPClient
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldProvider
import HeraldProviderAPI
import HeraldProviderHTTP
import HeraldSandbox
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// `herald provider` over HTTP, in front of the client, against the sandbox.
@Suite(.timeLimit(.minutes(2))) struct ProviderServiceTests {
    static let secret = "0123456789abcdef0123456789abcdef"

    func withService(_ harness: ProviderHarness, _ body: (String) async throws -> Void) async throws {
        var logger = Logger(label: "test.provider.http")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: ProviderHTTPService.router(client: harness.client, secret: Self.secret),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) },
            logger: logger
        )
        let group = ServiceGroup(services: [app], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            try await body("http://127.0.0.1:\(port)")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    func post(_ url: String, body: String, secret: String? = secret) async throws -> (Int, [String: Any]) {
        var request = HTTPClientRequest(url: url + "/v1/push/batch")
        request.method = .POST
        if let secret { request.headers.add(name: "authorization", value: "Bearer \(secret)") }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 22)
        let json = try JSONSerialization.jsonObject(with: Data(buffer: bytes)) as? [String: Any] ?? [:]
        return (Int(response.status.code), json)
    }

    @Test func aBatchComesBackWithEachPushsOutcome() async throws {
        try await ProviderHarness.with { harness in
            try await withService(harness) { url in
                let live = try harness.device()
                let gone = try harness.device()
                try harness.core.uninstall(deviceID: gone.deviceID)
                let batch = ProviderBatch(pushes: [
                    ProviderPush(
                        id: "a",
                        deviceToken: try #require(live.messagingToken),
                        topic: ProviderHarness.bundleID,
                        pushType: .alert,
                        priority: 5,
                        payload: #"{"aps":{"alert":"x"}}"#
                    ),
                    ProviderPush(
                        id: "b",
                        deviceToken: try #require(live.voipToken),
                        topic: ProviderHarness.bundleID + ".voip",
                        pushType: .voip,
                        priority: 10,
                        expiration: Int64(Date().timeIntervalSince1970) + 30,
                        payload: #"{"aps":{}}"#
                    ),
                    ProviderPush(
                        id: "c",
                        deviceToken: try #require(gone.messagingToken),
                        topic: ProviderHarness.bundleID,
                        pushType: .alert,
                        priority: 5,
                        payload: #"{"aps":{"alert":"x"}}"#
                    ),
                    ProviderPush(
                        id: "d",
                        deviceToken: try #require(live.messagingToken),
                        topic: ProviderHarness.bundleID,
                        pushType: .alert,
                        priority: 7,
                        payload: #"{"aps":{"alert":"x"}}"#
                    ),
                    ProviderPush(
                        id: "e",
                        deviceToken: try #require(live.messagingToken),
                        topic: ProviderHarness.bundleID,
                        pushType: .alert,
                        priority: 5,
                        payload: String(repeating: "x", count: 5000)
                    ),
                ])
                let body = String(decoding: try JSONEncoder().encode(batch), as: UTF8.self)
                let (status, json) = try await post(url, body: body)
                #expect(status == 200)
                let results = try #require(json["results"] as? [[String: Any]])
                #expect(results.map { $0["id"] as? String } == ["a", "b", "c", "d", "e"])
                #expect(
                    results.map { $0["outcome"] as? String } == [
                        "delivered", "delivered", "token_dead", "failed", "failed",
                    ]
                )
                #expect(results[2]["reason"] as? String == "Unregistered")
                #expect(results[2]["timestamp"] is NSNumber)
                #expect(results[3]["reason"] as? String == "BadPriority")
                // Refused before sending, with the reason the client's check gave.
                #expect((results[4]["reason"] as? String)?.contains("4096") == true)
                #expect(results[4]["status"] as? Int == 400)
                #expect(harness.core.inspection().count == 3)
            }
        }
    }

    @Test func requestsWithoutTheSecretOrWithBadBodiesAreRefused() async throws {
        try await ProviderHarness.with { harness in
            try await withService(harness) { url in
                #expect(try await post(url, body: #"{"pushes":[]}"#, secret: nil).0 == 401)
                #expect(
                    try await post(url, body: #"{"pushes":[]}"#, secret: "wrong-secret-of-the-same-len!!!!").0 == 401
                )
                let cases: [(String, String)] = [
                    ("not json", "not valid JSON"),
                    (#"{"pushes":[]}"#, "1 to 1000 pushes"),
                    (#"{"pushes":[{"id":"a"}]}"#, "the field 'pushes[0].device_token' is missing"),
                    (
                        #"{"pushes":[{"id":"a","device_token":"x","topic":"t","push_type":"banner","priority":5,"payload":"{}"}]}"#,
                        "push_type"
                    ),
                ]
                for (body, message) in cases {
                    let (status, json) = try await post(url, body: body)
                    #expect(status == 400, "\(body)")
                    #expect(json["error"] as? String == "invalid_request", "\(body): \(json)")
                    #expect((json["reason"] as? String ?? "").contains(message), "\(body): \(json)")
                }
                #expect(harness.core.inspection().isEmpty)
            }
        }
    }
}
