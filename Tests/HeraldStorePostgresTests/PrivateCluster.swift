import Foundation

/// A PostgreSQL cluster of one test's own, for tests that stop and start the server (the shared
/// one from `scripts/with-postgres.sh` serves every other test). Made with the binaries that
/// script found; as the `postgres` user when the tests run as root, since the server refuses root.
final class PrivateCluster: Sendable {
    let directory: String
    let port: Int
    private let bin: String

    init() throws {
        guard let bin = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_BIN"] else {
            throw PostgresEngine.MissingCluster()
        }
        self.bin = bin
        directory = NSTemporaryDirectory() + "herald-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try PostgresStoreTests.closedPort()
        if getuid() == 0 { try Self.run("/bin/chown", ["postgres:", directory]) }
        try run("initdb", ["-D", directory + "/data", "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
        try start()
    }

    var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    func start() throws {
        try run(
            "pg_ctl",
            [
                "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "30", "-o",
                "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off", "start",
            ]
        )
    }

    /// Stops the server at once, as a crash would (`immediate`: no checkpoint, clients cut off).
    func stop() throws {
        try run("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
    }

    func remove() {
        try? stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func run(_ tool: String, _ arguments: [String]) throws {
        let command =
            getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", bin + "/" + tool] : [bin + "/" + tool]
        // Foundation's Process hears of its child's exit through a descriptor the child inherits;
        // the server pg_ctl leaves running would inherit it too and keep `waitUntilExit` waiting
        // for the server's end. The shell closes every descriptor above stderr first.
        let closeInherited =
            "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\""
        try Self.run("/bin/bash", ["-c", closeInherited, "bash"] + command + arguments)
    }

    private static func run(_ path: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ClusterError(
                description: "\(path) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)"
            )
        }
    }

    struct ClusterError: Error, CustomStringConvertible {
        var description: String
    }
}
