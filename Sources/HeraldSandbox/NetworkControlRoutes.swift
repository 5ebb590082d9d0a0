import Hummingbird

/// What the control API asks of the FCM, Web Push and Push Kit emulators alike: queuing faults
/// and their inspection logs.
protocol SandboxPushNetwork: FaultPlanning where Fault: Codable, Record.Record == Record {
    associatedtype Record: InspectionLogEntry & Encodable
    var log: InspectionLog<Record> { get }
    func inject(_ fault: Fault) throws(SandboxError)
    /// The query parameter naming what inspection filters on, besides `token`.
    static var filterParameter: String { get }
    /// Whether a record is of a request naming `token`.
    static func record(_ record: Record, names token: String) -> Bool
}

/// A push network whose senders hold OAuth access tokens (FCM, Push Kit).
protocol SandboxAccessTokenIssuing: SandboxPushNetwork {
    /// Makes every access token granted so far expired.
    func expireAccessTokens()
    /// How many access tokens were granted (not cleared with the log).
    var accessTokenGrants: Int { get }
}

extension SandboxPushNetwork {
    static var filterParameter: String { "token" }

    /// The log, oldest first, optionally only the requests naming one token, and only the last
    /// `limit`.
    func records(token: String?, limit: Int?) -> [Record] {
        log.records(where: token.map { token in { Self.record($0, names: token) } }, limit: limit)
    }
}

extension SandboxControlAPI {
    /// `{"records": [...], "access_token_grants": n}`; without `access_token_grants` for a
    /// network without access tokens.
    struct NetworkInspection<Record: Encodable>: Encodable {
        let records: [Record]
        let accessTokenGrants: Int?

        enum CodingKeys: String, CodingKey {
            case records
            case accessTokenGrants = "access_token_grants"
        }
    }

    /// `/sandbox/<name>/faults`, `/inspection` (GET and DELETE) and, for a network with access
    /// tokens, `/access-tokens/expire`.
    static func addRoutes<Network: SandboxPushNetwork>(of network: Network, name: String, to router: Router<Context>) {
        let issuer = network as? any SandboxAccessTokenIssuing
        if let issuer {
            router.post("/sandbox/\(name)/access-tokens/expire") { _, _ -> HTTPResponse.Status in
                issuer.expireAccessTokens()
                return .noContent
            }
        }
        router.post("/sandbox/\(name)/faults") { request, context -> JSON<Network.Fault> in
            let fault = try await request.decodeJSON(as: Network.Fault.self, context: context)
            try network.inject(fault)
            return JSON(fault, status: .created)
        }
        router.get("/sandbox/\(name)/inspection") { request, _ in
            var (token, limit) = try inspectionFilter(request)
            if let named = request.uri.queryParameters[Substring(Network.filterParameter)] { token = String(named) }
            return JSON(
                NetworkInspection(
                    records: network.records(token: token, limit: limit),
                    accessTokenGrants: issuer?.accessTokenGrants
                )
            )
        }
        router.delete("/sandbox/\(name)/inspection") { _, _ -> HTTPResponse.Status in
            network.log.removeAll()
            return .noContent
        }
    }
}

extension FCMEmulator: SandboxAccessTokenIssuing {
    func expireAccessTokens() { tokenEndpoint.expireAccessTokens() }
    var accessTokenGrants: Int { tokenEndpoint.grants }
    static func record(_ record: SandboxFCMInspectionRecord, names token: String) -> Bool { record.token == token }
}

extension HMSEmulator: SandboxAccessTokenIssuing {
    static func record(_ record: SandboxHMSInspectionRecord, names token: String) -> Bool {
        record.tokens?.contains(token) == true
    }

    var accessTokenGrants: Int { tokenEndpoint.grants }

    func expireAccessTokens() { tokenEndpoint.expireAccessTokens() }
}

extension WebPushEmulator: SandboxPushNetwork {
    static var filterParameter: String { "endpoint" }

    /// `token` is a subscription's endpoint or the id at its end.
    static func record(_ record: SandboxWebPushInspectionRecord, names token: String) -> Bool {
        record.endpointID == (DeviceRegistry.subscriptionID(of: token) ?? token)
    }
}
