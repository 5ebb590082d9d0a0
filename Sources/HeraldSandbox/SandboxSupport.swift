import Foundation

/// Random identifiers and tokens in the shapes Apple and Google use.
enum RandomText {
    /// `bytes` random bytes as lowercase hex.
    static func hex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes * 2)
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `count` random characters of the URL-safe base64 alphabet.
    static func urlSafe(count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<count).map { _ in alphabet[Int(generator.next() % 64)] }, as: UTF8.self)
    }

    /// A registration token in FCM's shape: an instance id, a colon, and `APA91b…`.
    static func registrationToken() -> String {
        urlSafe(count: 22) + ":APA91b" + urlSafe(count: 134)
    }

    /// `value` as 16 lowercase hex digits.
    static func hex16(_ value: UInt64) -> String {
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
