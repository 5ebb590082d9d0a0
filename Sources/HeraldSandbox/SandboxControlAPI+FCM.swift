import Hummingbird

extension SandboxControlAPI {
    /// `/sandbox/fcm/…`: service accounts, access tokens, FCM faults and the FCM inspection log.
    static func addFCMRoutes(to router: Router<Context>, core: SandboxCore) {
        router.get("/sandbox/fcm/service-accounts") { _, _ in
            JSON(ServiceAccountList(serviceAccounts: core.serviceAccounts))
        }
        router.post("/sandbox/fcm/service-accounts") { request, context -> JSON<SandboxServiceAccount> in
            let account = try await request.decodeJSON(as: SandboxServiceAccount.self, context: context)
            try core.register(serviceAccount: account)
            return JSON(account, status: .created)
        }
        addRoutes(of: core.fcm, name: "fcm", to: router)
    }

    struct ServiceAccountList: Encodable {
        let serviceAccounts: [SandboxServiceAccount]

        enum CodingKeys: String, CodingKey {
            case serviceAccounts = "service_accounts"
        }
    }
}
