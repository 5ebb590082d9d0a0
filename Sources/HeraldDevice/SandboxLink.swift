import Foundation
import HeraldMacros
import HeraldPush
import HummingbirdWSClient
public import Logging

/// What the sandbox sends an emulated phone over its device connection.
public enum SandboxEvent: Sendable, Hashable {
    /// iOS handed the app a token (`messaging` or `voip`).
    case token(kind: String, value: String)
    /// A push arrived.
    case notification(DeliveredPush)
    /// An FCM data message arrived (Android).
    case fcmMessage(DeliveredFCMMessage)
    /// A Web Push message arrived (a browser): its body still encrypted for the subscription.
    case webPush(DeliveredWebPush)
}

/// A Web Push message as the browser's push service hands it over (`web_push` frames): the
/// `aes128gcm` body (RFC 8291) and the headers the application server sent.
@MemberwiseInit
public struct DeliveredWebPush: Sendable, Hashable {
    public var id: String
    public var endpoint: String
    public var body: [UInt8]
    public var ttl: Int
    public var urgency: String
    public var topic: String?
}

/// A push as the phone receives it.
@MemberwiseInit
public struct DeliveredPush: Sendable, Hashable {
    public var apnsID: String
    public var topic: String
    public var pushType: String
    public var priority: Int
    public var payload: String
}

/// The phone's persistent connection to the sandbox (`/sandbox/devices/{id}/connect`).
public enum SandboxLink {
    /// Connects and hands `received` what arrives, in order, until the connection ends or the
    /// task is cancelled: in the caller's task (the phone's loop), not in one of its own.
    public static func receive(
        sandbox: String,
        deviceID: String,
        logger: Logger,
        _ received: @escaping @Sendable (SandboxEvent) -> Void
    ) async throws {
        let url =
            sandbox.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(
                of: "https://",
                with: "wss://"
            ) + "/sandbox/devices/\(deviceID)/connect"
        do {
            try await WebSocketClient.connect(url: url, logger: logger) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message, let event = parse(text) else { continue }
                    received(event)
                }
            }
        } catch {
            throw DeviceError.sandbox("the device connection failed: \(error)")
        }
    }

    static func parse(_ text: String) -> SandboxEvent? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            return nil
        }
        switch object["type"] as? String {
        case "token":
            guard let kind = object["kind"] as? String, let token = object["token"] as? String else { return nil }
            return .token(kind: kind, value: token)
        case "notification":
            guard let push = object["notification"] as? [String: Any],
                let apnsID = push["apns_id"] as? String,
                let payload = push["payload"] as? String
            else { return nil }
            return .notification(
                DeliveredPush(
                    apnsID: apnsID,
                    topic: push["topic"] as? String ?? "",
                    pushType: push["push_type"] as? String ?? "alert",
                    priority: push["priority"] as? Int ?? 10,
                    payload: payload
                )
            )
        case "fcm_message":
            guard let message = object["message"] as? [String: Any],
                let data = message["data"] as? [String: String]
            else { return nil }
            return .fcmMessage(
                DeliveredFCMMessage(
                    name: message["name"] as? String ?? "",
                    data: data,
                    priority: message["priority"] as? String ?? "NORMAL",
                    collapseKey: message["collapse_key"] as? String
                )
            )
        case "hms_message":
            // Push Kit's data message carries its data as one string (Herald's JSON object); the
            // app's messaging service opens it as FCM's.
            guard let message = object["message"] as? [String: Any],
                let data = (message["data"] as? String).flatMap(DataFields.fields)
            else { return nil }
            return .fcmMessage(
                DeliveredFCMMessage(
                    name: message["request_id"] as? String ?? "",
                    data: data,
                    priority: message["urgency"] as? String ?? "NORMAL",
                    collapseKey: (message["collapse_key"] as? Int).map(String.init)
                )
            )
        case "web_push":
            guard let message = object["message"] as? [String: Any],
                let encoded = message["body"] as? String,
                let body = Data(base64Encoded: encoded)
            else { return nil }
            return .webPush(
                DeliveredWebPush(
                    id: message["id"] as? String ?? "",
                    endpoint: message["endpoint"] as? String ?? "",
                    body: Array(body),
                    ttl: message["ttl"] as? Int ?? 0,
                    urgency: message["urgency"] as? String ?? "normal",
                    topic: message["topic"] as? String
                )
            )
        default:
            return nil
        }
    }
}
