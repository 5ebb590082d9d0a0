import Hummingbird

extension SandboxControlAPI {
    /// `/sandbox/hms/…`: Huawei apps, Push Kit access tokens and faults, the Push Kit inspection log.
    static func addHMSRoutes(to router: Router<Context>, core: SandboxCore) {
        // The ids only: a client secret is never answered.
        router.get("/sandbox/hms/apps") { _, _ in JSON(["app_ids": core.hmsAppIDs]) }
        router.post("/sandbox/hms/apps") { request, context -> JSON<[String: String]> in
            let app = try await request.decodeJSON(as: SandboxHMSApp.self, context: context)
            try core.register(hmsApp: app)
            return JSON(["app_id": app.appID], status: .created)
        }
        addRoutes(of: core.hms, name: "hms", to: router)
    }
}
