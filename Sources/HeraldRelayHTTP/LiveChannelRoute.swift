import Foundation
import HeraldHTTPSupport
import HeraldRelay
import HeraldRelayAPI
public import Hummingbird
public import HummingbirdWebSocket
public import NIOCore

/// `GET /v1/devices/{id}/live` (WebSocket): the device's live channel while its app is in the
/// foreground. The device credential comes as `Authorization: Bearer …` or `?credential=…` (for
/// clients that cannot set headers on an upgrade).
///
/// Client → relay, JSON text frames (`LiveClientFrame`): `{"type":"presence","state":"active",
/// "conversation":"c"}` (or `"background"`), `{"type":"ack","message_id":"…"}`,
/// `{"type":"call.ringing"|"call.answer"|"call.decline","call_id":"…"}`. Relay → client
/// (`LiveServerFrame`): `{"type":"message",…}`, `{"type":"call.stop","call_id","reason","state"}`,
/// `{"type":"call.state","call_id","state","device_id"?,"accepted"}`.
///
/// A refusal is the same JSON as every other route's: 401 without a credential or with one the
/// relay does not know (or no longer knows), 403 for the API key or another device's credential.
/// Over an upgrade request it reaches the client through `UpgradeRefusal` (the listener writes
/// it in place of hummingbird-websocket's bare 400); over a plain GET it is the route's answer.
enum LiveChannelRoute {
    static func add(to router: Router<RelayRequestContext>, relay: Relay, api: API) {
        router.ws("/v1/devices/:id/live") { request, context in
            let id = try context.parameters.require("id")
            do throws(RelayError) {
                try await authorize(request, deviceID: id, api: api)
            } catch {
                let refusal = UpgradeRefusal(
                    status: error.status,
                    error: .init(error: error.identifier, reason: error.detail, field: error.field)
                )
                await refusal.send(on: context.channel)
                throw Refused(refusal: refusal)
            }
            // A plain GET reaches this route too (hummingbird-websocket answers it 200 and
            // nothing): say what the route is instead.
            guard Self.asksForWebSocket(request.headers) else { throw UpgradeRequired() }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let deviceID = try context.requestContext.parameters.require("id")
            let session = await relay.live.open(deviceID: deviceID)
            relay.logger.info("live channel opened", metadata: ["device": "\(deviceID)"])
            // Closed however serving ends, and awaited (not a `defer`): the close tells the other
            // nodes the channel is gone before the handler returns.
            var failure: (any Error)?
            do {
                try await serve(session, inbound: inbound, outbound: outbound, relay: relay)
            } catch {
                failure = error
            }
            await relay.live.close(session)
            relay.logger.info("live channel closed", metadata: ["device": "\(deviceID)"])
            if let failure { throw failure }
        }
    }

    /// Reads the device's frames and writes the messages for it, until one side ends.
    private static func serve(
        _ session: LiveChannels.Session,
        inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        relay: Relay
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await message in inbound.messages(maxSize: 64 * 1024) {
                    guard case .text(let text) = message, let frame = LiveClientFrame(jsonText: text) else { continue }
                    await handle(frame, session: session, relay: relay)
                }
            }
            group.addTask {
                for await frame in session.frames {
                    try await outbound.write(.text(try frame.jsonText()))
                }
            }
            // The device hangs up, or a newer channel for the device replaced this one.
            try await group.next()
            group.cancelAll()
        }
    }
}

extension LiveChannelRoute {
    /// One frame from the device. A call frame is answered on the channel with `call.state` (and
    /// `call.stop` when the call ended before the device rang); one the relay refuses (an unknown
    /// call, another user's) is answered `call.state` with `accepted: false` where the call is
    /// known to the device, and otherwise logged and dropped.
    static func handle(_ frame: LiveClientFrame, session: LiveChannels.Session, relay: Relay) async {
        switch frame {
        case .presence(let conversation):
            await relay.live.presence(session, active: conversation)
        case .ack(let messageID):
            await relay.live.acknowledge(session, messageID: messageID)
        case .callRinging(let callID), .callAnswer(let callID), .callDecline(let callID):
            do throws(RelayError) {
                let device = try await relay.activation.authenticatedDevice(id: session.deviceID)
                let view: CallView
                switch frame {
                case .callRinging: view = try await relay.calls.ringing(id: callID, device: device)
                case .callAnswer: view = try await relay.calls.answer(id: callID, device: device)
                default: view = try await relay.calls.decline(id: callID, device: device)
                }
                relay.live.send(
                    .callState(
                        callID: callID,
                        state: view.state,
                        deviceID: view.answeredBy ?? view.declinedBy,
                        accepted: true
                    ),
                    to: session.deviceID
                )
            } catch {
                relay.logger.info(
                    "call frame refused",
                    metadata: ["device": "\(session.deviceID)", "call": "\(callID)", "reason": "\(error.detail)"]
                )
                if error == RelayError.conflict,
                    let device = try? await relay.activation.authenticatedDevice(id: session.deviceID),
                    let view = try? await relay.calls.call(id: callID, for: device)
                {
                    relay.live.send(
                        .callState(
                            callID: callID,
                            state: view.state,
                            deviceID: view.answeredBy ?? view.declinedBy,
                            accepted: false
                        ),
                        to: session.deviceID
                    )
                }
            }
        }
    }

    /// The device's own credential, from the header or `?credential=`; the API key is 403.
    static func authorize(_ request: Request, deviceID: String, api: API) async throws(RelayError) {
        guard let credential = api.bearer(request) ?? request.uri.queryParameters.get("credential")
        else {
            throw RelayError.unauthorized.with(
                detail:
                    "the live channel needs the device credential (authorization: Bearer <credential> or ?credential=)"
            )
        }
        if case .caller = api.identify(credential, counting: false) {
            throw RelayError.forbidden.with(detail: "the live channel needs a device credential, not an API key")
        }
        let device = try await api.relay.activation.authenticateDevice(credential: credential)
        guard device.id == deviceID else {
            throw RelayError.forbidden.with(detail: "the credential is for another device")
        }
    }

    /// Whether the request asks to become a WebSocket (`Upgrade: websocket`, any case).
    static func asksForWebSocket(_ headers: HTTPFields) -> Bool {
        headers[values: .upgrade].contains { value in
            value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "websocket" }
        }
    }

    /// A request without the upgrade headers, authenticated: 426, naming the protocol to use.
    struct UpgradeRequired: JSONResponseError {
        var status: HTTPResponse.Status { .upgradeRequired }

        func response(from request: Request, context: some RequestContext) throws -> Response {
            var response = JSONResponse.error(
                status,
                "upgrade_required",
                reason: "the live channel is a WebSocket: send the request with Upgrade: websocket"
            )
            response.headers[.upgrade] = "websocket"
            response.headers[.connection] = "Upgrade"
            return response
        }
    }

    /// A refused upgrade: over a plain GET this is the answer, over an upgrade request
    /// hummingbird-websocket drops it and the listener writes the `UpgradeRefusal` sent before.
    struct Refused: JSONResponseError {
        let refusal: UpgradeRefusal

        var status: HTTPResponse.Status { refusal.status }

        func response(from request: Request, context: some RequestContext) throws -> Response {
            JSONResponse.error(
                refusal.status,
                refusal.error.error,
                reason: refusal.error.reason,
                field: refusal.error.field
            )
        }
    }
}

/// The relay's request context: Hummingbird's, with the WebSocket handler slot, and the request's
/// connection (where a refused live-channel upgrade sends its answer).
public struct RelayRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    /// The connection the request came on.
    public let channel: any Channel
    /// Who the request authenticated as, on a route of a group that takes a credential
    /// (`RelayAuthMiddleware`).
    var authenticated: Authenticated?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}
