public import HeraldConsole
import HeraldCrypto
public import HeraldStore

extension HeraldConfiguration {
    /// The console's settings as the file gives them: `enabled` nil means "the mode's default"
    /// (on in sandbox mode).
    public struct ConsoleSettings: Sendable {
        public var enabled: Bool?
        public var sessionLifetime: Duration = .seconds(8 * 3600)
        public var secureCookies = false
        public var operators: [OperatorRecord] = []

        public init() {}

        /// Whether `/console` is served, in sandbox mode or not.
        public func isOn(sandboxMode: Bool) -> Bool { enabled ?? sandboxMode }

        /// The console's configuration for a node.
        public func configuration() -> ConsoleConfiguration {
            var configuration = ConsoleConfiguration()
            configuration.sessionLifetime = sessionLifetime
            configuration.secureCookies = secureCookies
            configuration.operators = operators
            return configuration
        }
    }

    /// `console:` checked: a bad role, name or hash stops the start with one line naming it.
    static func console(_ file: ConfigurationFile) throws(HeraldServerError) -> ConsoleSettings {
        var settings = ConsoleSettings()
        guard let section = file.console else { return settings }
        settings.enabled = section.enabled
        settings.secureCookies = section.secureCookies ?? false
        if let seconds = section.sessionLifetime {
            guard (300...604_800).contains(seconds) else {
                throw .configuration("console.session_lifetime must be between 300 and 604800 seconds (7 days)")
            }
            settings.sessionLifetime = .seconds(seconds)
        }
        for (index, entry) in (section.operators ?? []).enumerated() {
            let place = "console.operators[\(index)]"
            guard OperatorName.isValid(entry.name) else {
                throw .configuration("\(place).name must be 1 to 64 of a-z, 0-9, '.', '-' and '_'")
            }
            guard let role = OperatorRole(rawValue: entry.role) else {
                throw .configuration("\(place).role must be viewer or operator")
            }
            guard PasswordHash.isArgon2id(entry.passwordHash) else {
                throw .configuration(
                    "\(place).password_hash must be an Argon2id hash ($argon2id$…, herald operators hash)"
                )
            }
            guard !settings.operators.contains(where: { $0.name == entry.name }) else {
                throw .configuration("\(place).name \(entry.name) is given twice")
            }
            settings.operators.append(
                OperatorRecord(name: entry.name, role: role, passwordHash: entry.passwordHash, createdAt: 0)
            )
        }
        return settings
    }
}
