import CSodium

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension MasterKey {
    /// Reads a master key file: 32 raw bytes, or their base64 text.
    ///
    /// Refuses a file that group or others may read or write: a key anyone on the machine can
    /// read protects nothing.
    public static func load(path: String) throws(HeraldCryptoError) -> MasterKey {
        let fd = systemOpen(path, O_RDONLY | O_CLOEXEC, 0)
        guard fd >= 0 else {
            if errno == ENOENT {
                throw HeraldCryptoError.keyFileMissing.with(
                    detail: "no master key at \(path); make one with `herald keys master --out \(path)`"
                )
            }
            throw HeraldCryptoError.keyFileIO.with(detail: "cannot open \(path): \(errnoText())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw HeraldCryptoError.keyFileIO.with(detail: "cannot stat \(path): \(errnoText())")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw HeraldCryptoError.keyFileInsecure.with(
                detail:
                    "\(path) is accessible by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); run `chmod 600 \(path)`"
            )
        }
        // A base64 key with a newline is at most 46 bytes; anything much larger is not a key.
        var buffer = [UInt8](repeating: 0, count: 128)
        defer { sodium_memzero(&buffer, buffer.count) }
        var total = 0
        while total < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + total, $0.count - total) }
            if n < 0 {
                if errno == EINTR { continue }
                throw HeraldCryptoError.keyFileIO.with(detail: "cannot read \(path): \(errnoText())")
            }
            if n == 0 { break }
            total += n
        }
        if total == length {
            return try MasterKey(key: SecureBytes(copying: buffer[0..<length]))
        }
        guard total < buffer.count, let text = String(validating: buffer[0..<total], as: UTF8.self) else {
            throw HeraldCryptoError.keyFileInvalid.with(
                detail: "\(path) does not hold a master key (32 bytes, raw or base64)"
            )
        }
        do {
            return try MasterKey(base64: text)
        } catch {
            throw HeraldCryptoError.keyFileInvalid.with(
                detail: "\(path) does not hold a master key (32 bytes, raw or base64)"
            )
        }
    }

    /// The master key from `HERALD_MASTER_KEY` when set, otherwise from the file at `path`.
    public static func resolve(environment: [String: String], path: String) throws(HeraldCryptoError) -> MasterKey {
        if let value = environment[environmentVariable], !value.isEmpty {
            return try MasterKey(base64: value)
        }
        return try load(path: path)
    }

    /// Writes the 32 raw key bytes to a new file with mode 0600.
    ///
    /// Never replaces an existing key unless `overwrite` is set: losing the master key makes
    /// every stored device key unreadable.
    public func write(to path: String, overwrite: Bool = false) throws(HeraldCryptoError) {
        var bytes = key.copyBytes()
        defer { sodium_memzero(&bytes, bytes.count) }
        do {
            try SecretFile.write(bytes, to: path, mode: 0o600, overwrite: overwrite)
        } catch  where error == .keyFileExists {
            throw HeraldCryptoError.keyFileExists.with(
                detail: "\(path) already exists; refusing to replace a master key (use --force)"
            )
        }
    }
}
