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
}
