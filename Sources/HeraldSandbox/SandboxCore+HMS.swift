extension SandboxCore {
    /// Registers (or replaces) a Huawei app: its client secret gets access tokens, its id takes
    /// sends. Tokens already granted stay valid.
    public func register(hmsApp app: SandboxHMSApp) throws(SandboxError) {
        try hms.tokenEndpoint.register(app: app)
    }

    /// The registered Huawei apps' ids, sorted.
    public var hmsAppIDs: [String] { hms.tokenEndpoint.appIDs.sorted() }

    /// How many Push Kit access tokens were granted.
    public var hmsAccessTokenGrants: Int { hms.accessTokenGrants }

    /// Makes every Push Kit access token granted so far expired: sends with one get 80200003.
    public func expireHMSAccessTokens() {
        hms.expireAccessTokens()
    }

    /// Queues a Push Kit fault for the next matching authorized sends.
    public func inject(hmsFault fault: SandboxHMSFault) throws(SandboxError) {
        try hms.inject(fault)
    }

    /// The Push Kit inspection log (sends and token requests), oldest first, optionally only the
    /// sends naming one token, and only the last `limit`.
    public func hmsInspection(token: String? = nil, limit: Int? = nil) -> [SandboxHMSInspectionRecord] {
        hms.records(token: token, limit: limit)
    }

    /// Every Push Kit inspection record made from now on, as it is made. For tests: a signal to
    /// wait on.
    public func hmsInspectionUpdates() -> AsyncStream<SandboxHMSInspectionRecord> {
        hms.log.updates()
    }
}
