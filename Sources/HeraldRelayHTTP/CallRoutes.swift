import HeraldHTTPSupport
import HeraldRelay
import HeraldRelayAPI
import Hummingbird

/// A call's life over HTTP: the backend reads and cancels (API key); a device of the call's user
/// reads it and reports ringing, answers or declines (device credential), for a device without
/// its live channel open. Every answer is the call (`CallView`); a call that ended already is a
/// 409 saying how, an unknown call (or another user's, for a device) a 404.
enum CallRoutes {
    static func add(to v1: RouterGroup<RelayRequestContext>, relay: Relay, api: API) {
        let sending = api.routes(v1, .backend(.send))
        let devices = api.routes(v1, .device)
        api.routes(v1, .backendOrDevice(.read)).get("calls/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            if case .backend(let caller) = context.authenticated {
                let call = try await relay.calls.call(id: id)
                try API.visible(caller, app: call.app)
                return try JSONResponse.make(.ok, call)
            }
            let device = try context.device
            return try JSONResponse.make(.ok, try await relay.calls.call(id: id, for: device))
        }
        sending.post("calls/:id/cancel") { request, context -> Response in
            let caller = try context.caller
            let id = try context.parameters.require("id")
            if caller.appID != nil { try API.visible(caller, app: try await relay.calls.call(id: id).app) }
            return try JSONResponse.make(.ok, try await relay.calls.cancel(id: id))
        }
        for (name, report) in [
            ("ringing", RelayCalls.ringing), ("answer", RelayCalls.answer), ("decline", RelayCalls.decline),
        ] {
            devices.post("calls/:id/\(name)") { _, context -> Response in
                let device = try context.device
                let id = try context.parameters.require("id")
                return try JSONResponse.make(.ok, try await report(relay.calls)(id, device))
            }
        }
    }
}
