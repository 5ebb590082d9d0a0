import ArgumentParser
import Testing

@testable import HeraldCommands

/// `herald bench relay --relay`: one node, several nodes of one cluster, and what it refuses.
@Suite struct BenchRelayOptionsTests {
    @Test func noRelayMeansTheDefaultNode() throws {
        let command = try BenchCommand.Relay.parse([])
        #expect(try BenchRelayNode.parse(command.relayValues).map(\.url) == ["http://127.0.0.1:8080"])
    }

    @Test func oneRelayKeepsItsSingleURLForm() throws {
        let command = try BenchCommand.Relay.parse(["--relay", "http://127.0.0.1:9001/"])
        let nodes = try BenchRelayNode.parse(command.relayValues)
        #expect(nodes == [BenchRelayNode(url: "http://127.0.0.1:9001", host: "127.0.0.1", port: 9001)])
    }

    @Test func repeatedAndCommaListedRelaysAreNodesInOrder() throws {
        let command = try BenchCommand.Relay.parse([
            "--relay", "http://127.0.0.1:9001",
            "--relay", "http://127.0.0.1:9002, http://localhost:9003",
        ])
        let nodes = try BenchRelayNode.parse(command.relayValues)
        #expect(nodes.map(\.url) == ["http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://localhost:9003"])
        #expect(nodes.map(\.port) == [9001, 9002, 9003])
        #expect(nodes.map(\.host) == ["127.0.0.1", "127.0.0.1", "localhost"])
    }

    @Test(arguments: [
        "127.0.0.1:9001",
        "https://127.0.0.1:9001",
        "http://127.0.0.1",
        "http://127.0.0.1:9001/v1",
        "http://127.0.0.1:9001,",
        "",
    ])
    func aRelayThatIsNotHTTPHostPortIsRefused(value: String) {
        #expect(throws: (any Error).self) { try BenchCommand.Relay.parse(["--relay", value]) }
    }

    @Test func theSameRelayTwiceIsRefused() {
        #expect(throws: (any Error).self) {
            try BenchCommand.Relay.parse(["--relay", "http://127.0.0.1:9001", "--relay", "http://127.0.0.1:9001/"])
        }
    }
}
