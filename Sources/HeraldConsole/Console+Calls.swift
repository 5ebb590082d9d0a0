import HeraldConsoleCore
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldStore
import Hummingbird

extension Console {
    func addCalls(to group: RouterGroup<RelayRequestContext>) {
        page(group, "calls") { request, _, signedIn in
            if let id = request.uri.queryParameters.get("id"), !id.isEmpty {
                let encoded = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                return ConsoleHTTP.redirect("/console/calls/" + encoded)
            }
            let calls = try await store.ringingCalls(limit: 100).map {
                [
                    "callID": $0.id, "user": $0.userID, "app": $0.appID, "createdAt": Self.time($0.createdAt),
                    "expiresAt": Self.time($0.expiresAt),
                ]
            }
            return render("Calls", "calls", ["calls": calls], signedIn, current: "/console/calls")
        }
        page(group, "calls/:id") { _, context, signedIn in
            let id = try context.parameters.require("id")
            let call = try await relay.calls.call(id: id)
            let view: [String: Any] = [
                "callID": call.callID, "user": call.userID, "app": call.app, "state": call.state.rawValue,
                "reason": call.reason as Any, "media": call.media, "createdAt": Self.time(call.createdAt),
                "endedAt": call.endedAt.map(Self.time) as Any,
                "devices": call.devices.map {
                    ["deviceID": $0.deviceID, "report": $0.report.rawValue, "at": Self.time($0.reportedAt)]
                },
            ]
            return render("Call \(id)", "call", view, signedIn, current: "/console/calls")
        }
        page(group, "callbacks") { _, _, signedIn in
            let callbacks = try await store.pendingCallbacks(limit: 200).map {
                [
                    "id": $0.id, "user": $0.userID, "app": $0.appID, "state": $0.state.rawValue,
                    "dueAt": Self.time($0.dueAt), "expiresAt": Self.time($0.expiresAt), "pushes": "\($0.pushes)",
                ]
            }
            return render(
                "Pending callbacks",
                "callbacks",
                ["callbacks": callbacks],
                signedIn,
                current: "/console/callbacks"
            )
        }
    }
}
