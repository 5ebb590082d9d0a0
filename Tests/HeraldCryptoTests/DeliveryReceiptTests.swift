import HeraldCrypto
import HeraldDomain
import Testing

/// The phone's receipt (docs/receipts.md): made with the device's keys, verified with the
/// relay's, and bound to every field it carries.
@Suite(.timeLimit(.minutes(1))) struct DeliveryReceiptTests {
    static func receipt(_ pair: Pair, stage: ReceiptStage = .shown, failure: ReceiptFailure? = nil) -> DeliveryReceipt {
        DeliveryReceipt(
            keyID: pair.deviceKeys.keyID,
            pushID: "p-1",
            stage: stage,
            deviceTime: 1_763_726_400_123,
            failure: failure
        )
    }

    @Test func aDevicesTagVerifiesWithTheRelaysKeys() throws {
        let pair = Pair()
        for (stage, failure) in [(ReceiptStage.delivered, nil), (.opened, nil), (.shown, nil), (.tapped, nil)]
            + ReceiptFailure.allCases.map({ (ReceiptStage.failed, $0) })
        {
            let receipt = Self.receipt(pair, stage: stage, failure: failure)
            let tag = try receipt.tag(deviceKeys: pair.deviceKeys)
            #expect(tag.count == DeliveryReceipt.tagLength)
            #expect(receipt.verify(tag: tag, relayKeys: pair.relayKeys), "\(stage)")
        }
    }

    @Test func anyChangedFieldOrAnotherDevicesKeysFailToVerify() throws {
        let pair = Pair()
        let receipt = Self.receipt(pair)
        let tag = try receipt.tag(deviceKeys: pair.deviceKeys)
        var changes: [DeliveryReceipt] = []
        var other = receipt
        other.pushID = "p-2"
        changes.append(other)
        other = receipt
        other.stage = .tapped
        changes.append(other)
        other = receipt
        other.deviceTime += 1
        changes.append(other)
        for changed in changes {
            #expect(!changed.verify(tag: tag, relayKeys: pair.relayKeys))
        }
        // Another device's keys make another tag, which this device's relay keys refuse.
        let stranger = Pair()
        var forged = receipt
        forged.keyID = stranger.deviceKeys.keyID
        let forgedTag = try forged.tag(deviceKeys: stranger.deviceKeys)
        #expect(!forged.verify(tag: forgedTag, relayKeys: pair.relayKeys))
        #expect(!receipt.verify(tag: forgedTag, relayKeys: pair.relayKeys))
        // The key the envelope is sealed with (relay → device) does not make receipts.
        #expect(!receipt.verify(tag: tag, relayKeys: stranger.relayKeys))
        var flipped = tag
        flipped[0] ^= 1
        #expect(!receipt.verify(tag: flipped, relayKeys: pair.relayKeys))
        #expect(!receipt.verify(tag: Array(tag.dropLast()), relayKeys: pair.relayKeys))
    }

    @Test func aFailureGoesWithTheFailedStageOnly() throws {
        let pair = Pair()
        #expect(throws: HeraldCryptoError.malformedContent) {
            try Self.receipt(pair, stage: .failed).signedBytes()
        }
        #expect(throws: HeraldCryptoError.malformedContent) {
            try Self.receipt(pair, stage: .shown, failure: .tampered).signedBytes()
        }
    }

    @Test func signedBytesFollowTheDocumentedLayout() throws {
        let pair = Pair()
        let bytes = try Self.receipt(pair, stage: .failed, failure: .unknownKey).signedBytes()
        let domain = Array("herald-receipt-v1".utf8)
        var expected = domain + [1] + pair.deviceKeys.keyID.bytes + [0, 3] + Array("p-1".utf8) + [4]
        let time = UInt64(1_763_726_400_123)
        expected += (0..<8).map { UInt8(truncatingIfNeeded: time >> (56 - 8 * UInt64($0))) }
        expected += [0, 11] + Array("unknown_key".utf8)
        #expect(bytes == expected)
    }
}
