import HeraldHTTPSupport
import HeraldRelay
import HeraldRelayAPI
import Hummingbird

/// Callbacks (seed 002): the backend schedules and reads them with the API key; a device of the
/// callback's user reads one and answers it with its device credential.
enum CallbackRoutes {
    static func add(to v1: RouterGroup<RelayRequestContext>, relay: Relay, api: API) {
        let sending = api.routes(v1, .backend(.send))
        sending.post("callbacks") { request, context -> Response in
            let caller = try context.caller
            var body = try await api.decode(CallbackRequest.self, request)
            if let app = caller.appID {
                // An app key's callback is its app's: named or not, the push goes to that app.
                try API.require(caller, app: body.app ?? app)
                body.app = app
            }
            try await relay.admit(caller, messages: 1)
            let view = try await relay.callbacks.schedule(body)
            return try JSONResponse.make(view.duplicate == true ? .ok : .created, view)
        }
        api.routes(v1, .backendOrDevice(.read)).get("callbacks/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            if case .backend(let caller) = context.authenticated {
                let callback = try await relay.callbacks.callback(id: id)
                if caller.appID != nil { try API.visible(caller, app: callback.app) }
                return try JSONResponse.make(.ok, callback)
            }
            let device = try context.device
            return try JSONResponse.make(.ok, try await relay.callbacks.callback(id: id, for: device))
        }
        api.routes(v1, .device).post("callbacks/:id/actions/:action") { _, context -> Response in
            let id = try context.parameters.require("id")
            let action = try context.parameters.require("action")
            let device = try context.device
            return try JSONResponse.make(
                .ok,
                try await relay.callbacks.answer(id: id, action: action, device: device)
            )
        }
    }
}
