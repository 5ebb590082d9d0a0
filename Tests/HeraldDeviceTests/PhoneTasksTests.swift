import Synchronization
import Testing

@testable import HeraldDevice

/// `PhoneTasks`: the phone's loops are children of one group; a handle cancels one, and
/// `cancelAll()` cancels them all and ends only once every one has.
@Suite("Emulated phone: its loops", .timeLimit(.minutes(1)))
struct PhoneTasksTests {
    /// How many loops ended.
    final class Ends: Sendable {
        private let count = Mutex(0)

        var value: Int { count.withLock { $0 } }

        func add() { count.withLock { $0 += 1 } }
    }

    /// A loop that says when it started, runs until cancelled, and says when it ended.
    static func loop(
        started: AsyncStream<Void>.Continuation,
        ended: AsyncStream<Void>.Continuation,
        count: Ends
    ) -> @Sendable () async -> Void {
        {
            started.yield()
            // As a phone loop does: nothing ends it but cancellation.
            try? await Task.sleep(for: .seconds(3600))
            count.add()
            ended.yield()
        }
    }

    @Test("a handle cancels its loop alone; cancelAll ends the rest and waits for them")
    func cancelOneThenAll() async {
        let tasks = PhoneTasks()
        let (startedStream, started) = AsyncStream.makeStream(of: Void.self)
        let (endedStream, ended) = AsyncStream.makeStream(of: Void.self)
        let count = Ends()
        var starts = startedStream.makeAsyncIterator()
        var ends = endedStream.makeAsyncIterator()
        let first = tasks.start(Self.loop(started: started, ended: ended, count: count))
        tasks.start(Self.loop(started: started, ended: ended, count: count))
        _ = await starts.next()
        _ = await starts.next()
        first.cancel()
        _ = await ends.next()
        #expect(count.value == 1)
        await tasks.cancelAll()?.value
        #expect(count.value == 2)
    }

    @Test("after cancelAll a new start runs in a new group")
    func restart() async {
        let tasks = PhoneTasks()
        await tasks.cancelAll()?.value
        let (done, finished) = AsyncStream.makeStream(of: Void.self)
        tasks.start {
            finished.yield()
            finished.finish()
        }
        var runs = 0
        for await _ in done { runs += 1 }
        #expect(runs == 1)
        await tasks.cancelAll()?.value
    }
}
