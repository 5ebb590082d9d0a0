import Hummingbird

extension SandboxControlAPI {
    /// `/sandbox/webpush/…`: Web Push faults and the Web Push inspection log.
    static func addWebPushRoutes(to router: Router<Context>, core: SandboxCore) {
        addFaultRoute(to: router, path: "/sandbox/webpush/faults") { (fault: SandboxWebPushFault) in
            try core.inject(webPushFault: fault)
        }
        router.get("/sandbox/webpush/inspection") { request, _ in
            let (token, limit) = try inspectionFilter(request)
            let endpoint = request.uri.queryParameters["endpoint"].map { String($0) } ?? token
            return JSON(WebPushInspection(records: core.webPushInspection(endpoint: endpoint, limit: limit)))
        }
        router.delete("/sandbox/webpush/inspection") { _, _ -> HTTPResponse.Status in
            core.clearWebPushInspection()
            return .noContent
        }
    }

    /// `POST path`: a fault as JSON, queued by `inject`; 201 with the fault, defaults filled in.
    static func addFaultRoute<Fault: Codable & Sendable>(
        to router: Router<Context>,
        path: RouterPath,
        inject: @escaping @Sendable (Fault) throws -> Void
    ) {
        router.post(path) { request, context -> JSON<Fault> in
            let fault = try await request.decodeJSON(as: Fault.self, context: context)
            try inject(fault)
            return JSON(fault, status: .created)
        }
    }

    struct WebPushInspection: Encodable {
        let records: [SandboxWebPushInspectionRecord]
    }
}
