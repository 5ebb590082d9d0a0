public import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// A listener that could not start, named: NIO's own error for a port in use
/// (`bind(descriptor:ptr:bytes:): Address already in use (errno: 98)`) says neither which
/// listener nor which port, and `herald serve` opens up to five.
public struct ListenerError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case portInUse
        case notPermitted
        case addressUnavailable
    }

    private let code: Code
    /// Which listener: `the relay`, `the sandbox's control API`, ….
    public let listener: String
    public let host: String
    public let port: Int

    /// `error` said for `listener` on `host`:`port`, when it is a bind failure; nil otherwise.
    public init?(_ error: any Error, listener: String, host: String, port: Int) {
        guard let error = error as? IOError else { return nil }
        switch error.errnoCode {
        case EADDRINUSE: code = .portInUse
        case EACCES: code = .notPermitted
        case EADDRNOTAVAIL: code = .addressUnavailable
        default: return nil
        }
        self.listener = listener
        self.host = host
        self.port = port
    }

    public var description: String {
        let place = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        return switch code {
        case .portInUse: "\(listener) cannot listen on \(place): the port is in use (another process holds it)"
        case .notPermitted: "\(listener) cannot listen on \(place): not permitted (a port under 1024 needs privileges)"
        case .addressUnavailable: "\(listener) cannot listen on \(place): the address is not one of this machine's"
        }
    }

    /// Runs `body` (a listener's `run`), naming a bind failure after `listener`, `host` and `port`.
    public static func naming<T>(
        _ listener: String,
        host: String,
        port: Int,
        _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch {
            throw ListenerError(error, listener: listener, host: host, port: port) ?? error
        }
    }
}
