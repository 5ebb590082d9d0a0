import HeraldStore
import PostgresNIO
import Synchronization

/// The recipients reads that arrive together (every ingest makes one) go as one statement.
///
/// Like `IngestBatcher`: a read waits only while `maxReading` batches are already out, so a lone
/// read goes at once and a burst shares a round trip. A batch starts after every read in it was
/// asked for, so each sees every write committed before it was asked; two reads of one user in a
/// batch share its answer.
final class RecipientsBatcher: Sendable {
    /// Reads the devices (with presence) of the users given.
    typealias Read = @Sendable ([String]) async throws(StoreError) -> [String: [Recipient]]

    private struct State {
        var waiting: [String: [CheckedContinuation<[Recipient], any Error>]] = [:]
        /// The users waiting, in the order first asked for.
        var order: [String] = []
        var reading = 0
    }

    let maxReading: Int
    let maxBatch: Int
    private let state = Mutex(State())

    init(maxReading: Int = 2, maxBatch: Int = 64) {
        self.maxReading = maxReading
        self.maxBatch = maxBatch
    }

    func recipients(userID: String, read: @escaping Read) async throws(StoreError) -> [Recipient] {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let batch = state.withLock { state -> [String: [CheckedContinuation<[Recipient], any Error>]]? in
                    if state.waiting[userID] == nil { state.order.append(userID) }
                    state.waiting[userID, default: []].append(continuation)
                    return Self.nextBatch(&state, maxReading: maxReading, maxBatch: maxBatch)
                }
                if let batch { start(batch, read: read) }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.corrupt.with(detail: "read a user's devices: \(error)")
        }
    }

    private static func nextBatch(
        _ state: inout State,
        maxReading: Int,
        maxBatch: Int
    ) -> [String: [CheckedContinuation<[Recipient], any Error>]]? {
        guard state.reading < maxReading, !state.order.isEmpty else { return nil }
        let users = state.order.prefix(maxBatch)
        state.order.removeFirst(users.count)
        var batch: [String: [CheckedContinuation<[Recipient], any Error>]] = [:]
        for user in users { batch[user] = state.waiting.removeValue(forKey: user) }
        state.reading += 1
        return batch
    }

    private func start(_ batch: [String: [CheckedContinuation<[Recipient], any Error>]], read: @escaping Read) {
        Task {
            do {
                let found = try await read(Array(batch.keys))
                for (user, continuations) in batch {
                    for continuation in continuations { continuation.resume(returning: found[user] ?? []) }
                }
            } catch {
                for continuation in batch.values.joined() { continuation.resume(throwing: error) }
            }
            let next = self.state.withLock { state in
                state.reading -= 1
                return Self.nextBatch(&state, maxReading: self.maxReading, maxBatch: self.maxBatch)
            }
            if let next { self.start(next, read: read) }
        }
    }
}
