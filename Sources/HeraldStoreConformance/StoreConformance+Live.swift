import HeraldStore
import HeraldTestSupport
import Testing

extension StoreConformance {
    /// A user's devices come with the live session a node published for each (the ingest's one
    /// read), as every node sees it: a newer session replaces it, a removal clears it, and a
    /// lapsed one is still returned with its lease (the reader compares it with its time).
    public static func recipientsCarryTheirLiveSession(_ engine: some StoreEngine) async throws {
        let (nodeA, storage) = try await fresh(engine)
        let nodeB = try await engine.open(storage)
        try await nodeA.saveDevice(StoreFixtures.device("d1", createdAt: 1))
        try await nodeA.saveDevice(StoreFixtures.device("d2", createdAt: 2))
        func sessions() async throws -> [LiveSessionRecord?] {
            try await nodeB.recipients(userID: "u").map(\.liveSession)
        }
        #expect(try await sessions() == [nil, nil])

        let first = LiveSessionRecord(
            deviceID: "d1",
            nodeID: "a",
            sessionID: "s1",
            conversation: "c1",
            expiresAt: 1_000
        )
        try await nodeA.saveLiveSession(first)
        #expect(try await sessions() == [first, nil])

        let moved = LiveSessionRecord(deviceID: "d1", nodeID: "b", sessionID: "s2", conversation: nil, expiresAt: 2_000)
        try await nodeB.saveLiveSession(moved)
        try await nodeA.removeLiveSession(deviceID: "d1", sessionID: "s1")
        #expect(try await sessions() == [moved, nil], "a stale removal keeps the newer session")

        try await nodeB.removeLiveSession(deviceID: "d1", sessionID: "s2")
        #expect(try await sessions() == [nil, nil])
    }

    /// A device has one live session, seen alike by every node: a newer one (on any node)
    /// replaces it, a stale removal leaves the newer one, a lease past its end hides it, and a
    /// node's heartbeat extends the sessions it names, and only those.
    public static func liveSessionsAreLeased(_ engine: some StoreEngine) async throws {
        let (nodeA, storage) = try await fresh(engine)
        let nodeB = try await engine.open(storage)
        func session(
            _ device: String,
            node: String,
            id: String,
            in conversation: String?,
            until: Int64
        )
            -> LiveSessionRecord
        {
            LiveSessionRecord(
                deviceID: device,
                nodeID: node,
                sessionID: id,
                conversation: conversation,
                expiresAt: until
            )
        }
        #expect(try await nodeB.liveSessions(deviceIDs: [], now: 0).isEmpty)
        try await nodeA.saveLiveSession(session("d1", node: "a", id: "s1", in: nil, until: 1_000))
        try await nodeA.saveLiveSession(session("d1", node: "a", id: "s1", in: "c1", until: 1_000))
        try await nodeA.saveLiveSession(session("d2", node: "a", id: "s2", in: "c1", until: 1_000))
        #expect(
            Set(try await nodeB.liveSessions(deviceIDs: ["d1", "d2", "d3"], now: 500)) == [
                session("d1", node: "a", id: "s1", in: "c1", until: 1_000),
                session("d2", node: "a", id: "s2", in: "c1", until: 1_000),
            ]
        )
        // The lease ends at its time: the session is gone for everyone.
        #expect(try await nodeB.liveSessions(deviceIDs: ["d1", "d2"], now: 1_000).isEmpty)

        // The device reconnects on node B: the old channel's removal keeps the new session.
        try await nodeB.saveLiveSession(session("d1", node: "b", id: "s3", in: nil, until: 2_000))
        try await nodeA.removeLiveSession(deviceID: "d1", sessionID: "s1")
        #expect(
            try await nodeA.liveSessions(deviceIDs: ["d1"], now: 0) == [
                session("d1", node: "b", id: "s3", in: nil, until: 2_000)
            ]
        )
        try await nodeB.removeLiveSession(deviceID: "d1", sessionID: "s3")
        #expect(try await nodeA.liveSessions(deviceIDs: ["d1"], now: 0).isEmpty)

        // Node A's heartbeat: d2's session (named) lasts longer; d4's (not named) and node B's
        // keep their lease, and lapse at its end.
        try await nodeA.saveLiveSession(session("d4", node: "a", id: "s4", in: nil, until: 1_000))
        try await nodeB.saveLiveSession(session("d5", node: "b", id: "s5", in: nil, until: 1_000))
        try await nodeA.renewLiveSessions(nodeID: "a", keeping: ["s2", "s5"], until: 5_000)
        try await nodeA.renewLiveSessions(nodeID: "a", keeping: [], until: 6_000)
        #expect(
            Set(try await nodeB.liveSessions(deviceIDs: ["d2", "d4", "d5"], now: 0)) == [
                session("d2", node: "a", id: "s2", in: "c1", until: 5_000),
                session("d4", node: "a", id: "s4", in: nil, until: 1_000),
                session("d5", node: "b", id: "s5", in: nil, until: 1_000),
            ]
        )
        #expect(
            try await nodeB.liveSessions(deviceIDs: ["d2", "d4", "d5"], now: 1_000) == [
                session("d2", node: "a", id: "s2", in: "c1", until: 5_000)
            ]
        )

        // The janitor deletes the lapsed sessions (a node that died leaves its rows behind) and
        // keeps the others: asked as of an earlier time, only the kept one is still there.
        _ = try await nodeB.deleteExpired(now: 1_000, historyBefore: 0)
        #expect(
            try await nodeA.liveSessions(deviceIDs: ["d2", "d4", "d5"], now: 0) == [
                session("d2", node: "a", id: "s2", in: "c1", until: 5_000)
            ]
        )
    }

    /// A handover is written with its message (not at all for a repeated key), taken once by its
    /// node, and answered once: settled by an acknowledgement, or taken by the sweep past its
    /// deadline, whichever comes first, across nodes and concurrent calls.
    public static func liveHandoversAreAnsweredOnce(_ engine: some StoreEngine) async throws {
        let (nodeA, storage) = try await fresh(engine)
        let nodeB = try await engine.open(storage)
        func handover(
            _ message: String,
            _ device: String,
            node: String = "a",
            deadline: Int64 = 1_000
        )
            -> LiveHandover
        {
            LiveHandover(messageID: message, deviceID: device, nodeID: node, deadline: deadline)
        }
        var ingest = StoreFixtures.ingest([], key: "k1", message: StoreFixtures.message("m1", expires: 10_000))
        ingest.handovers = [handover("m1", "d1"), handover("m1", "d2", node: "b", deadline: 2_000)]
        #expect(try await nodeB.accept(ingest) == .accepted)
        // A repeated key writes no handover.
        var repeated = StoreFixtures.ingest([], key: "k1", message: StoreFixtures.message("m2", expires: 10_000))
        repeated.handovers = [handover("m2", "d1")]
        _ = try await nodeB.accept(repeated)

        // Each node takes its own, once, even when it asks twice at once.
        async let first = nodeA.takeLiveHandovers(nodeID: "a")
        async let second = nodeB.takeLiveHandovers(nodeID: "a")
        let taken = try await first + second
        #expect(taken == [handover("m1", "d1")])
        #expect(try await nodeA.takeLiveHandovers(nodeID: "a").isEmpty)
        #expect(try await nodeA.takeLiveHandovers(nodeID: "b") == [handover("m1", "d2", node: "b", deadline: 2_000)])

        // Acknowledged: settled once, and the sweep never sees it.
        #expect(try await nodeA.settleLiveHandover(messageID: "m1", deviceID: "d1"))
        #expect(try await !nodeB.settleLiveHandover(messageID: "m1", deviceID: "d1"))
        #expect(try await nodeB.takeOverdueLiveHandovers(now: 1_500, limit: 10).isEmpty)

        // Not acknowledged: overdue at its deadline (taken or not), returned to one sweep only;
        // a late acknowledgement finds nothing to settle.
        var more = StoreFixtures.ingest([], message: StoreFixtures.message("m3", expires: 10_000))
        more.handovers = (0..<6).map { handover("m3", "e\($0)", deadline: 1_500 + Int64($0)) }
        #expect(try await nodeA.accept(more) == .accepted)
        #expect(try await nodeB.takeOverdueLiveHandovers(now: 1_999, limit: 10).count == 6)
        let sweeps = try await withThrowingTaskGroup(of: [LiveHandover].self) { group in
            for node in [nodeA, nodeB, nodeA, nodeB] {
                group.addTask { try await node.takeOverdueLiveHandovers(now: 2_000, limit: 1) }
            }
            var all: [LiveHandover] = []
            for try await swept in group { all += swept }
            return all
        }
        #expect(sweeps == [handover("m1", "d2", node: "b", deadline: 2_000)])
        #expect(try await !nodeA.settleLiveHandover(messageID: "m1", deviceID: "d2"))
        #expect(try await nodeA.takeOverdueLiveHandovers(now: 100_000, limit: 10).isEmpty)
    }
}
