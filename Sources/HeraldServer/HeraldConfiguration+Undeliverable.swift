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

    /// The relay's own deadlines, from the file's `callkit_report_window` (docs/receipts.md, "The
    /// PushKit guard").
    static func deadlines(_ file: ConfigurationFile) throws(HeraldServerError) -> DeadlineConfiguration {
        var settings = DeadlineConfiguration()
        if let seconds = file.callKitReportWindow {
            guard (1...600).contains(seconds) else {
                throw .configuration("callkit_report_window must be between 1 and 600 seconds")
            }
            settings.callKitReportWindow = .seconds(seconds)
        }
        return settings
    }
}
