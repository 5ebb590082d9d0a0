import Foundation
import HeraldHTTPSupport
import HeraldObservability
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Hummingbird
import Metrics
import NIOCore

/// Authentication, body decoding and error answers shared by the routes.
struct API: Sendable {
    let relay: Relay
    let configuration: RelayHTTPConfiguration
    /// Requests made with a key of `previousAPIKeys`: zero for long means the rotation can end.
    let previousAPIKeyRequests = Counter(label: "herald_api_key_previous_requests_total")

    /// Runs a route; every `RelayError` becomes its JSON answer, anything else a 500 without details.
    func handle(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let error as RelayError {
            return Self.answer(error)
        } catch let error as TooLargeError {
            return JSONResponse.error(.contentTooLarge, "body_too_large", reason: error.error.detail, field: "body")
        } catch {
            relay.logger.error("unexpected failure in a route", metadata: ["error": "\(type(of: error))"])
            return JSONResponse.error(.internalServerError, "internal", reason: "the relay failed")
        }
    }

    static func answer(_ error: RelayError) -> Response {
        // The refusal's kind on the access line; not its reason, which may quote the request.
        AccessLog.current?["error"] = .string(error.identifier)
        if let user = error.user { return NoDevicesBody.answer(error, user: user) }
        var response = JSONResponse.error(error.httpStatus, error.identifier, reason: error.detail, field: error.field)
        if let wait = error.retryAfter {
            // A quota: the same request is admitted once the bucket holds it again.
            response.headers[.retryAfter] = "\(max(1, Int((wait / .seconds(1)).rounded(.up))))"
        }
        if response.status == .serviceUnavailable {
            // The store is away (a database restarting or failing over): nothing was written, and
            // the same request, with its idempotency key, may be sent again shortly.
            response.headers[.retryAfter] = "\(retryAfterSeconds)"
        }
        return response
    }

    /// What a 503 tells the client to wait before sending again.
    static let retryAfterSeconds = 2

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

    /// An API key with `scope` acting for device `id`'s app, or the credential of device `id`
    /// itself. Answers the caller (`nil` for the device).
    @discardableResult
    func requireBackendOrDevice(_ request: Request, id: String, _ scope: APIScope) async throws(RelayError) -> Caller? {
        if let caller = try admitsBackend(request, scope) {
            if caller.appID != nil { try Self.visible(caller, app: try await relay.activation.device(id: id).app) }
            return caller
        }
        _ = try await requireDevice(request, id: id)
        return nil
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

/// A refusal, as JSON.
extension RelayError {
    /// Marks a body-size refusal, answered as 413.
    var tooLarge: TooLargeError { TooLargeError(error: self) }
}

/// A body over the size limit: 413 with the usual JSON.
struct TooLargeError: Error {
    let error: RelayError
}

extension RelayError {
    /// The HTTP status that carries this kind of error.
    var httpStatus: HTTPResponse.Status {
        if isInvalidField { return .badRequest }
        if isTooManyRequests { return .tooManyRequests }
        // The user's state refuses the message (no device yet): the same request may succeed once
        // it changed, which is what 409 says; 404 would read as an unknown route or adapter.
        if isNoDevices { return .conflict }
        switch self {
        case .unauthorized: return .unauthorized
        case .forbidden: return .forbidden
        case .notFound: return .notFound
        case .conflict: return .conflict
        case .unavailable: return .serviceUnavailable
        // A kind added to the relay without a status here shows as a 500, not as a guess.
        default: return .internalServerError
        }
    }
}
