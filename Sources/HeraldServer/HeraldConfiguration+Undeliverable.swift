import HeraldRelay
import HeraldStore

extension HeraldConfiguration {
    /// The relay's default for messages to users without a device, from the file's
    /// `undeliverable` and `hold_for` (docs/relay.md, "A message to nobody").
    static func undeliverable(_ file: ConfigurationFile) throws(HeraldServerError) -> UndeliverableConfiguration {
        var settings = UndeliverableConfiguration()
        if let policy = file.undeliverable { settings.policy = policy }
        if let seconds = file.holdFor {
            let allowed = UndeliverableConfiguration.holdForSeconds
            guard allowed.contains(seconds) else {
                throw .configuration("hold_for must be between 1 and \(allowed.upperBound) seconds (7 days)")
            }
            settings.holdFor = .seconds(seconds)
        }
        return settings
    }
}
