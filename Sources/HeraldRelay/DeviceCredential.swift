import Crypto
import HeraldCrypto
import HeraldMacros

/// The bearer secret a device uses on its own endpoints: `<device id>.<32 random bytes, base64url>`.
///
/// The relay keeps only SHA-256 of the whole credential, so a copy of the store cannot act as a
/// device. The device id in front lets the relay find the hash to compare against.
@MemberwiseInit
struct DeviceCredential: Sendable {
    let deviceID: String
    let text: String

    static func make(deviceID: String) -> DeviceCredential {
        let secret = SecureBytes.random(count: 32).copyBytes()
        return DeviceCredential(deviceID: deviceID, text: deviceID + "." + ByteEncoding.base64URL(secret))
    }

    /// Splits a presented credential; `nil` when it does not have the shape.
    init?(presented text: String) {
        guard let dot = text.lastIndex(of: "."), dot != text.startIndex, text.index(after: dot) != text.endIndex
        else { return nil }
        self.init(deviceID: String(text[..<dot]), text: text)
    }

    var hash: [UInt8] { Array(SHA256.hash(data: Array(text.utf8))) }

    /// Compares against a stored hash in constant time.
    func matches(_ stored: [UInt8]) -> Bool {
        let mine = hash
        guard mine.count == stored.count else { return false }
        var difference: UInt8 = 0
        for index in mine.indices { difference |= mine[index] ^ stored[index] }
        return difference == 0
    }
}
