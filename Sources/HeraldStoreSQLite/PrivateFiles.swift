import Foundation
import HeraldEncoding

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The database's files, private to Herald's user whatever the umask.
enum PrivateFiles {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Makes the database's directory (0700, each missing level) and file (0600) if missing, and
    /// sets 0600 on an existing database, WAL and shared-memory file. SQLite gives the WAL and
    /// shared-memory files it creates the database file's mode, so they follow.
    ///
    /// An existing directory keeps its mode: the path may be in a directory Herald does not own
    /// (say, /tmp), which it must not close to others.
    static func prepareDatabase(at path: String) throws {
        let directory = FilePathText.parent(of: path)
        if !directory.isEmpty { try makeDirectory(directory) }
        // Created here, 0600 before any byte is in it: SQLite would create it 0644 & ~umask.
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot create \(path): \(errnoText())") }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else { throw Failure(description: "cannot chmod \(path): \(errnoText())") }
        for companion in [path + "-wal", path + "-shm"] where chmod(companion, 0o600) != 0 && errno != ENOENT {
            throw Failure(description: "cannot chmod \(companion): \(errnoText())")
        }
    }

    /// Creates `path` and its missing parents with mode 0700 (not filtered by the umask).
    static func makeDirectory(_ path: String) throws {
        var missing: [String] = []
        var current = path
        while !current.isEmpty, current != "/", !FileManager.default.fileExists(atPath: current) {
            missing.append(current)
            current = FilePathText.parent(of: current)
        }
        for directory in missing.reversed() {
            if mkdir(directory, 0o700) != 0, errno != EEXIST {
                throw Failure(description: "cannot create directory \(directory): \(errnoText())")
            }
            guard chmod(directory, 0o700) == 0 else {
                throw Failure(description: "cannot chmod \(directory): \(errnoText())")
            }
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
