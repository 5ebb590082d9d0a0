import Foundation
import HeraldCrypto
import HeraldDomain
import Testing

/// docs/test-vectors/receipt-v1.json (written with PyNaCl by scripts/receipt_vectors.py):
/// `DeliveryReceipt` must reproduce every receipt's signed bytes and tag from the vector's keys,
/// verify it with the relay's keys, and refuse every negative entry.
@Suite(.timeLimit(.minutes(1))) struct ReceiptVectorTests {
    static let vectorURL = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "docs/test-vectors/receipt-v1.json")

    /// A JSON object of the file: read by name, so the test names the file's keys as they are.
    typealias Object = [String: Any]

    static func file() throws -> Object {
        try #require(JSONSerialization.jsonObject(with: Data(contentsOf: vectorURL)) as? Object)
    }

    static func value<Value>(_ object: Object, _ name: String, as type: Value.Type) throws -> Value {
        try #require(object[name] as? Value, "no \(name) (\(Value.self)) in \(object["name"] ?? "the file")")
    }

    static func string(_ object: Object, _ name: String) throws -> String { try value(object, name, as: String.self) }

    static func entries(_ name: String) throws -> [Object] { try value(try file(), name, as: [Object].self) }

    static func hex(_ object: Object, _ name: String) throws -> [UInt8] {
        try #require(ByteEncoding.bytes(hex: try string(object, name)), "\(name) is not hex")
    }

    /// Both sides' session keys of one activation, agreed from the file's seeds.
    static func sessionKeys(_ name: String = "keys") throws -> (device: SessionKeys, relay: SessionKeys) {
        let keys = try value(try file(), name, as: Object.self)
        let device = try KeyPair(seed: SecureBytes(copying: try hex(keys, "device_seed")))
        let relay = try KeyPair(seed: SecureBytes(copying: try hex(keys, "relay_seed")))
        #expect(device.publicKey.bytes == (try hex(keys, "device_public_key")))
        #expect(relay.publicKey.bytes == (try hex(keys, "relay_public_key")))
        let agreed = (
            device: try KeyExchange.deviceSessionKeys(device: device, relay: relay.publicKey),
            relay: try KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey)
        )
        #expect(agreed.device.keyID.hex == (try string(keys, "key_id")))
        #expect(agreed.relay.keyID == agreed.device.keyID)
        #expect(agreed.device.transmit.copyBytes() == (try hex(keys, "device_tx")))
        #expect(agreed.relay.receive.copyBytes() == (try hex(keys, "relay_rx")))
        return agreed
    }

    /// The receipt an entry presents: its key id, push id, stage, device time and failure.
    static func receipt(_ entry: Object) throws -> DeliveryReceipt {
        let failure: String? = try entry["failure"] is NSNull ? nil : string(entry, "failure")
        return DeliveryReceipt(
            keyID: try #require(KeyID(hex: try string(entry, "key_id"))),
            pushID: try string(entry, "push_id"),
            stage: try #require(ReceiptStage(rawValue: try string(entry, "stage"))),
            deviceTime: try value(entry, "device_time", as: NSNumber.self).int64Value,
            failure: try failure.map { try #require(ReceiptFailure(rawValue: $0)) }
        )
    }

    @Test(arguments: ["keys", "other_device"]) func keysFollowFromTheSeeds(_ name: String) throws {
        _ = try Self.sessionKeys(name)
    }

    @Test func everyReceiptIsReproducedAndVerifies() throws {
        #expect(try Self.value(try Self.file(), "version", as: Int.self) == 1)
        let (device, relay) = try Self.sessionKeys()
        var covered: Set<String> = []
        for entry in try Self.entries("receipts") {
            let name = try Self.string(entry, "name")
            let receipt = try Self.receipt(entry)
            #expect(try receipt.signedBytes() == Self.hex(entry, "signed"), "\(name)")
            let tag = try receipt.tag(deviceKeys: device)
            #expect(ByteEncoding.base64URL(tag) == (try Self.string(entry, "tag")), "\(name)")
            #expect(receipt.verify(tag: tag, relayKeys: relay), "\(name)")
            covered.insert(receipt.stage.rawValue + (receipt.failure.map { "/" + $0.rawValue } ?? ""))
        }
        // Every stage, and failed with every failure.
        let expected =
            ReceiptStage.allCases.filter { $0 != .failed }.map(\.rawValue)
            + ReceiptFailure.allCases.map { "failed/" + $0.rawValue }
        #expect(covered == Set(expected))
    }

    @Test func everyNegativeEntryIsRefused() throws {
        let (_, relay) = try Self.sessionKeys()
        let negative = try Self.entries("negative")
        #expect(negative.count >= 8)
        for entry in negative {
            let name = try Self.string(entry, "name")
            let tag = try #require(ByteEncoding.bytes(base64URL: try Self.string(entry, "tag")), "\(name)")
            #expect(!(try Self.receipt(entry)).verify(tag: tag, relayKeys: relay), "\(name)")
        }
    }
}
