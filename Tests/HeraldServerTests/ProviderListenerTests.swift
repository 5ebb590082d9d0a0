import Foundation
import HeraldFCMCore
import HeraldServer
import HeraldSimulation
import HeraldTestSupport
import Logging
import Testing

/// `herald provider`'s listener as `HeraldServer.provider` starts it, under hostile HTTP over
/// real sockets (#14, items 3 and 4): the configuration's `http` limits reach it.
@Suite(.timeLimit(.minutes(1)))
struct ProviderListenerTests {
    @Test("a slow head gets 408, two Content-Length headers 400, each closing the connection")
    func providerLimits() async throws {
        let directory = NSTemporaryDirectory() + "herald-provider-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // FCM alone, never reached: the listener is what is tested.
        let account = try FCMServiceAccount.generate(projectID: "demo-project", tokenURI: "https://127.0.0.1:1/token")
        let accountPath = directory + "/account.json"
        try JSONEncoder().encode(account.account).write(to: URL(fileURLWithPath: accountPath))
        var layer = ConfigurationFile()
        layer.fcm = ConfigurationFile.FCM()
        layer.fcm?.serviceAccount = accountPath
        layer.http = ConfigurationFile.HTTP()
        layer.http?.headerReadTimeout = 1
        var configuration = try HeraldConfiguration(layers: [layer])
        configuration.http.headerReadTimeout = .milliseconds(300)
        configuration.logLevel = .critical
        var logger = Logger(label: "test.provider-listener")
        logger.logLevel = .critical
        let server = HeraldServer(
            configuration: configuration,
            environment: ["HERALD_PROVIDER_SECRET": "secret-0123456789abcdef"],
            logger: logger
        )
        let listener = ProviderListener(
            host: "127.0.0.1",
            port: 0,
            secretFile: directory + "/provider.secret",
            tokenCache: directory + "/provider-token"
        )
        let ports = AsyncStream.makeStream(of: Int.self)
        let running = Task {
            try await server.provider(listener: listener) { lines in
                let port = lines.lazy.compactMap { line -> Int? in
                    guard let range = line.range(of: #"127\.0\.0\.1:\d+"#, options: .regularExpression) else {
                        return nil
                    }
                    return Int(line[range].split(separator: ":")[1])
                }.first
                ports.continuation.yield(port ?? 0)
            }
        }
        defer { running.cancel() }
        var bound = ports.stream.makeAsyncIterator()
        let port = try #require(await bound.next())

        let slow = try await RawHTTPConnection.connect(port: port)
        try await slow.send("POST /v1/push/batch HTTP/1.1\r\nhost: provider\r\n")
        #expect(try await slow.answer().status == 408)
        _ = try await slow.closedByServer()

        let conflicting = try await RawHTTPConnection.connect(port: port)
        try await conflicting.send(
            "POST /v1/push/batch HTTP/1.1\r\nhost: provider\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\n{}"
        )
        let answer = try await conflicting.answer()
        #expect(answer.status == 400)
        #expect(answer.json?["field"] as? String == "content-length")
        _ = try await conflicting.closedByServer()
    }
}
