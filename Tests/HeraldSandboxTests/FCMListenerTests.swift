import AsyncHTTPClient
import Foundation
import HeraldFCMCore
import HeraldSandbox
import Logging
import NIOCore
import NIOHTTP2
import ServiceLifecycle
import Testing

/// The FCM listener itself: HTTP/2, unknown paths, and its place in the sandbox's lifecycle.
@Suite(.timeLimit(.minutes(2))) struct FCMListenerTests {
    @Test func unknownPathsGetAJSONNotFound() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            var request = HTTPClientRequest(url: sandbox.endpoints.fcmURL + "/v1/projects/p/messages:batchSend")
            request.method = .POST
            let response = try await sandbox.client.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 16)
            #expect(response.status.code == 404)
            let error = try JSONDecoder().decode(FCMErrorBody.self, from: Data(buffer: body))
            #expect(error.error.status == "NOT_FOUND")
        }
    }

    /// The listener negotiates HTTP/2 by ALPN, as fcm.googleapis.com does.
    @Test func theListenerSpeaksHTTP2() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.fcmPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            try await raw.send(
                streamID: 1,
                headers: [
                    (":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                    (":path", "/v1/projects/\(FCMFixtures.project)/messages:send"),
                ],
                body: "{}"
            )
            var status: String?
            for await frame in raw.frames {
                if let value = frame.payload.status {
                    status = value
                    break
                }
            }
            await raw.close()
            #expect(status == "401")
        }
    }

    /// A port in use fails the sandbox's start, and ends the listeners already running.
    @Test(.timeLimit(.minutes(1)))
    func anFCMPortInUseFailsTheStart() async throws {
        try await SandboxHarness.with { sandbox in
            var configuration = SandboxConfiguration(tls: SandboxHarness.tls)
            configuration.apnsPort = 0
            configuration.controlPort = 0
            configuration.fcmPort = sandbox.endpoints.fcmPort
            var logger = Logger(label: "test.sandbox.busy")
            logger.logLevel = .critical
            let busy = try Sandbox(configuration: configuration, logger: logger)
            await #expect(throws: (any Error).self) { try await busy.run() }
            await #expect(throws: (any Error).self) { try await busy.endpoints() }
        }
    }
}
