import Foundation
import HeraldRelay
import HeraldServer
import Testing

@Suite("Webhook configuration")
struct WebhookConfigurationTests {
    static func parse(_ yaml: String) throws -> ConfigurationFile {
        try ConfigurationFile.parse(Data(yaml.utf8), format: .yaml, path: "herald.yaml")
    }

    @Test("an app's webhook comes from the file, its secret from the environment variable it names")
    func fromFileAndEnvironment() throws {
        let file = try Self.parse(
            """
            apps:
              - id: com.example.chat
                team_id: ABCDE12345
            webhooks:
              retry_window: 3600
              apps:
                com.example.chat:
                  url: https://backend.example/herald
                  secret_env: CHAT_HOOK_SECRET
            """
        )
        let configuration = try HeraldConfiguration(layers: [file])
        #expect(configuration.webhookRetryWindow == .seconds(3600))
        let secret = String(repeating: "s", count: 40)
        #expect(
            try configuration.webhookSettings(environment: ["CHAT_HOOK_SECRET": secret])
                == ["com.example.chat": WebhookSettings(url: "https://backend.example/herald", secret: secret)]
        )
        #expect(throws: HeraldServerError.self) { try configuration.webhookSettings(environment: [:]) }
        #expect(HeraldConfiguration().webhookRetryWindow == .seconds(72 * 3600))
    }

    @Test("a misspelt webhook key is refused with its path")
    func unknownKey() throws {
        #expect(throws: HeraldServerError.self) {
            _ = try Self.parse("webhooks:\n  apps:\n    com.example.chat:\n      secert: x\n")
        }
        #expect(throws: HeraldServerError.self) {
            _ = try HeraldConfiguration(layers: [try Self.parse("webhooks:\n  retry_window: 0\n")])
        }
    }
}
