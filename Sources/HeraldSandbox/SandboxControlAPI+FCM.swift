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
        router.post("/sandbox/fcm/access-tokens/expire") { _, _ -> HTTPResponse.Status in
            core.expireAccessTokens()
            return .noContent
        }
        addFaultRoute(to: router, path: "/sandbox/fcm/faults") { (fault: SandboxFCMFault) in
            try core.inject(fcmFault: fault)
        }
        router.get("/sandbox/fcm/inspection") { request, _ in
            let (token, limit) = try inspectionFilter(request)
            return JSON(
                FCMInspection(
                    records: core.fcmInspection(token: token, limit: limit),
                    accessTokenGrants: core.fcmAccessTokenGrants
                )
            )
        }
        router.delete("/sandbox/fcm/inspection") { _, _ -> HTTPResponse.Status in
            core.clearFCMInspection()
            return .noContent
        }
    }

    struct ServiceAccountList: Encodable {
        let serviceAccounts: [SandboxServiceAccount]

        enum CodingKeys: String, CodingKey {
            case serviceAccounts = "service_accounts"
        }
    }

    struct FCMInspection: Encodable {
        let records: [SandboxFCMInspectionRecord]
        /// Access tokens granted so far (not cleared with the log).
        let accessTokenGrants: Int

        enum CodingKeys: String, CodingKey {
            case records
            case accessTokenGrants = "access_token_grants"
        }
    }
}
