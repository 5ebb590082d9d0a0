import Foundation
public import HeraldCrypto
import HeraldEncoding
import HeraldMacros

/// The secrets a running Herald needs, from the environment or from files under the keys
/// directory, made there (0600) on first start. Each comes back with where it came from, for the
/// banner (never the secret itself).
@MemberwiseInit
public struct ServerKeys: Sendable {
    let keysDirectory: String
    let environment: [String: String]

    private func path(_ name: String) -> String { (keysDirectory as NSString).appendingPathComponent(name) }

    private func value(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// The master key from HERALD_MASTER_KEY or keys/master.key, made on first start.
    public func masterKey() throws(HeraldServerError) -> (key: MasterKey, source: String) {
        let file = path("master.key")
        do {
            if value(MasterKey.environmentVariable) != nil {
                return (try MasterKey.resolve(environment: environment, path: file), MasterKey.environmentVariable)
            }
            if !FileManager.default.fileExists(atPath: file) {
                // Checked again under the lock: another node starting now may have made it.
                try KeyFiles.withCreationLock(in: keysDirectory) {
                    if !FileManager.default.fileExists(atPath: file) { try MasterKey.generate().write(to: file) }
                }
            }
            return (try MasterKey.load(path: file), file)
        } catch {
            throw .credentials("\(file): \(error)")
        }
    }

    /// The API key from HERALD_API_KEY or keys/api.key, made on first start.
    public func apiKey() throws(HeraldServerError) -> (key: String, source: String) {
        try secret(variable: "HERALD_API_KEY", file: path("api.key"), make: { "hk_" + $0 })
    }

    /// Keys still accepted during an API key rotation, from HERALD_API_KEY_PREVIOUS (comma-separated)
    /// or keys/api.key.previous (one per line); none when neither exists. Never made.
    public func previousAPIKeys() throws(HeraldServerError) -> (keys: [String], source: String?) {
        let variable = "HERALD_API_KEY_PREVIOUS"
        let file = path("api.key.previous")
        let (text, source): (String, String)
        if let given = value(variable) {
            (text, source) = (given.replacingOccurrences(of: ",", with: "\n"), variable)
        } else if let read = try? String(contentsOfFile: file, encoding: .utf8) {
            (text, source) = (read, file)
        } else {
            return ([], nil)
        }
        let keys = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard keys.allSatisfy({ $0.count >= 16 }) else {
            throw .credentials("\(source) holds a key shorter than 16 characters")
        }
        return (keys, keys.isEmpty ? nil : source)
    }

    /// The provider's bearer secret from HERALD_PROVIDER_SECRET or `file`; made there when `make`.
    public func providerSecret(file: String?, make: Bool) throws(HeraldServerError) -> (key: String, source: String) {
        let file = file ?? path("provider.secret")
        if !make, value("HERALD_PROVIDER_SECRET") == nil, !FileManager.default.fileExists(atPath: file) {
            throw .credentials(
                "cannot read the provider secret \(file) (start `herald provider` first, or set HERALD_PROVIDER_SECRET)"
            )
        }
        return try secret(variable: "HERALD_PROVIDER_SECRET", file: file, make: { $0 })
    }

    /// A secret of at least 16 characters: the variable's, the file's, or a new one written to the file.
    private func secret(
        variable: String,
        file: String,
        make: (String) -> String
    ) throws(HeraldServerError) -> (key: String, source: String) {
        if let given = value(variable) {
            guard given.count >= 16 else { throw .credentials("\(variable) must be at least 16 characters") }
            return (given, variable)
        }
        // Read without the lock, a file another node is writing under it can be caught half
        // written: only a whole secret is taken here; anything else is read again under the lock.
        if let text = try? String(contentsOfFile: file, encoding: .utf8),
            case let key = text.trimmingCharacters(in: .whitespacesAndNewlines), key.count >= 16
        {
            return (key, file)
        }
        // Made under the lock, checked again there: another node starting now may have made it.
        let made: (existing: String?, new: String?)
        do {
            let directory = FilePathText.parent(of: file)
            made = try KeyFiles.withCreationLock(in: directory.isEmpty ? "." : directory) {
                if let text = try? String(contentsOfFile: file, encoding: .utf8) { return (text, nil) }
                let key = make(ByteEncoding.hex(SecureBytes.random(count: 24).copyBytes()))
                try SecretFile.write(Array((key + "\n").utf8), to: file, mode: 0o600)
                return (nil, key)
            }
        } catch {
            throw .credentials("cannot write \(file): \(error)")
        }
        if let key = made.new { return (key, file) }
        let key = (made.existing ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard key.count >= 16 else { throw .credentials("\(file) holds a secret shorter than 16 characters") }
        return (key, file)
    }
}
