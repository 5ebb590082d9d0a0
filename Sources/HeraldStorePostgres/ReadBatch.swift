import HeraldStore
import Synchronization

/// Reads by key that arrive together go as one statement: the recipients read every ingest makes
/// (users to their devices, with their presence and live channels).
///
/// Like `WriteBatcher`: a read waits only while `maxReading` batches are already out, so a lone
/// read goes at once and a burst shares a round trip. A batch starts after every read in it was
/// asked for, so each sees every write committed before it was asked.
final class ReadBatcher<Value: Sendable>: Sendable {
    /// Reads the values of `keys`; a key without one is left out of the answer.
    typealias Read = @Sendable ([String]) async throws(StoreError) -> [String: Value]

    private struct Waiting {
        let keys: [String]
        let continuation: CheckedContinuation<[String: Value], any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var reading = 0
    }

    /// Batches read at once. One, as for `WriteBatcher.maxWriting`: the reads asked for during a
    /// round trip share the next.
    let maxReading: Int
    /// Keys in one statement at most (a caller asking for more gets a batch of its own).
    let maxKeys: Int
    private let what: String
    private let state = Mutex(State())

    init(_ what: String, maxReading: Int = 1, maxKeys: Int = 128) {
        self.what = what
        self.maxReading = maxReading
        self.maxKeys = maxKeys
    }

    /// The values of `keys` (every caller gives the same `read`).
    func values(for keys: [String], read: @escaping Read) async throws(StoreError) -> [String: Value] {
        guard !keys.isEmpty else { return [:] }
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let batch = state.withLock { state -> [Waiting]? in
                    state.waiting.append(Waiting(keys: keys, continuation: continuation))
                    return Self.nextBatch(&state, maxReading: maxReading, maxKeys: maxKeys)
                }
                if let batch { start(batch, read: read) }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.corrupt.with(detail: "\(what): \(error)")
        }
    }

    private static func nextBatch(_ state: inout State, maxReading: Int, maxKeys: Int) -> [Waiting]? {
        guard state.reading < maxReading, !state.waiting.isEmpty else { return nil }
        var keys = 0
        var taken = 0
        for waiting in state.waiting {
            if taken > 0, keys + waiting.keys.count > maxKeys { break }
            keys += waiting.keys.count
            taken += 1
        }
        let batch = Array(state.waiting.prefix(taken))
        state.waiting.removeFirst(taken)
        state.reading += 1
        return batch
    }

    private func start(_ batch: [Waiting], read: @escaping Read) {
        Task {
            do {
                let found = try await read(Array(Set(batch.flatMap(\.keys))))
                for waiting in batch {
                    var mine: [String: Value] = [:]
                    for key in waiting.keys { mine[key] = found[key] }
                    waiting.continuation.resume(returning: mine)
                }
            } catch {
                for waiting in batch { waiting.continuation.resume(throwing: error) }
            }
            let next = self.state.withLock { state in
                state.reading -= 1
                return Self.nextBatch(&state, maxReading: self.maxReading, maxKeys: self.maxKeys)
            }
            if let next { self.start(next, read: read) }
        }
    }
}
