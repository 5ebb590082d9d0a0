import Foundation
import HeraldCrypto
import HeraldDomain
import HeraldRelayAPI

extension EmulatedPhone {
    // MARK: Keys

    /// Re-activates with a new key pair (the credential and the relay's keys rotate too). The
    /// previous agreement's keys stay in the app-group store, so pushes sealed before the
    /// rotation still open; older ones are deleted.
    public func rotateKeys() async throws {
        guard let registration = store.registration(), let credential = store.credential() else {
            throw DeviceError.store("the phone is not activated yet")
        }
        let keys = KeyPair.generate()
        let activation = try await http.activate(
            relay: registration.relayURL,
            ActivationRequest(
                userID: registration.userID,
                app: registration.app,
                platform: configuration.platform,
                publicKey: keys.publicKey.base64,
                deviceID: registration.deviceID
            ),
            bearer: credential
        )
        let keyID = try store.adopt(activation, keys: keys)
        var updated = registration
        updated.keyID = activation.keyID
        updated.previousKeyID = registration.keyID
        try store.save(updated)
        store.removeKeys(except: Set([keyID] + (KeyID(hex: registration.keyID).map { [$0] } ?? [])))
        timeline.record(
            "sdk",
            "relay",
            "keys rotated (re-activation)",
            detail: "key id \(activation.keyID), previous \(registration.keyID)"
        )
    }
}
