import Hummingbird

/// What the control API asks of the FCM and Push Kit emulators alike: expiring every access
/// token, queuing faults, and their inspection logs.
protocol SandboxPushNetwork: FaultPlanning where Fault: Codable, Record.Record == Record {
    associatedtype Record: InspectionLogEntry & Encodable
    var log: InspectionLog<Record> { get }
    func inject(_ fault: Fault) throws(SandboxError)
    /// Makes every access token granted so far expired.
    func expireAccessTokens()
    /// How many access tokens were granted (not cleared with the log).
    var accessTokenGrants: Int { get }
    /// Whether a record is of a request naming `token`.
    static func record(_ record: Record, names token: String) -> Bool
}

extension SandboxPushNetwork {
    /// The log, oldest first, optionally only the requests naming one token, and only the last
    /// `limit`.
    func records(token: String?, limit: Int?) -> [Record] {
        log.records(where: token.map { token in { Self.record($0, names: token) } }, limit: limit)
    }
}

extension SandboxControlAPI {
    /// `{"records": [...], "access_token_grants": n}`.
    struct NetworkInspection<Record: Encodable>: Encodable {
        let records: [Record]
        let accessTokenGrants: Int

        enum CodingKeys: String, CodingKey {
            case records
            case accessTokenGrants = "access_token_grants"
        }
    }

    /// `/sandbox/<name>/access-tokens/expire`, `/faults` and `/inspection` (GET and DELETE).
    static func addRoutes<Network: SandboxPushNetwork>(of network: Network, name: String, to router: Router<Context>) {
        router.post("/sandbox/\(name)/access-tokens/expire") { _, _ -> HTTPResponse.Status in
            network.expireAccessTokens()
            return .noContent
        }
        router.post("/sandbox/\(name)/faults") { request, context -> JSON<Network.Fault> in
            let fault = try await request.decodeJSON(as: Network.Fault.self, context: context)
            try network.inject(fault)
            return JSON(fault, status: .created)
        }
        router.get("/sandbox/\(name)/inspection") { request, _ in
            let (token, limit) = try inspectionFilter(request)
            return JSON(
                NetworkInspection(
                    records: network.records(token: token, limit: limit),
                    accessTokenGrants: network.accessTokenGrants
                )
            )
        }
        router.delete("/sandbox/\(name)/inspection") { _, _ -> HTTPResponse.Status in
            network.log.removeAll()
            return .noContent
        }
    }
}

extension FCMEmulator: SandboxPushNetwork {
    func expireAccessTokens() { tokenEndpoint.expireAccessTokens() }
    var accessTokenGrants: Int { tokenEndpoint.grants }
    static func record(_ record: SandboxFCMInspectionRecord, names token: String) -> Bool { record.token == token }
}

extension HMSEmulator: SandboxPushNetwork {
    static func record(_ record: SandboxHMSInspectionRecord, names token: String) -> Bool {
        record.tokens?.contains(token) == true
    }

    var accessTokenGrants: Int { tokenEndpoint.grants }

    func expireAccessTokens() { tokenEndpoint.expireAccessTokens() }
}
