import Foundation
import HeraldServer
import Logging
import Testing

/// `herald serve` run in process (tests, an embedding app) is stopped by cancelling its task, not
/// by a signal: every service must then end, not loop on sleeps that now throw at once.
@Suite struct ServeCancellationTests {
    @Test
    func cancelledServeReturns() async throws {
        let directory = NSTemporaryDirectory() + "herald-cancel-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let yaml = """
            host: 127.0.0.1
            port: 0
            data: \(directory)/data
            keys_dir: \(directory)/keys
            sandbox: {apns_port: 0, apns_production_port: 0, fcm_port: 0, control_port: 0}
            """
        let file = try ConfigurationFile.parse(Data(yaml.utf8), format: .yaml, path: "serve.yaml")
        var configuration = try HeraldConfiguration(layers: [file])
        var logger = Logger(label: "serve-cancellation")
        logger.logLevel = .warning
        configuration.logLevel = .warning
        let server = HeraldServer(configuration: configuration, environment: [:], logger: logger)
        let (banners, banner) = AsyncStream.makeStream(of: [String].self)
        let run = Task { try await server.serve { lines in banner.yield(lines) } }
        var started: [String] = []
        for await lines in banners {
            started = lines
            break
        }
        #expect(started.first?.hasPrefix("herald serve") == true)
        run.cancel()
        // Before the fix the janitor, the chat timer sweep and the webhook dispatcher looped on
        // `Task.sleep` throwing at once, so this never returned (and spun a core).
        // Raced in unstructured tasks: a run that never ends must fail the test, not hang it.
        let (ends, end) = AsyncStream.makeStream(of: Bool.self)
        Task {
            _ = await run.result
            end.yield(true)
        }
        // A bound, not a wait for something: the run normally ends in milliseconds.
        let bound = Task {
            try? await Task.sleep(for: .seconds(30))
            end.yield(false)
        }
        var iterator = ends.makeAsyncIterator()
        let ended = await iterator.next() ?? false
        bound.cancel()
        #expect(ended, "herald serve did not return within 30 s of its task being cancelled")
    }
}
