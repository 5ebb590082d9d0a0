/// The Web Push service's controls and inspection, in-process (the control API's
/// `/sandbox/webpush/…` routes call these).
extension SandboxCore {
    /// `https://<host>:<port>`: where the Web Push listener takes pushes (`POST /wp/{id}`), and
    /// under which browsers' subscription endpoints are minted.
    public var webPushEndpointBase: String { webPush.endpointBase }

    /// Queues a Web Push fault for the next matching push requests.
    public func inject(webPushFault fault: SandboxWebPushFault) throws(SandboxError) {
        try webPush.inject(fault)
    }

    /// The Web Push inspection log, oldest first, optionally only the pushes to one subscription
    /// (its endpoint or the id at its end), and only the last `limit`.
    public func webPushInspection(endpoint: String? = nil, limit: Int? = nil) -> [SandboxWebPushInspectionRecord] {
        webPush.records(token: endpoint, limit: limit)
    }

    /// Every Web Push inspection record made from now on, as it is made. For tests: a signal to
    /// wait on.
    public func webPushInspectionUpdates() -> AsyncStream<SandboxWebPushInspectionRecord> {
        webPush.log.updates()
    }
}
