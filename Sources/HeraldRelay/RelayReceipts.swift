import HeraldCrypto
public import HeraldRelayAPI
public import HeraldStore
import HeraldTracing
import Metrics

/// The relay's receipt part (docs/receipts.md): a phone says what happened to a push it was sent
/// (delivered to its extension, opened, shown, failed, tapped), and the relay records it once,
/// tells the backend by webhook, and counts it.
public final class RelayReceipts: Sendable {
    let context: RelayContext
    private let planner: ReceiptPlanner

    init(context: RelayContext) {
        self.context = context
        self.planner = ReceiptPlanner(deadlines: context.deadlinePlanner)
    }

    /// Records `request` from `device` (authenticated by its credential) and answers the receipt
    /// as recorded, and whether this request recorded it. A receipt whose tag does not verify
    /// with the device's current session keys is refused (403), one for a push this device was
    /// not sent answers 404 (as for no push at all); both are counted. The same stage again
    /// writes nothing and answers the receipt recorded first (counted as replayed).
    public func record(
        device: DeviceRecord,
        _ request: ReceiptRequest
    ) async throws(RelayError) -> (receipt: PushReceipt, recorded: Bool) {
        let (receipt, tag) = try planner.receipt(request)
        let push = try await context.storing { try await $0.push(id: receipt.pushID) }
        // In the push's trace when it has one (docs/tracing.md): ids and the stage only.
        return try await context.tracing.withSpan("herald.receipt", kind: .server, inTraceOf: push?.traceParent) {
            span throws(RelayError) in
            span.set("herald.push.id", receipt.pushID)
            span.set("herald.receipt.stage", receipt.stage.rawValue)
            return try await record(receipt, tag: tag, push: push, device: device)
        }
    }

    private func record(
        _ receipt: DeliveryReceipt,
        tag: [UInt8],
        push: OutboxEntry?,
        device: DeviceRecord
    ) async throws(RelayError) -> (receipt: PushReceipt, recorded: Bool) {
        let verified = receipt.verify(tag: tag, relayKeys: try context.sessionKeys(for: device))
        let app = try await context.app(id: device.appID)
        let planned = planner.record(
            receipt,
            device: device,
            push: push,
            app: app,
            verified: verified,
            now: context.clock.now()
        )
        switch planned {
        case .failure(let refusal):
            refused(refusal.rawValue)
            switch refusal {
            case .unknownPush:
                throw RelayError.notFound.with(detail: "no push \(receipt.pushID) sent to this device")
            case .badTag:
                throw RelayError.forbidden.with(
                    detail: "the receipt's tag does not verify with this device's current keys (key_id, push_id, "
                        + "stage, device_time and failure are all covered by it)"
                )
            }
        case .success(let planned):
            let outcomes = try await context.commit(planned.change)
            // The receipt's own write is the first; the deadlines' beside it are always applied.
            guard outcomes.first == .applied else {
                refused("replayed")
                let first = try await context.storing { try await $0.receipts(pushID: receipt.pushID) }
                return (first.first { $0.stage == receipt.stage } ?? planned.answer, false)
            }
            return (planned.answer, true)
        }
    }

    private func refused(_ reason: String) {
        Counter(label: "herald_relay_receipts_refused_total", dimensions: [("reason", reason)]).increment()
    }
}
