import HeraldHTTPSupport
import HeraldRelay
import HeraldStore
import Hummingbird

/// `GET /v1/audit`: who changed apps, keys and devices, newest first. An app's key reads its
/// app's entries only.
enum AuditRoutes {
    static func add(to v1: RouterGroup<RelayRequestContext>, relay: Relay, api: API) {
        let reading = api.routes(v1, .backend(.read))
        reading.get("audit") { request, context -> Response in
            let caller = try context.caller
            let values = try PushListQuery.parameters(PushListQuery.pairs(request), allowed: ["before", "limit"])
            var limit = 100
            if let text = values["limit"] {
                guard let value = Int(text) else { throw RelayError.invalidField("limit", "must be a number") }
                limit = value
            }
            let entries = try await relay.keys.auditEntries(
                before: values["before"],
                limit: limit,
                app: caller.appID
            )
            return try JSONResponse.make(
                .ok,
                AuditPage(entries: entries, next: entries.count == limit ? entries.last?.id : nil)
            )
        }
    }
}

/// A page of the audit log; `next` is the `before` of the following page.
struct AuditPage: Encodable {
    var entries: [AuditEntry]
    var next: String?
}
