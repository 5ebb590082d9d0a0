import CSodium

/// A `crypto_kx` (X25519) public key: 32 bytes, not secret.
public struct PublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The length of a public key in bytes.
    public static let length = Int(crypto_kx_PUBLICKEYBYTES)

    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// Wraps 32 bytes; throws `invalidKey` for any other length.
    public init(bytes: some Collection<UInt8>) throws(HeraldCryptoError) {
        guard bytes.count == Self.length else { throw .invalidKey }
        self.bytes = Array(bytes)
    }

    /// Parses the base64 (standard or url-safe) text form used in JSON.
    public init(base64 text: String) throws(HeraldCryptoError) {
        guard let bytes = ByteEncoding.bytes(base64: text) ?? ByteEncoding.bytes(base64URL: text) else {
            throw HeraldCryptoError.invalidKey.with(detail: "the public key is not base64")
        }
        try self.init(bytes: bytes)
    }

    /// Standard base64, the form used in the relay's JSON API.
    public var base64: String { ByteEncoding.base64(bytes) }

    public var description: String { "PublicKey(\(base64))" }
}

/// A `crypto_kx` key pair. The device is the kx client, the relay the kx server.
public struct KeyPair: Sendable {
    /// The public half, sent to the peer.
    public let publicKey: PublicKey
    /// The secret half (32 bytes), zeroed on release.
    public let secretKey: SecureBytes

    /// A fresh random key pair (`crypto_kx_keypair`).
    public static func generate() -> KeyPair {
        Sodium.ensureInitialized()
        var publicBytes = [UInt8](repeating: 0, count: PublicKey.length)
        let secret = SecureBytes(count: Int(crypto_kx_SECRETKEYBYTES)) { secret in
            _ = crypto_kx_keypair(&publicBytes, secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return KeyPair(publicKey: try! PublicKey(bytes: publicBytes), secretKey: secret)
    }

    /// The key pair determined by a 32-byte seed (`crypto_kx_seed_keypair`): for test vectors.
    public init(seed: SecureBytes) throws(HeraldCryptoError) {
        guard seed.count == Int(crypto_kx_SEEDBYTES) else { throw .invalidKey }
        var publicBytes = [UInt8](repeating: 0, count: PublicKey.length)
        let secret = SecureBytes(count: Int(crypto_kx_SECRETKEYBYTES)) { secret in
            seed.withUnsafeBytes { seed in
                _ = crypto_kx_seed_keypair(
                    &publicBytes,
                    secret.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    seed.baseAddress!.assumingMemoryBound(to: UInt8.self)
                )
            }
        }
        self.init(publicKey: try! PublicKey(bytes: publicBytes), secretKey: secret)
    }

    /// Restores a key pair from its secret key (the public key is `crypto_scalarmult_base` of it).
    public init(secretKey: SecureBytes) throws(HeraldCryptoError) {
        guard secretKey.count == Int(crypto_kx_SECRETKEYBYTES) else { throw .invalidKey }
        Sodium.ensureInitialized()
        var publicBytes = [UInt8](repeating: 0, count: PublicKey.length)
        let status = secretKey.withUnsafeBytes { secret in
            crypto_scalarmult_base(&publicBytes, secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard status == 0 else { throw .invalidKey }
        self.init(publicKey: try PublicKey(bytes: publicBytes), secretKey: secretKey)
    }

    private init(publicKey: PublicKey, secretKey: SecureBytes) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}

/// A short identifier of one key agreement, carried in clear in every envelope so the receiver
/// can pick the right session key (the current one or the previous one after a rotation).
///
/// `keyID = BLAKE2b-128("herald-kid-v1" ‖ devicePublicKey ‖ relayPublicKey)[0..<8]`,
/// with BLAKE2b unkeyed and a 16-byte output (`crypto_generichash`).
public struct KeyID: Sendable, Hashable, CustomStringConvertible, Codable {
    /// The length of a key id in bytes.
    public static let length = 8
    static let domain: [UInt8] = Array("herald-kid-v1".utf8)

    /// The key id as a big-endian integer: cheap to hash and compare.
    public let rawValue: UInt64

    /// Derives the key id of the agreement between a device (kx client) and the relay (kx server).
    public init(device: PublicKey, relay: PublicKey) {
        Sodium.ensureInitialized()
        let input = Self.domain + device.bytes + relay.bytes
        var digest = [UInt8](repeating: 0, count: 16)
        _ = crypto_generichash(&digest, 16, input, UInt64(input.count), nil, 0)
        self.init(bytes: digest[0..<Self.length])!
    }

    /// The key id from its 8 bytes; nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.length else { return nil }
        rawValue = bytes.reduce(0) { ($0 << 8) | UInt64($1) }
    }

    /// The key id from 16 hex characters.
    public init?(hex: String) {
        guard let bytes = ByteEncoding.bytes(hex: hex) else { return nil }
        self.init(bytes: bytes)
    }

    /// The 8 bytes, big-endian.
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.length) { buffer, initialized in
            write(to: buffer)
            initialized = Self.length
        }
    }

    /// Writes the 8 bytes, big-endian, into `buffer` (at least 8 bytes long).
    func write(to buffer: UnsafeMutableBufferPointer<UInt8>) {
        for index in 0..<Self.length {
            buffer[index] = UInt8(truncatingIfNeeded: rawValue >> (56 - 8 * UInt64(index)))
        }
    }

    /// 16 lowercase hex characters: the form used in JSON and logs.
    public var hex: String { ByteEncoding.hex(bytes) }

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = KeyID(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a key id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

/// The two directional keys that one side holds after the key agreement, and their key id.
///
/// The relay seals pushes with its `transmit` key; the device opens them with its `receive` key,
/// which is the same key.
public struct SessionKeys: Sendable {
    /// The key this side opens with.
    public let receive: SecureBytes
    /// The key this side seals with.
    public let transmit: SecureBytes
    /// The id of the agreement both keys come from.
    public let keyID: KeyID

    /// Restores session keys from storage.
    public init(receive: SecureBytes, transmit: SecureBytes, keyID: KeyID) throws(HeraldCryptoError) {
        let length = Int(crypto_kx_SESSIONKEYBYTES)
        guard receive.count == length, transmit.count == length else { throw .invalidKey }
        self.receive = receive
        self.transmit = transmit
        self.keyID = keyID
    }
}

/// The activation key agreement (`crypto_kx`).
public enum KeyExchange {
    /// The device's side: its own key pair and the relay's public key.
    public static func deviceSessionKeys(
        device: KeyPair,
        relay: PublicKey
    ) throws(HeraldCryptoError) -> SessionKeys {
        try agree(own: device, peer: relay, keyID: KeyID(device: device.publicKey, relay: relay), client: true)
    }

    /// The relay's side: its key pair for this device and the device's public key.
    public static func relaySessionKeys(
        relay: KeyPair,
        device: PublicKey
    ) throws(HeraldCryptoError) -> SessionKeys {
        try agree(own: relay, peer: device, keyID: KeyID(device: device, relay: relay.publicKey), client: false)
    }

    private static func agree(
        own: KeyPair,
        peer: PublicKey,
        keyID: KeyID,
        client: Bool
    ) throws(HeraldCryptoError) -> SessionKeys {
        Sodium.ensureInitialized()
        let length = Int(crypto_kx_SESSIONKEYBYTES)
        var status: Int32 = 0
        var transmit: SecureBytes?
        let receive = SecureBytes(count: length) { rx in
            transmit = SecureBytes(count: length) { tx in
                own.secretKey.withUnsafeBytes { secret in
                    let rxp = rx.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    let txp = tx.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    let sk = secret.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    status =
                        client
                        ? crypto_kx_client_session_keys(rxp, txp, own.publicKey.bytes, sk, peer.bytes)
                        : crypto_kx_server_session_keys(rxp, txp, own.publicKey.bytes, sk, peer.bytes)
                }
            }
        }
        guard status == 0, let transmit else { throw .keyAgreementFailed }
        return try SessionKeys(receive: receive, transmit: transmit, keyID: keyID)
    }
}
