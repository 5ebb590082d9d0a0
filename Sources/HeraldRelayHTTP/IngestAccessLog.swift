import HeraldObservability
import HeraldRelayAPI
import Logging

/// What the access line of an ingest names, so that `grep <request id>` in the log finds the
/// message or call and its pushes, and each push id its `push finished` line.
extension AccessLog {
    /// The most push ids one access line lists: a broadcast to 1000 users would otherwise write
    /// a line of tens of kilobytes. `push_count` always says how many there were.
    static let listedPushes = 100

    /// Names an accepted message (`subject` "message") or call ("call"): its id, its push ids,
    /// how many devices got no push (`skipped`), and `duplicate` for a repeated idempotency key.
    /// Ids and counts only: never a name, a text or a token.
    @discardableResult
    func name(_ receipt: IngestReceipt, as subject: String) -> IngestReceipt {
        self[subject] = .string(receipt.id)
        name(pushes: receipt.pushes, skipped: receipt.skipped.count)
        if receipt.duplicate == true { self["duplicate"] = .stringConvertible(true) }
        return receipt
    }

    /// Names a broadcast's messages (`messages`, one per member, listed up to `listedPushes`) and
    /// their pushes.
    @discardableResult
    func name(_ receipt: BroadcastReceipt) -> BroadcastReceipt {
        let receipts = receipt.members.map(\.receipt)
        self["messages"] = .array(receipts.prefix(Self.listedPushes).map { .string($0.id) })
        name(pushes: receipts.flatMap(\.pushes), skipped: receipts.reduce(0) { $0 + $1.skipped.count })
        return receipt
    }

    private func name(pushes: [IngestReceipt.Push], skipped: Int) {
        self["pushes"] = .array(pushes.prefix(Self.listedPushes).map { .string($0.pushID) })
        self["push_count"] = .stringConvertible(pushes.count)
        self["skipped"] = .stringConvertible(skipped)
    }
}
