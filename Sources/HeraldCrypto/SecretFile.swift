#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes key files so that they have their final mode before any byte is in them.
public enum SecretFile {
    /// Creates `path` with `mode` (not filtered by the umask) and writes `bytes` to it.
    ///
    /// Refuses to replace an existing file unless `overwrite` is set, with `keyFileExists`.
    public static func write(
        _ bytes: some Collection<UInt8>,
        to path: String,
        mode: UInt32 = 0o600,
        overwrite: Bool = false
    ) throws(HeraldCryptoError) {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL)
        let fd = systemOpen(path, flags, mode_t(mode))
        guard fd >= 0 else {
            if errno == EEXIST {
                throw HeraldCryptoError.keyFileExists.with(detail: "\(path) already exists; use --force to replace it")
            }
            throw HeraldCryptoError.keyFileIO.with(detail: "cannot create \(path): \(errnoText())")
        }
        defer { close(fd) }
        // O_CREAT's mode is filtered by the umask and ignored for an existing file.
        guard fchmod(fd, mode_t(mode)) == 0 else {
            throw HeraldCryptoError.keyFileIO.with(detail: "cannot chmod \(path): \(errnoText())")
        }
        let contents = Array(bytes)
        var offset = 0
        while offset < contents.count {
            let n = contents.withUnsafeBytes { systemWrite(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw HeraldCryptoError.keyFileIO.with(detail: "cannot write \(path): \(errnoText())")
            }
            offset += n
        }
        guard fsync(fd) == 0 else {
            throw HeraldCryptoError.keyFileIO.with(detail: "cannot sync \(path): \(errnoText())")
        }
    }
}

extension SecretFile {
    /// Creates `path` and each missing parent with mode 0700, not filtered by the umask (what
    /// `FileManager` does not promise for the parents it makes).
    ///
    /// An existing directory keeps its mode: it may be one Herald does not own (a configured
    /// path under /tmp, say), which it must not close to others.
    public static func makeDirectory(_ path: String) throws(HeraldCryptoError) {
        var missing: [String] = []
        var current = path
        while !current.isEmpty, current != "/", access(current, F_OK) != 0 {
            missing.append(current)
            let parent = current.split(separator: "/", omittingEmptySubsequences: false).dropLast()
                .joined(separator: "/")
            current = parent.isEmpty && current.hasPrefix("/") ? "/" : parent
        }
        for directory in missing.reversed() {
            if mkdir(directory, 0o700) != 0, errno != EEXIST {
                throw HeraldCryptoError.keyFileIO.with(detail: "cannot create directory \(directory): \(errnoText())")
            }
            guard chmod(directory, 0o700) == 0 else {
                throw HeraldCryptoError.keyFileIO.with(detail: "cannot chmod \(directory): \(errnoText())")
            }
        }
    }
}

func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}

func errnoText() -> String {
    String(cString: strerror(errno))
}
