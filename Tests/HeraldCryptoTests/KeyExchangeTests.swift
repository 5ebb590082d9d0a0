import HeraldCrypto
import Testing

@Suite(.timeLimit(.minutes(1))) struct KeyExchangeTests {
    @Test func bothSidesAgreeOnKeysAndKeyID() {
        let pair = Pair()
        #expect(pair.relayKeys.transmit == pair.deviceKeys.receive)
        #expect(pair.relayKeys.receive == pair.deviceKeys.transmit)
        #expect(pair.relayKeys.transmit != pair.relayKeys.receive)
        #expect(pair.relayKeys.keyID == pair.deviceKeys.keyID)
    }

    @Test func keyIDDependsOnBothPublicKeysAndTheirRoles() {
        let a = KeyPair.generate().publicKey
        let b = KeyPair.generate().publicKey
        let c = KeyPair.generate().publicKey
        #expect(KeyID(device: a, relay: b) != KeyID(device: b, relay: a))
        #expect(KeyID(device: a, relay: b) != KeyID(device: a, relay: c))
        #expect(KeyID(device: a, relay: b) == KeyID(device: a, relay: b))
        #expect(KeyID(device: a, relay: b).hex.count == 16)
    }

    @Test func aNewActivationGivesNewKeys() {
        let first = Pair()
        let second = Pair()
        #expect(first.deviceKeys.receive != second.deviceKeys.receive)
        #expect(first.deviceKeys.keyID != second.deviceKeys.keyID)
    }

    @Test func restoringAKeyPairFromItsSecretGivesTheSamePublicKey() throws {
        let pair = KeyPair.generate()
        let restored = try KeyPair(secretKey: SecureBytes(copying: pair.secretKey.copyBytes()))
        #expect(restored.publicKey == pair.publicKey)
    }

    @Test func seededKeyPairsAreDeterministic() throws {
        let seed = SecureBytes(copying: [UInt8](repeating: 7, count: 32))
        #expect(try KeyPair(seed: seed).publicKey == KeyPair(seed: seed).publicKey)
        #expect(throws: HeraldCryptoError.invalidKey) { try KeyPair(seed: SecureBytes(copying: [1, 2, 3])) }
    }

    @Test func lowOrderPublicKeyIsRefused() throws {
        // The all-zero point has low order: X25519 yields an all-zero secret, which libsodium refuses.
        let zero = try PublicKey(bytes: [UInt8](repeating: 0, count: 32))
        #expect(throws: HeraldCryptoError.keyAgreementFailed) {
            try KeyExchange.relaySessionKeys(relay: .generate(), device: zero)
        }
    }

    @Test func publicKeysHaveExactlyThirtyTwoBytes() throws {
        #expect(throws: HeraldCryptoError.invalidKey) { try PublicKey(bytes: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: HeraldCryptoError.invalidKey) { try PublicKey(base64: "not base64!") }
        let key = KeyPair.generate().publicKey
        #expect(try PublicKey(base64: key.base64) == key)
    }
}
