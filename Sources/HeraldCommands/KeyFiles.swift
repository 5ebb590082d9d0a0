import Foundation

/// Small file helpers for key material: new files get their final mode before any byte is
/// written, and existing files are not replaced unless asked.
enum KeyFiles {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func makeDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw Failure(description: "cannot create directory \(path): \(error.localizedDescription)")
        }
    }

    static func makeParentDirectory(of path: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty { try makeDirectory(parent) }
    }

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t, overwrite: Bool) throws {
        let flags = O_WRONLY | O_CREAT | (overwrite ? O_TRUNC : O_EXCL)
        let fd = open(path, flags, mode)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw Failure(description: "\(path) already exists; use --force to replace it")
            }
            throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else {
            throw Failure(description: "cannot chmod \(path): \(String(cString: strerror(errno)))")
        }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
