public import HeraldPush
public import Logging
import Synchronization

/// Which of several providers gets the next batch: events in, decisions out, no I/O.
///
/// Batches go round the providers in turn. A provider that gave no answer (every push of its
/// batch `unreachable`) is skipped for `cooldown`, and the batch goes to the next one at once;
/// when every provider is skipped, the one whose cooldown ends first is asked anyway (the
/// dispatcher's own outage handling then holds the pushes if it fails too).
public struct ProviderRotation: Sendable {
    public let count: Int
    public let cooldown: Duration
    private var next = 0
    private var downUntil: [ContinuousClock.Instant?]

    public init(count: Int, cooldown: Duration = .seconds(5)) {
        precondition(count > 0, "at least one provider")
        self.count = count
        self.cooldown = cooldown
        downUntil = Array(repeating: nil, count: count)
    }

    /// The providers to try for one batch, in order: the healthy ones from the next in turn, then
    /// the skipped ones by the end of their cooldown.
    public mutating func order(at now: ContinuousClock.Instant) -> [Int] {
        let start = next
        next = (next + 1) % count
        let turn = (0..<count).map { (start + $0) % count }
        let healthy = turn.filter { index in downUntil[index].map { $0 <= now } ?? true }
        let resting = turn.filter { !healthy.contains($0) }.sorted { downUntil[$0]! < downUntil[$1]! }
        return healthy + resting
    }

    /// Provider `index` gave no answer at `now`.
    public mutating func unreachable(_ index: Int, at now: ContinuousClock.Instant) {
        downUntil[index] = now + cooldown
    }

    /// Provider `index` answered.
    public mutating func answered(_ index: Int) {
        downUntil[index] = nil
    }

    /// Whether provider `index` is being skipped at `now`.
    public func isResting(_ index: Int, at now: ContinuousClock.Instant) -> Bool {
        downUntil[index].map { $0 > now } ?? false
    }
}

/// Several remote providers as one sender: each batch to one of them in turn, and to the next
/// at once when one gives no answer, so a `herald provider` node that dies costs no delay.
public final class ProviderPool: PushSender {
    private let senders: [any PushSender]
    private let names: [String]
    private let rotation: Mutex<ProviderRotation>
    private let logger: Logger

    /// - Parameters:
    ///   - senders: one per provider, with a name for the log (its URL).
    public init(_ senders: [(name: String, sender: any PushSender)], cooldown: Duration = .seconds(5), logger: Logger) {
        self.senders = senders.map(\.sender)
        names = senders.map(\.name)
        rotation = Mutex(ProviderRotation(count: senders.count, cooldown: cooldown))
        self.logger = logger
    }

    public func send(_ pushes: [Push]) async -> [PushOutcome] {
        if pushes.isEmpty { return [] }
        var last: [PushOutcome] = []
        for index in rotation.withLock({ $0.order(at: .now) }) {
            let outcomes = await senders[index].send(pushes)
            let noAnswer =
                !outcomes.isEmpty && outcomes.allSatisfy { if case .unreachable = $0 { true } else { false } }
            if !noAnswer {
                let wasResting = rotation.withLock { rotation in
                    defer { rotation.answered(index) }
                    return rotation.isResting(index, at: .now)
                }
                if wasResting { logger.notice("provider answers again", metadata: ["provider": "\(names[index])"]) }
                return outcomes
            }
            let fresh = rotation.withLock { rotation in
                defer { rotation.unreachable(index, at: .now) }
                return !rotation.isResting(index, at: .now)
            }
            if fresh {
                logger.warning(
                    "provider gives no answer: its batches go to the others",
                    metadata: ["provider": "\(names[index])"]
                )
            }
            last = outcomes
        }
        return last
    }
}
