import Foundation
import HeraldRelay
import HeraldRelayAPI
import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// `GET /v1/devices/{id}/live` (WebSocket): the device's live channel while its app is in the
/// foreground. The device credential comes as `Authorization: Bearer …` or `?credential=…` (for
/// clients that cannot set headers on an upgrade).
///
/// Client → relay, JSON text frames: `{"type":"presence","state":"active","conversation":"c"}`
/// (or `"background"`), `{"type":"ack","message_id":"…"}`. Relay → client:
/// `{"type":"message","message_id","conversation","from":{"id","name"},"text","sent_at"}`.
enum LiveChannelRoute {
    static func add(to router: Router<BasicWebSocketRequestContext>, relay: Relay, api: API) {
        router.ws("/v1/devices/:id/live") { request, context in
            let id = try context.parameters.require("id")
            let credential = api.bearer(request) ?? request.uri.queryParameters.get("credential")
            guard let credential, let device = try? await relay.activation.authenticateDevice(credential: credential),
                device.id == id
            else { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let deviceID = try context.requestContext.parameters.require("id")
            let session = relay.live.open(deviceID: deviceID)
            relay.logger.info("live channel opened", metadata: ["device": "\(deviceID)"])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            defer {
                relay.live.close(session)
                relay.logger.info("live channel closed", metadata: ["device": "\(deviceID)"])
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 64 * 1024) {
                        guard case .text(let text) = message,
                            let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                        else { continue }
                        switch object["type"] as? String {
                        case "presence":
                            let active = object["state"] as? String == "active"
                            relay.live.presence(session, active: active ? object["conversation"] as? String : nil)
                        case "ack":
                            if let id = object["message_id"] as? String {
                                relay.live.acknowledge(session, messageID: id)
                            }
                        default:
                            continue
                        }
                    }
                }
                group.addTask {
                    for await message in session.messages {
                        var object =
                            try JSONSerialization.jsonObject(with: try encoder.encode(message)) as? [String: Any]
                        object?["type"] = "message"
                        let data = try JSONSerialization.data(withJSONObject: object ?? [:], options: [.sortedKeys])
                        try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
                    }
                }
                // The device hangs up, or a newer channel for the device replaced this one.
                try await group.next()
                group.cancelAll()
            }
        }
    }
}
