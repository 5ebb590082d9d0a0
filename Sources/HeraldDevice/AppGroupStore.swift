import Foundation
public import HeraldCrypto
public import HeraldDomain
import HeraldMacros
public import HeraldRelayAPI

/// What the emulated app and its extensions share, as iOS shares an app-group container: a
/// directory (mode 0700) of files (mode 0600).
///
/// `registration.json` says who the device is; `credential` holds the relay's device credential;
/// `keys/<key id>.json` holds the device's key pair and the relay's public key for each agreement
/// still in use (the current and the previous one); `tokens.json` holds the last push tokens;
/// `shown-pushes.json` names the last pushes shown, so a repeat is dropped.
public struct AppGroupStore: Sendable {
    /// Who the device is at the relay.
    @MemberwiseInit
    public struct Registration: Codable, Sendable, Hashable {
        public var deviceID: String
        public var userID: String
        public var app: String
        public var relayURL: String
        public var keyID: String
        public var previousKeyID: String?
        public var contentPolicy: ContentPolicy

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case userID = "user_id"
            case app
            case relayURL = "relay_url"
            case keyID = "key_id"
            case previousKeyID = "previous_key_id"
            case contentPolicy = "content_policy"
        }
    }

    /// The push tokens the app last had.
    public struct Tokens: Codable, Sendable, Hashable {
        public var messaging: String?
        public var voip: String?

        public init(messaging: String? = nil, voip: String? = nil) {
            self.messaging = messaging
            self.voip = voip
        }

        /// No token at all.
        public var isEmpty: Bool { messaging == nil && voip == nil }

        /// Which tokens there are, for the timeline (never the tokens themselves).
        public var summary: String {
            switch (messaging, voip) {
            case (nil, nil): "no tokens"
            case (_?, nil): "messaging token"
            case (nil, _?): "VoIP token"
            case (_?, _?): "messaging and VoIP tokens"
            }
        }
    }

    struct StoredKeys: Codable {
        var keyID: String
        var deviceSecretKey: String
        var relayPublicKey: String

        enum CodingKeys: String, CodingKey {
            case keyID = "key_id"
            case deviceSecretKey = "device_secret_key"
            case relayPublicKey = "relay_public_key"
        }
    }

    public let directory: String

    /// Opens (and creates, mode 0700) the store's directory.
    public init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(
            atPath: directory + "/keys",
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        chmod(directory, 0o700)
    }

    // MARK: Registration and credential

    public func registration() -> Registration? {
        read(Registration.self, "registration.json")
    }

    public func save(_ registration: Registration) throws {
        try write(registration, "registration.json")
    }

    public func credential() -> String? {
        guard let data = FileManager.default.contents(atPath: path("credential")) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    public func saveCredential(_ credential: String) throws {
        try replace("credential", with: Array((credential + "\n").utf8))
    }

    // MARK: Tokens

    public func tokens() -> Tokens {
        read(Tokens.self, "tokens.json") ?? Tokens()
    }

    public func save(_ tokens: Tokens) throws {
        try write(tokens, "tokens.json")
    }

    // MARK: Keys

    /// Keeps a key pair and the relay's public key under their key id.
    public func saveKeys(_ keys: KeyPair, relayPublicKey: PublicKey) throws -> KeyID {
        let keyID = KeyID(device: keys.publicKey, relay: relayPublicKey)
        let stored = StoredKeys(
            keyID: keyID.hex,
            deviceSecretKey: ByteEncoding.base64(keys.secretKey.copyBytes()),
            relayPublicKey: relayPublicKey.base64
        )
        try write(stored, "keys/\(keyID.hex).json")
        return keyID
    }

    /// Keeps what an activation (or re-activation) gave: the key pair with the relay's public key,
    /// checked against the key id the relay announced, and the new credential.
    @discardableResult
    public func adopt(_ activation: ActivationResponse, keys: KeyPair) throws -> KeyID {
        guard let relayKey = try? PublicKey(base64: activation.relayPublicKey) else {
            throw DeviceError.relay("the relay's public key is not a key")
        }
        let keyID = try saveKeys(keys, relayPublicKey: relayKey)
        guard keyID.hex == activation.keyID else {
            throw DeviceError.relay(
                "the relay's key id \(activation.keyID) is not the one the keys give (\(keyID.hex))"
            )
        }
        try saveCredential(activation.deviceCredential)
        return keyID
    }

    /// The session keys for a key id, derived from the stored pair; nil when none is stored.
    public func sessionKeys(for keyID: KeyID) -> SessionKeys? {
        guard let stored = read(StoredKeys.self, "keys/\(keyID.hex).json"),
            let secret = ByteEncoding.bytes(base64: stored.deviceSecretKey),
            let pair = try? KeyPair(secretKey: SecureBytes(copying: secret)),
            let relay = try? PublicKey(base64: stored.relayPublicKey)
        else { return nil }
        return try? KeyExchange.deviceSessionKeys(device: pair, relay: relay)
    }

    /// Every stored key id.
    public func keyIDs() -> [KeyID] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path("keys"))) ?? []
        return names.compactMap { name in
            name.hasSuffix(".json") ? KeyID(hex: String(name.dropLast(5))) : nil
        }
    }

    /// Deletes the keys of every agreement but these.
    public func removeKeys(except keep: Set<KeyID>) {
        for keyID in keyIDs() where !keep.contains(keyID) {
            try? FileManager.default.removeItem(atPath: path("keys/\(keyID.hex).json"))
        }
    }

    // MARK: Files

    func path(_ name: String) -> String { directory + "/" + name }

    private func read<T: Decodable>(_ type: T.Type, _ name: String) -> T? {
        guard let data = FileManager.default.contents(atPath: path(name)) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    private func write(_ value: some Encodable, _ name: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try replace(name, with: Array(try encoder.encode(value)) + [0x0A])
    }

    /// Writes beside, then renames: a reader (the extension) never sees half a file.
    func replace(_ name: String, with bytes: [UInt8]) throws {
        let target = path(name)
        let temporary = target + ".new"
        try? FileManager.default.removeItem(atPath: temporary)
        try SecretFile.write(bytes, to: temporary, mode: 0o600)
        guard rename(temporary, target) == 0 else {
            throw DeviceError.store("cannot write \(target)")
        }
    }
}
