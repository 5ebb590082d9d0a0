public import AsyncHTTPClient
import Foundation
public import HeraldDomain
import HeraldMacros
public import HeraldPush
public import HeraldRelayAPI
import NIOCore
import NIOHTTP1

/// The phone's calls to the relay (and its setup calls to the sandbox), JSON over HTTP.
@MemberwiseInit
public struct DeviceHTTP: Sendable {
    let http: HTTPClient

    /// Sends a request; a status other than `expect` is a `DeviceError` holding the JSON reason.
    func call<Response: Decodable>(
        _ method: HTTPMethod,
        _ url: String,
        bearer: String? = nil,
        body: (some Encodable)? = Optional<String>.none,
        expect: Int,
        as type: Response.Type,
        failure: (String) -> DeviceError
    ) async throws -> Response {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let bearer { request.headers.add(name: "authorization", value: "Bearer " + bearer) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await http.execute(request, timeout: .seconds(30))
            bytes = try await response.body.collect(upTo: 4 << 20)
        } catch {
            throw failure("\(method.rawValue) \(url): \(error)")
        }
        let data = Data(bytes.readableBytesView)
        guard Int(response.status.code) == expect else {
            let reason =
                ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any])?["reason"] as? String
                ?? String(decoding: data.prefix(200), as: UTF8.self)
            throw failure("\(method.rawValue) \(url) answered \(response.status.code): \(reason)")
        }
        if Response.self == Empty.self { return Empty() as! Response }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw failure("\(method.rawValue) \(url) answered something unexpected")
        }
    }

    struct Empty: Decodable {}

    // MARK: Relay

    public func activate(
        relay: String,
        _ request: ActivationRequest,
        bearer: String
    ) async throws
        -> ActivationResponse
    {
        try await call(
            .POST,
            relay + "/v1/activations",
            bearer: bearer,
            body: request,
            expect: 201,
            as: ActivationResponse.self,
            failure: DeviceError.relay
        )
    }

    public func updateTokens(
        relay: String,
        deviceID: String,
        _ update: TokenUpdateRequest,
        credential: String
    )
        async throws -> DeviceView
    {
        try await call(
            .PUT,
            relay + "/v1/devices/\(deviceID)/tokens",
            bearer: credential,
            body: update,
            expect: 200,
            as: DeviceView.self,
            failure: DeviceError.relay
        )
    }

    public func heartbeat(relay: String, deviceID: String, _ beat: HeartbeatRequest, credential: String) async throws {
        _ = try await call(
            .PUT,
            relay + "/v1/devices/\(deviceID)/presence",
            bearer: credential,
            body: beat,
            expect: 200,
            as: PresenceView.self,
            failure: DeviceError.relay
        )
    }

    public func message(relay: String, id: String, credential: String) async throws -> MessageView {
        try await get(relay + "/v1/messages/\(id)", bearer: credential)
    }

    /// A `GET` from the relay answered 200 with `Response`.
    private func get<Response: Decodable>(_ url: String, bearer: String) async throws -> Response {
        try await call(.GET, url, bearer: bearer, expect: 200, as: Response.self, failure: DeviceError.relay)
    }

    /// `GET /v1/apps/{id}/web-push` with the API key: the application server key a browser
    /// subscribes with.
    public func webPushApp(relay: String, app: String, apiKey: String) async throws -> WebPushAppView {
        try await get(relay + "/v1/apps/\(app)/web-push", bearer: apiKey)
    }

    // MARK: Sandbox

    /// A new emulated phone at the sandbox: its id; the tokens come over the device connection.
    public func registerSandboxDevice(
        sandbox: String,
        bundleID: String,
        messagingDelay: Duration,
        voipDelay: Duration,
        platform: DevicePlatform = .ios,
        apnsEnvironment: APNsEnvironment? = nil,
        applicationServerKey: String? = nil
    ) async throws -> String {
        struct Request: Encodable {
            var bundle_id: String
            var platform: String
            /// iOS: the environment whose tokens the sandbox issues (left out: development).
            var apns_environment: String?
            /// A browser: the app's VAPID public key its subscription is bound to.
            var application_server_key: String?
            var messaging_token_delay_ms: Int64
            var voip_token_delay_ms: Int64
        }
        struct Reply: Decodable {
            var device_id: String
        }
        let reply = try await call(
            .POST,
            sandbox + "/sandbox/devices",
            body: Request(
                bundle_id: bundleID,
                platform: platform.rawValue,
                apns_environment: apnsEnvironment?.rawValue,
                application_server_key: applicationServerKey,
                messaging_token_delay_ms: messagingDelay.components.seconds * 1000
                    + messagingDelay.components.attoseconds / 1_000_000_000_000_000,
                voip_token_delay_ms: voipDelay.components.seconds * 1000
                    + voipDelay.components.attoseconds / 1_000_000_000_000_000
            ),
            expect: 201,
            as: Reply.self,
            failure: DeviceError.sandbox
        )
        return reply.device_id
    }
}

extension DeviceHTTP {
    /// `POST /v1/calls/{id}/ringing|answer|decline` with the device credential, for a device
    /// without its live channel.
    public func reportCall(relay: String, id: String, action: String, credential: String) async throws -> CallView {
        try await call(
            .POST,
            relay + "/v1/calls/\(id)/\(action)",
            bearer: credential,
            body: [String: String](),
            expect: 200,
            as: CallView.self,
            failure: DeviceError.relay
        )
    }
}
