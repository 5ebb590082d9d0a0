import Hummingbird

extension SandboxControlAPI {
    /// `/sandbox/webpush/…`: Web Push faults and the Web Push inspection log (filtered by
    /// `endpoint`, a subscription's endpoint or the id at its end).
    static func addWebPushRoutes(to router: Router<Context>, core: SandboxCore) {
        addRoutes(of: core.webPush, name: "webpush", to: router)
    }
}
