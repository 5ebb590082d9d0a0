import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// Which errors from the HTTP client mean that no connection could be made, so the request was
/// never sent: refused, unreachable host, connect or TLS handshake timeout, a failed handshake.
/// A connection lost after the request went out is not one of them (the network may have the
/// push).
enum ConnectFailure {
    static func matches(_ error: any Error) -> Bool {
        switch error {
        case is NIOConnectionError:
            return true
        case let error as NIOSSLError:
            if case .handshakeFailed = error { return true }
            return false
        case let error as HTTPClientError:
            return error == .connectTimeout || error == .tlsHandshakeTimeout
        case let error as ChannelError:
            if case .connectTimeout = error { return true }
            return false
        case let error as IOError:
            return [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ETIMEDOUT].contains(error.errnoCode)
        default:
            return false
        }
    }
}
