import Foundation
import HeraldCrypto
import HeraldStore

extension WebhookEvent {
    /// The webhook events that report one change of `app`'s, for the store to write in the same
    /// transaction as the change (so neither is ever stored without the other).
    ///
    /// None when the app has no webhook: nothing is queued for an app whose backend cannot be told.
    ///
    /// `data` becomes the event's `data` object: ids, states, reasons and times only, never a
    /// message's text or sender, a caller's name or a dialog's labels. Its keys are snake_case.
    static func reporting(
        app: AppRecord,
        _ type: WebhookEventType,
        orderingKey: String,
        data: some Encodable,
        at time: Int64
    ) -> [WebhookEvent] {
        guard app.webhook != nil else { return [] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The data types are plain structs of strings and numbers: encoding them cannot fail.
        let json = (try? encoder.encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return [
            WebhookEvent(
                id: TimeOrderedID.make(milliseconds: time),
                appID: app.id,
                type: type,
                orderingKey: orderingKey,
                data: json,
                createdAt: time
            )
        ]
    }
}

extension RelayContext {
    static func webhookSecretContext(_ appID: String) -> String { "herald-webhook-secret:" + appID }

    /// The app's webhook as stored: its secret sealed with the master key, bound to the app id.
    func sealedWebhook(_ settings: WebhookSettings, appID: String) throws(RelayError) -> AppWebhook {
        guard let url = URLComponents(string: settings.url), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else {
            throw .invalidField("webhook.url", "must be an http or https URL with a host")
        }
        guard settings.secret.utf8.count >= WebhookSettings.minimumSecretBytes else {
            throw .invalidField("webhook.secret", "must be at least \(WebhookSettings.minimumSecretBytes) bytes")
        }
        let sealed = masterKey.seal(
            SecureBytes(copying: Array(settings.secret.utf8)),
            context: Self.webhookSecretContext(appID)
        )
        return AppWebhook(url: settings.url, sealedSecret: sealed)
    }

    /// The app's webhook secret, or `nil` (logged) when it does not open.
    func webhookSecret(_ webhook: AppWebhook, appID: String) -> SecureBytes? {
        do {
            return try masterKey.open(webhook.sealedSecret, context: Self.webhookSecretContext(appID))
        } catch {
            logger.error("cannot open an app's webhook secret", metadata: ["app": "\(appID)"])
            return nil
        }
    }
}
