import Foundation
import HeraldHTTPSupport
import HeraldObservability
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Hummingbird
import Metrics
import NIOCore

/// Authentication and body decoding shared by the routes.
struct API: Sendable {
    let relay: Relay
    let configuration: RelayHTTPConfiguration
    /// Requests made with a key of `previousAPIKeys`: zero for long means the rotation can end.
    let previousAPIKeyRequests = Counter(label: "herald_api_key_previous_requests_total")

    // MARK: Authentication

    /// The token of `authorization: Bearer <token>`, if present.
    func bearer(_ request: Request) -> String? {
        Bearer.token(in: request.headers[.authorization]).map(String.init)
    }

    /// Who a bearer token is among the backends' keys: the configured API key (a previous one
    /// too, counted when `counting`), a stored key, a revoked stored key, or none of them.
    func identify(_ token: String, counting: Bool) -> BackendIdentity {
        let bytes = Array(token.utf8)
        switch relay.keys.keyring.lookup(bytes) {
        case .caller(let caller): return .caller(caller)
        case .revoked(let id): return .revoked(id: id)
        case .unknown: return .none
        case .notAKey: break
        }
        switch configuration.apiKeyMatch(bytes) {
        case .current:
            return .caller(.configuredKey)
        case .previous:
            if counting { previousAPIKeyRequests.increment() }
            return .caller(.configuredKey)
        case .none:
            return .none
        }
    }

    enum BackendIdentity {
        case caller(Caller)
        case revoked(id: String)
        case none
    }

    /// Whether the request carries a valid API key of any scope.
    func isBackend(_ request: Request) -> Bool {
        guard let token = bearer(request), case .caller = identify(token, counting: false) else { return false }
        return true
    }

    /// The caller, when the request carries a valid API key with `scope`; `nil` for anything else
    /// (a device credential, no credential), which the route then checks as a device.
    func admitsBackend(_ request: Request, _ scope: APIScope) throws(RelayError) -> Caller? {
        guard let token = bearer(request) else { return nil }
        switch identify(token, counting: true) {
        case .caller(let caller):
            guard caller.scopes.contains(scope) else { throw Self.missing(scope, caller) }
            // The access line names the key (its public id, never the token).
            AccessLog.current?["key"] = .string(caller.actor)
            return caller
        case .revoked(let id):
            throw RelayError.unauthorized.with(detail: "the API key \(id) was revoked")
        case .none:
            return nil
        }
    }

    /// An API key with `scope`; a device credential here is 403, anything else 401.
    func requireBackend(_ request: Request, _ scope: APIScope) async throws(RelayError) -> Caller {
        guard let token = bearer(request) else {
            throw RelayError.unauthorized.with(detail: "this endpoint needs an API key (authorization: Bearer <key>)")
        }
        if let caller = try admitsBackend(request, scope) { return caller }
        if (try? await relay.activation.authenticateDevice(credential: token)) != nil {
            throw RelayError.forbidden.with(detail: "this endpoint needs an API key, not a device credential")
        }
        throw RelayError.unauthorized.with(detail: "the API key is not valid")
    }

    static func missing(_ scope: APIScope, _ caller: Caller) -> RelayError {
        RelayError.forbidden.with(detail: "the API key \(caller.keyID ?? "") lacks the '\(scope.rawValue)' scope")
    }

    /// An app key acting for another app, on a request that names the app: 403.
    static func require(_ caller: Caller, app: String) throws(RelayError) {
        guard caller.permits(app: app) else {
            throw RelayError.forbidden.with(detail: "the API key is for app \(caller.appID ?? ""), not \(app)")
        }
    }

    /// An app key asking for another app's record by its id: 404, as if there were none (an id
    /// does not tell an app key that another app has it).
    static func visible(_ caller: Caller, app: String) throws(RelayError) {
        guard caller.permits(app: app) else { throw RelayError.notFound }
    }

    /// A route an app key cannot use (it would act across apps): 403 saying so.
    static func requireAdmin(_ caller: Caller, _ what: String) throws(RelayError) {
        guard caller.appID == nil else {
            throw RelayError.forbidden.with(detail: "\(what) needs an admin key; this key is for app \(caller.appID!)")
        }
    }

    /// The device whose credential was presented; the API key here is 403, anything else 401.
    func requireDevice(_ request: Request) async throws(RelayError) -> DeviceRecord {
        guard let token = bearer(request) else {
            throw RelayError.unauthorized.with(
                detail: "this endpoint needs the device credential (authorization: Bearer <credential>)"
            )
        }
        if isBackend(request) {
            throw RelayError.forbidden.with(detail: "this endpoint needs a device credential, not an API key")
        }
        return try await relay.activation.authenticateDevice(credential: token)
    }

    /// The credential of device `id` itself (the path's device); another device's is 403.
    @discardableResult
    func requireDevice(_ request: Request, id: String) async throws(RelayError) -> DeviceRecord {
        let device = try await requireDevice(request)
        guard device.id == id else { throw RelayError.forbidden.with(detail: "the credential is for another device") }
        return device
    }

    // MARK: Bodies

    /// Reads and decodes a JSON body; a 413 past the size limit, a 400 naming the field at fault.
    func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maximumBodyBytes)
        } catch {
            throw RelayError.invalidField("body", "is larger than \(configuration.maximumBodyBytes) bytes")
                .tooLarge
        }
        do throws(JSONBodyError) {
            return try JSONBody.decode(T.self, from: Array(buffer.readableBytesView))
        } catch {
            throw RelayError.invalidField(error.field, error.reason)
        }
    }
}
