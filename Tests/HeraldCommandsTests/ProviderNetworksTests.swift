import AsyncHTTPClient
import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldProvider
import HeraldProviderHTTP
import HeraldServer
import HeraldStore
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Testing

@testable import HeraldCommands

/// A provider of FCM alone, and a relay that learns from its `/health` which networks it has.
@Suite(.timeLimit(.minutes(1))) struct ProviderNetworksTests {
    @Test func aProviderForFCMAloneSaysSoAndRefusesAPNsPushes() async throws {
        var logger = Logger(label: "test.provider-networks")
        logger.logLevel = .critical
        let account = try FCMServiceAccount.generate(projectID: "demo-project", tokenURI: "https://127.0.0.1:1/token")
        let fcm = try FCMClient(configuration: FCMClientConfiguration(account: account.account), logger: logger)
        let ports = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: ProviderHTTPService.router(
                stage: ProviderStage(apns: nil, fcm: fcm),
                secret: "secret-0123456789abcdef"
            ),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { ports.continuation.yield($0.localAddress?.port ?? 0) },
            logger: logger
        )
        let group = ServiceGroup(services: [fcm, app], logger: logger)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.stream.makeAsyncIterator()
            let url = "http://127.0.0.1:\(await iterator.next() ?? 0)"
            #expect(await HeraldServer.platforms(provider: url, http: http, logger: logger) == [.android])

            var request = HTTPClientRequest(url: url + "/v1/push/batch")
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer secret-0123456789abcdef")
            request.body = .bytes(
                ByteBuffer(
                    string:
                        #"{"pushes":[{"id":"p1","device_token":"abcd","topic":"t","push_type":"alert","priority":5,"payload":"{}"}]}"#
                )
            )
            let response = try await http.execute(request, timeout: .seconds(10))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            #expect(response.status == .ok)
            #expect(
                body.contains(#""outcome":"failed""#) && body.contains("APNs is not configured") && body.contains("503")
            )
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        // A provider that cannot be asked: both, so no device is skipped for want of an answer.
        #expect(
            await HeraldServer.platforms(provider: "http://127.0.0.1:1", http: http, logger: logger) == [
                .ios, .android,
            ]
        )
        try await http.shutdown()
    }

    @Test func aProviderNeedsAtLeastOneNetwork() throws {
        #expect(throws: (any Error).self) { try HeraldCommand.parseAsRoot(["provider"]) }
        #expect(throws: (any Error).self) { try HeraldCommand.parseAsRoot(["provider", "--key", "k.p8"]) }
        #expect(throws: Never.self) { try HeraldCommand.parseAsRoot(["provider", "--fcm-service-account", "sa.json"]) }
    }
}
