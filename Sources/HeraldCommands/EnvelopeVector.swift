import HeraldCrypto

/// One entry of docs/test-vectors/envelope-v1.json, and the input of `herald envelope open`.
///
/// Byte fields are lowercase hex; `envelope` is the text form (base64url, no padding).
struct EnvelopeVector: Codable, Equatable {
    var name: String?
    var description: String?
    var kind: PushKind
    var pushID: String
    var deviceID: String
    /// A callback's push number, bound into its additional data; absent for other kinds.
    var sequence: UInt16?
    var deviceSeed: String?
    var devicePublicKey: String?
    var deviceSecretKey: String
    var relaySeed: String?
    var relayPublicKey: String
    var relaySecretKey: String?
    var keyID: String?
    var deviceReceiveKey: String?
    var deviceTransmitKey: String?
    var nonce: String?
    var content: PushContent?
    var plaintext: String?
    var additionalData: String?
    var envelope: String

    enum CodingKeys: String, CodingKey {
        case name, description, kind, nonce, content, plaintext, envelope, sequence
        case pushID = "push_id"
        case deviceID = "device_id"
        case deviceSeed = "device_seed"
        case devicePublicKey = "device_public_key"
        case deviceSecretKey = "device_secret_key"
        case relaySeed = "relay_seed"
        case relayPublicKey = "relay_public_key"
        case relaySecretKey = "relay_secret_key"
        case keyID = "key_id"
        case deviceReceiveKey = "device_rx"
        case deviceTransmitKey = "device_tx"
        case additionalData = "additional_data"
    }

    var context: EnvelopeContext {
        EnvelopeContext(kind: kind, pushID: pushID, deviceID: deviceID, sequence: sequence ?? 0)
    }

    /// The device's session keys, agreed from the device's secret key and the relay's public key.
    func deviceSessionKeys() throws -> SessionKeys {
        guard let secret = ByteEncoding.bytes(hex: deviceSecretKey) else {
            throw HeraldCryptoError.invalidKey.with(detail: "device_secret_key is not hex")
        }
        guard let relay = ByteEncoding.bytes(hex: relayPublicKey) else {
            throw HeraldCryptoError.invalidKey.with(detail: "relay_public_key is not hex")
        }
        let device = try KeyPair(secretKey: SecureBytes(copying: secret))
        return try KeyExchange.deviceSessionKeys(device: device, relay: PublicKey(bytes: relay))
    }

    /// Opens `envelope` as the device would.
    func open() throws -> PushContent {
        let opener = EnvelopeOpener(sessionKeys: [try deviceSessionKeys()])
        return try opener.openContent(Envelope(text: envelope), context: context)
    }
}

/// The file docs/test-vectors/envelope-v1.json.
struct EnvelopeVectorFile: Codable, Equatable {
    /// A tampered envelope that must not open, and the error the Swift core reports.
    struct Negative: Codable, Equatable {
        var name: String
        var base: String
        var kind: PushKind
        var pushID: String
        var deviceID: String
        /// For a callback: the push number to open it as.
        var sequence: UInt16?
        var envelope: String
        var error: String

        enum CodingKeys: String, CodingKey {
            case name, base, kind, envelope, error, sequence
            case pushID = "push_id"
            case deviceID = "device_id"
        }
    }

    /// One clear field Herald puts beside the envelope in a push, and what vouches for it.
    struct ClearField: Codable, Equatable {
        /// `apns` (a path in the JSON body) or `fcm` (a data key).
        var network: String
        var field: String
        /// `additional_data` (a different value does not open), `sealed_content` (must equal
        /// the sealed field, else the push is tampered), `push_type` (the APNs push type picks
        /// the kind) or `none` (not authenticated; not used for routing).
        var boundBy: String
        var rule: String

        enum CodingKeys: String, CodingKey {
            case network, field, rule
            case boundBy = "bound_by"
        }
    }

    /// A whole push built around a vector's envelope, possibly with its clear fields changed,
    /// and what the receiver must make of it: `opened`, `tampered` (the envelope opens but a
    /// clear routing field disagrees with it: the generic text, reported as tampered) or
    /// `refused` (the envelope does not open).
    struct Routing: Codable, Equatable {
        var name: String
        var base: String
        var network: String
        /// The APNs push type (`alert`), for `apns` entries.
        var pushType: String?
        /// The APNs JSON body, for `apns` entries.
        var payload: String?
        /// The FCM data message's data, for `fcm` entries.
        var data: [String: String]?
        var expect: String

        enum CodingKeys: String, CodingKey {
            case name, base, network, payload, data, expect
            case pushType = "push_type"
        }
    }

    var format: String
    var notes: [String]
    var vectors: [EnvelopeVector]
    var negative: [Negative]
    var clearFields: [ClearField]
    var routing: [Routing]

    enum CodingKeys: String, CodingKey {
        case format, notes, vectors, negative, routing
        case clearFields = "clear_fields"
    }
}
