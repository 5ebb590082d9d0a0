import Foundation
import HeraldHTTPSupport
import HeraldRelay
import HeraldRelayAPI
import Hummingbird

/// The webhook events' delivery state, behind the API key: `GET /v1/webhooks/events` and
/// `GET /v1/webhooks/events/{id}`.
enum WebhookRoutes {
    static func add(to v1: RouterGroup<RelayRequestContext>, relay: Relay, api: API) {
        let reading = api.routes(v1, .backend(.read))
        reading.get("webhooks/events") { request, context -> Response in
            let caller = try context.caller
            let values = try PushListQuery.parameters(
                PushListQuery.pairs(request),
                allowed: ["app", "state", "limit", "cursor"]
            )
            guard let app = values["app"] else { throw RelayError.invalidField("app", "is required") }
            try API.require(caller, app: app)
            var limit = 100
            if let text = values["limit"] {
                guard let value = Int(text) else { throw RelayError.invalidField("limit", "must be a number") }
                limit = value
            }
            let page = try await relay.webhooks.events(
                app: app,
                state: values["state"],
                limit: limit,
                cursor: values["cursor"]
            )
            return try JSONResponse.make(.ok, page)
        }
        reading.get("webhooks/events/:id") { request, context -> Response in
            let caller = try context.caller
            let id = try context.parameters.require("id")
            let event = try await relay.webhooks.event(id: id)
            try API.visible(caller, app: event.app)
            return try JSONResponse.make(.ok, event)
        }
    }
}
