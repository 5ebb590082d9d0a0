import Foundation
import HeraldHTTPSupport
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
        if let user = error.user { return NoDevicesBody.answer(error, user: user) }
        var response = JSONResponse.error(error.httpStatus, error.identifier, reason: error.detail, field: error.field)
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

    /// Whether the request carries an API key (the current one or a previous one).
    func isBackend(_ request: Request) -> Bool {
        guard let token = bearer(request) else { return false }
        return configuration.apiKeyMatch(Array(token.utf8)) != .none
    }

    /// `isBackend`, for a request the key lets in: a previous key's use is counted.
    func admitsBackend(_ request: Request) -> Bool {
        guard let token = bearer(request) else { return false }
        switch configuration.apiKeyMatch(Array(token.utf8)) {
        case .current:
            return true
        case .previous:
            previousAPIKeyRequests.increment()
            return true
        case .none:
            return false
        }
    }

    /// The API key; a device credential here is 403, anything else 401.
    func requireBackend(_ request: Request) async throws(RelayError) {
        guard let token = bearer(request) else {
            throw RelayError.unauthorized.with(detail: "this endpoint needs the API key (authorization: Bearer <key>)")
        }
        if admitsBackend(request) { return }
        if (try? await relay.activation.authenticateDevice(credential: token)) != nil {
            throw RelayError.forbidden.with(detail: "this endpoint needs the API key, not a device credential")
        }
        throw RelayError.unauthorized.with(detail: "the API key is not valid")
    }

    /// The device whose credential was presented; the API key here is 403, anything else 401.
    func requireDevice(_ request: Request) async throws(RelayError) -> DeviceRecord {
        guard let token = bearer(request) else {
            throw RelayError.unauthorized.with(
                detail: "this endpoint needs the device credential (authorization: Bearer <credential>)"
            )
        }
        if isBackend(request) {
            throw RelayError.forbidden.with(detail: "this endpoint needs a device credential, not the API key")
        }
        return try await relay.activation.authenticateDevice(credential: token)
    }

    /// The API key, or the credential of device `id` itself.
    func requireBackendOrDevice(_ request: Request, id: String) async throws(RelayError) {
        if admitsBackend(request) { return }
        let device = try await requireDevice(request)
        guard device.id == id else { throw RelayError.forbidden.with(detail: "the credential is for another device") }
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
