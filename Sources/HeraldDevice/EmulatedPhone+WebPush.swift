import Crypto
import Foundation
import HeraldCrypto
import HeraldEncoding
import HeraldPush
import HeraldRelayAPI
import HeraldWebPushCore

/// The browser's side of Web Push: its subscription keys (made here, never shown to the push
/// service), the subscription it activates with, and the service worker's `push` event.
extension EmulatedPhone {
    /// The subscription keys, in the app-group store: the P-256 private key's 32 raw bytes, then
    /// the 16-byte auth secret. Made on first use, as `pushManager.subscribe` makes them.
    func browserKeys() throws -> (privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8]) {
        let file = store.path("webpush-keys")
        if let data = FileManager.default.contents(atPath: file), data.count == 48,
            let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: data.prefix(32))
        {
            return (key, Array(data.suffix(16)))
        }
        let key = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        try? FileManager.default.removeItem(atPath: file)
        try SecretFile.write(Array(key.rawRepresentation) + auth, to: file, mode: 0o600)
        return (key, auth)
    }

    /// `PushSubscription.toJSON()` for `endpoint` (the sandbox's minted token) and this browser's
    /// keys: what the activation and a token update carry.
    func subscription(endpoint: String) throws -> WebPushSubscriptionBody {
        let keys = try browserKeys()
        return WebPushSubscriptionBody(
            endpoint: endpoint,
            keys: .init(
                p256dh: Base64URL.encode(Array(keys.privateKey.publicKey.x963Representation)),
                auth: Base64URL.encode(keys.auth)
            )
        )
    }

    /// A browser's application server key, from the relay (`GET /v1/apps/{id}/web-push`): the
    /// sandbox binds the subscription to it, as `pushManager.subscribe` does; nil for a phone.
    func applicationServerKey() async throws -> String? {
        guard configuration.platform == .web else { return nil }
        let view = try await http.webPushApp(
            relay: configuration.relayURL,
            app: configuration.bundleID,
            apiKey: configuration.apiKey
        )
        timeline.record(
            "app",
            "relay",
            "application server key fetched",
            detail: "GET /v1/apps/\(configuration.bundleID)/web-push: VAPID key \(view.vapidKey)"
        )
        return view.applicationServerKey
    }

    /// The service worker's `push` event: the body decrypted (RFC 8291) with the subscription's
    /// keys, its JSON object of strings opened as the Android messaging service opens its data.
    func receive(_ push: DeliveredWebPush) async {
        let delivery = DataDelivery(
            webPush: true,
            pushType: "webpush",
            priority: .fcm(push.urgency),
            bytes: push.body.count,
            detail: "TTL \(push.ttl)" + (push.topic.map { ", topic \($0)" } ?? "")
        )
        let data: [String: String]
        do {
            let keys = try browserKeys()
            let plaintext = try WebPushEncryption.decrypt(push.body, privateKey: keys.privateKey, auth: keys.auth)
            guard let object = try? JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: String] else {
                record(diagnostic: "web push \(push.id): the decrypted body is not a JSON object of strings")
                return
            }
            data = object
        } catch {
            timeline.record(delivery.network, delivery.handler, "push not decrypted", detail: "\(error)")
            record(diagnostic: "web push \(push.id) was not decrypted: \(error)")
            return
        }
        await receive(data: data, via: delivery)
    }
}
