import Foundation
import HeraldServer
import Testing

/// The keys accepted besides the API key while backends move to a new one.
@Suite("API key rotation")
struct APIKeyRotationTests {
    static func keysDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "herald-rotation-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("none by default; keys/api.key.previous one per line; HERALD_API_KEY_PREVIOUS comma-separated wins")
    func sources() throws {
        let directory = try Self.keysDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let none = try ServerKeys(keysDirectory: directory, environment: [:]).previousAPIKeys()
        #expect(none.keys.isEmpty)
        #expect(none.source == nil)

        let file = directory + "/api.key.previous"
        try "hk_first-previous-0123456789\n\nhk_second-previous-0123456\n".write(
            toFile: file,
            atomically: true,
            encoding: .utf8
        )
        let fromFile = try ServerKeys(keysDirectory: directory, environment: [:]).previousAPIKeys()
        #expect(fromFile.keys == ["hk_first-previous-0123456789", "hk_second-previous-0123456"])
        #expect(fromFile.source == file)

        let environment = ["HERALD_API_KEY_PREVIOUS": "hk_from-environment-0123, hk_another-one-01234567"]
        let fromEnvironment = try ServerKeys(keysDirectory: directory, environment: environment).previousAPIKeys()
        #expect(fromEnvironment.keys == ["hk_from-environment-0123", "hk_another-one-01234567"])
        #expect(fromEnvironment.source == "HERALD_API_KEY_PREVIOUS")
    }

    @Test("a previous key shorter than 16 characters is refused, naming where it came from")
    func shortKeyRefused() throws {
        let directory = try Self.keysDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keys = ServerKeys(keysDirectory: directory, environment: ["HERALD_API_KEY_PREVIOUS": "short"])
        #expect {
            _ = try keys.previousAPIKeys()
        } throws: { error in
            "\(error)".contains("HERALD_API_KEY_PREVIOUS")
        }
    }
}
