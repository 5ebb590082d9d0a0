import HeraldRelay

extension ConfigurationFile {
    /// `quotas`: messages a second per app, counted over the messages sent with the app's API
    /// keys (docs/relay.md, "Keys and quotas"). Reloaded on SIGHUP.
    public struct Quotas: Codable, Sendable, Equatable {
        public init() {}

        /// Every app's quota, unless `apps` names its own.
        public var messagesPerSecond: Double?
        /// How many messages at once (the bucket's size); one second's worth when not given.
        public var burst: Int?
        /// Every app's cap on queued messages, unless `apps` names its own.
        public var maxQueued: Int?
        /// Each app's own.
        public var apps: [String: AppQuota]?

        public struct AppQuota: Codable, Sendable, Equatable {
            public var messagesPerSecond: Double?
            public var burst: Int?
            public var maxQueued: Int?

            enum CodingKeys: String, CodingKey {
                case messagesPerSecond = "messages_per_second"
                case burst
                case maxQueued = "max_queued"
            }
        }

        enum CodingKeys: String, CodingKey {
            case messagesPerSecond = "messages_per_second"
            case burst, apps
            case maxQueued = "max_queued"
        }
    }
}

extension HeraldConfiguration {
    /// The file's quotas, checked: a rate above 0 and at most 100,000 a second, a burst of 1 to
    /// 100,000, a cap of 1 to 100,000,000 queued messages.
    static func quotas(_ file: ConfigurationFile) throws(HeraldServerError) -> QuotaConfiguration {
        guard let quotas = file.quotas else { return QuotaConfiguration() }
        func quota(_ rate: Double, _ burst: Int?, _ path: String) throws(HeraldServerError) -> MessageQuota {
            guard rate > 0, rate <= 100_000 else {
                throw .configuration("\(path).messages_per_second must be more than 0 and at most 100000")
            }
            let quota = MessageQuota(messagesPerSecond: rate, burst: burst)
            guard (1...100_000).contains(quota.burst) else {
                throw .configuration("\(path).burst must be 1 to 100000")
            }
            return quota
        }
        var configuration = QuotaConfiguration()
        if let rate = quotas.messagesPerSecond {
            configuration.defaultQuota = try quota(rate, quotas.burst, "quotas")
        } else if quotas.burst != nil {
            throw .configuration("quotas.burst needs quotas.messages_per_second")
        }
        func cap(_ value: Int?, _ path: String) throws(HeraldServerError) -> Int? {
            guard let value else { return nil }
            guard (1...100_000_000).contains(value) else {
                throw .configuration("\(path).max_queued must be 1 to 100000000")
            }
            return value
        }
        configuration.defaultCap = try cap(quotas.maxQueued, "quotas")
        for (app, own) in quotas.apps ?? [:] {
            let path = "quotas.apps.\(app)"
            if let rate = own.messagesPerSecond {
                configuration.apps[app] = try quota(rate, own.burst, path)
            } else if own.burst != nil {
                throw .configuration("\(path).burst needs \(path).messages_per_second")
            }
            configuration.appCaps[app] = try cap(own.maxQueued, path)
        }
        return configuration
    }
}
