import Foundation
import HeraldCrypto
import HeraldServer
import HeraldStore
import Testing

@Suite("Console configuration")
struct ConsoleConfigurationTests {
    static func resolve(_ yaml: String) throws -> HeraldConfiguration {
        try HeraldConfiguration(
            layers: [try ConfigurationFile.parse(Data(yaml.utf8), format: .yaml, path: "herald.yaml")]
        )
    }

    @Test("On by default in sandbox mode only; the file turns it on or off either way")
    func defaults() throws {
        let none = try Self.resolve("port: 8080")
        #expect(none.console.isOn(sandboxMode: true))
        #expect(!none.console.isOn(sandboxMode: false))
        #expect(none.console.sessionLifetime == .seconds(8 * 3600))
        let on = try Self.resolve("console:\n  enabled: true\n  session_lifetime: 3600\n  secure_cookies: true")
        #expect(on.console.isOn(sandboxMode: false))
        #expect(on.console.configuration().sessionLifetime == .seconds(3600))
        #expect(on.console.configuration().secureCookies)
        #expect(!(try Self.resolve("console:\n  enabled: false")).console.isOn(sandboxMode: true))
    }

    @Test("Configured operators: a name, a role and an Argon2id hash, checked at start")
    func operators() throws {
        let hash = try PasswordHash.hash("a long enough password", strength: .minimum)
        let configuration = try Self.resolve(
            """
            console:
              operators:
                - name: ops.lead
                  role: operator
                  password_hash: "\(hash)"
            """
        )
        #expect(configuration.console.operators.map(\.name) == ["ops.lead"])
        #expect(configuration.console.configuration().operators.first?.role == .operator)
    }

    @Test(
        "A bad console section stops the start with one line naming the field",
        arguments: [
            ("console:\n  session_lifetime: 10", "console.session_lifetime"),
            ("console:\n  operators:\n    - {name: Ann, role: viewer, password_hash: x}", "console.operators[0].name"),
            ("console:\n  operators:\n    - {name: ann, role: admin, password_hash: x}", "console.operators[0].role"),
            (
                "console:\n  operators:\n    - {name: ann, role: viewer, password_hash: plain-text}",
                "console.operators[0].password_hash"
            ),
            ("console:\n  enabeld: true", "enabeld"),
        ]
    )
    func refusals(yaml: String, field: String) {
        do {
            _ = try Self.resolve(yaml)
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect("\(error)".contains(field), "\(error)")
        }
    }
}
