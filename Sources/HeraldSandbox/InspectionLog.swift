import DequeModule
import Synchronization

/// What an inspection log keeps: an entry numbered when it is appended, turned into the record
/// readers see only when one is asked for.
protocol InspectionLogEntry: Sendable {
    associatedtype Record: Sendable
    /// Set by the log: 1, 2, 3, … across the log's life, cleared records included.
    var sequence: Int { get set }
    var record: Record { get }
}

/// A bounded log of answered requests, oldest first, with live observers.
///
/// It keeps at most `capacity` entries and drops the oldest beyond that: under load the log
/// must not grow without bound. Its lock guards only the log, so appending never waits on the
/// rules that decided the answer.
final class InspectionLog<Entry: InspectionLogEntry>: Sendable {
    private struct State {
        var entries: Deque<Entry> = []
        var sequence = 0
        var observers: [UInt64: AsyncStream<Entry.Record>.Continuation] = [:]
        var nextObserverID: UInt64 = 0
    }

    /// The most entries kept.
    let capacity: Int
    private let state = Mutex(State())

    /// A log of at most `capacity` entries (at least one).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Numbers `entry`, keeps it (dropping the oldest when full) and tells the observers.
    @discardableResult
    func append(_ entry: Entry) -> Entry {
        var entry = entry
        let capacity = capacity
        let observers = state.withLock { state in
            state.sequence += 1
            entry.sequence = state.sequence
            if state.entries.count >= capacity { state.entries.removeFirst() }
            state.entries.append(entry)
            return state.observers.isEmpty ? [] : Array(state.observers.values)
        }
        // Records are built only when someone listens: on the APNs path most requests have none.
        if !observers.isEmpty {
            let record = entry.record
            for observer in observers { observer.yield(record) }
        }
        return entry
    }

    /// Every record kept, oldest first.
    var records: [Entry.Record] {
        state.withLock { Array($0.entries) }.map(\.record)
    }

    /// How many entries are kept.
    var count: Int { state.withLock { $0.entries.count } }

    /// Forgets every entry; the numbering goes on.
    func removeAll() {
        state.withLock { $0.entries.removeAll(keepingCapacity: true) }
    }

    /// Every record appended from now on, as it is appended.
    func updates() -> AsyncStream<Entry.Record> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Entry.Record.self,
            bufferingPolicy: .bufferingOldest(100_000)
        )
        let id = state.withLock { state in
            state.nextObserverID += 1
            state.observers[state.nextObserverID] = continuation
            return state.nextObserverID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every stream `updates()` returned so far.
    func finishUpdates() {
        let observers = state.withLock { state in
            defer { state.observers.removeAll() }
            return Array(state.observers.values)
        }
        for observer in observers { observer.finish() }
    }
}

extension InspectionLog {
    /// The last `limit` records (all when nil) that pass `isIncluded`, oldest first.
    func records(where isIncluded: ((Entry.Record) -> Bool)?, limit: Int?) -> [Entry.Record] {
        let all = records
        let filtered = isIncluded.map { all.filter($0) } ?? all
        return limit.map { Array(filtered.suffix(max(0, $0))) } ?? filtered
    }
}

extension SandboxFCMInspectionRecord: InspectionLogEntry {
    var record: SandboxFCMInspectionRecord { self }
}
