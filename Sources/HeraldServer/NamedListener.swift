import HeraldHTTPSupport
import ServiceLifecycle

/// A listener under the `ServiceGroup` whose bind failure names it and its port
/// (`ListenerError`) instead of NIO's bare errno.
struct NamedListener: Service {
    let base: any Service
    let listener: String
    let host: String
    let port: Int

    func run() async throws {
        try await ListenerError.naming(listener, host: host, port: port) { try await base.run() }
    }
}
