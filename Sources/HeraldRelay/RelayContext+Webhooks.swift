import Foundation
import HeraldStore

extension RelayContext {
    /// The webhook events that report one change of `app`'s, for the store to write in the same
    /// transaction as the change (so neither is ever stored without the other).
    ///
    /// `data` becomes the event's `data` object: ids, states, reasons and times only, never a
    /// message's text or sender, a caller's name or a dialog's labels. Its keys are snake_case.
    func webhookEvents(
        app: AppRecord,
        _ type: WebhookEventType,
        orderingKey: String,
        data: some Encodable,
        at time: Int64
    ) -> [WebhookEvent] {
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
