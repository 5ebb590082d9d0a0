import HeapModule

/// The deadlines of a set of timers, one per key, as data: schedule, cancel, and take what is
/// due, each answering when to wake next. No clock and no task: `RelayTimers` sleeps until
/// `nextWake` and fires what `fireDue` hands it; the rules are table-tested on their own.
///
/// A key armed once keeps its deadline until it fires or is cancelled (a second `schedule` of
/// it changes nothing). Timers due at once fire in deadline order, then in the order they were
/// scheduled.
struct DeadlineTable<Key: Hashable & Sendable>: Sendable {
    /// What `schedule` did.
    enum Scheduled: Equatable, Sendable {
        /// Armed. `wakeSooner`: its deadline comes before every other one's, so whoever sleeps
        /// until the table's previous next wake must wake now to sleep until this one.
        case armed(wakeSooner: Bool)
        /// The key was armed already: it keeps its deadline.
        case kept
    }

    /// What `fireDue` found.
    struct Due: Equatable, Sendable {
        /// The keys whose deadline has come, in firing order; they are no longer armed.
        var keys: [Key]
        /// The next deadline of those left; nil when none is.
        var nextWake: Int64?
    }

    /// A deadline in the heap; one no longer armed (cancelled, or armed again after it fired)
    /// stays until it reaches the top, and is dropped there.
    private struct Entry: Comparable, Sendable {
        var deadline: Int64
        var sequence: UInt64
        var key: Key

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.deadline, lhs.sequence) < (rhs.deadline, rhs.sequence)
        }

        static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline == rhs.deadline && lhs.sequence == rhs.sequence
        }
    }

    /// The armed keys: their deadline and the sequence number of their heap entry.
    private var armed: [Key: (deadline: Int64, sequence: UInt64)] = [:]
    private var heap = Heap<Entry>()
    private var sequence: UInt64 = 0

    /// How many timers are armed.
    var count: Int { armed.count }

    /// The key's deadline, when it is armed.
    func deadline(of key: Key) -> Int64? { armed[key]?.deadline }

    /// The earliest deadline armed; nil when none is.
    var nextWake: Int64? { armed.values.lazy.map(\.deadline).min() }

    /// Arms `key` for `deadline` (milliseconds since the epoch), unless it is armed already.
    mutating func schedule(_ key: Key, at deadline: Int64) -> Scheduled {
        guard armed[key] == nil else { return .kept }
        dropStale()
        let wakeSooner = heap.min.map { deadline < $0.deadline } ?? true
        sequence += 1
        armed[key] = (deadline, sequence)
        heap.insert(Entry(deadline: deadline, sequence: sequence, key: key))
        return .armed(wakeSooner: wakeSooner)
    }

    /// Disarms `key`; answers whether it was armed.
    @discardableResult
    mutating func cancel(_ key: Key) -> Bool {
        guard armed.removeValue(forKey: key) != nil else { return false }
        // Stale entries are dropped as they reach the top; so many piling up (timers cancelled
        // long before their deadline) are dropped at once.
        if heap.count > 2 * armed.count + 64 {
            heap = Heap(armed.map { Entry(deadline: $0.value.deadline, sequence: $0.value.sequence, key: $0.key) })
        }
        return true
    }

    /// Disarms and answers the keys due at `now` (deadline at or before it), and the next wake.
    mutating func fireDue(at now: Int64) -> Due {
        var keys: [Key] = []
        while let top = heap.min, top.deadline <= now {
            heap.removeMin()
            guard armed[top.key]?.sequence == top.sequence else { continue }
            armed[top.key] = nil
            keys.append(top.key)
        }
        dropStale()
        return Due(keys: keys, nextWake: heap.min?.deadline)
    }

    /// Pops the entries at the top that are no longer armed, so the top is the next wake.
    private mutating func dropStale() {
        while let top = heap.min, armed[top.key]?.sequence != top.sequence { heap.removeMin() }
    }
}
