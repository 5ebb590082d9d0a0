import HeraldRelay
import HeraldStore

extension HeraldConfiguration {
    /// The relay's default for messages to users without a device, from the file's
    /// `undeliverable` and `hold_for` (docs/relay.md, "A message to nobody").
    static func undeliverable(_ file: ConfigurationFile) throws(HeraldServerError) -> UndeliverableConfiguration {
        var settings = UndeliverableConfiguration()
        if let policy = file.undeliverable { settings.policy = policy }
        if let seconds = file.holdFor {
            guard (1...UndeliverableConfiguration.maximumHoldFor).contains(seconds) else {
                throw .configuration(
                    "hold_for must be between 1 and \(UndeliverableConfiguration.maximumHoldFor) seconds (7 days)"
                )
            }
            settings.holdFor = seconds
        }
        return settings
    }
}
