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

func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}

func errnoText() -> String {
    String(cString: strerror(errno))
}
