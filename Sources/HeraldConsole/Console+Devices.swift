import HeraldConsoleCore
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldStore
import Hummingbird

extension Console {
    struct DeviceRow {
        var deviceID: String
        var app: String
        var platform: String
        var tokens: String
        var tokenAge: String
        var environment: String
        var keyID: String
        var activatedAt: String
        var presence: String
        var live: String
        var lastReceipt: String
        var mayDeactivate: Bool
    }

    func addDevices(to group: RouterGroup<RelayRequestContext>) {
        page(group, "users/:id") { _, context, signedIn in
            let id = try context.parameters.require("id")
            let now = clock.now()
            let view = try await relay.activation.devices(userID: id)
            let ids = view.devices.map(\.deviceID)
            let live = try await store.liveSessions(deviceIDs: ids, now: now)
            var rows: [DeviceRow] = []
            for device in view.devices {
                rows.append(
                    DeviceRow(
                        deviceID: device.deviceID,
                        app: device.app,
                        platform: device.platform.rawValue,
                        tokens: Self.tokens(device),
                        tokenAge: Self.span(max(0, now - device.updatedAt)),
                        environment: device.apnsEnvironment?.rawValue ?? "",
                        keyID: device.keyID,
                        activatedAt: Self.time(device.activatedAt),
                        presence: device.presence.map { presence in
                            let state =
                                presence.expiresAt < now ? "background (heartbeat expired)" : presence.state.rawValue
                            return state + " · " + Self.span(max(0, now - presence.updatedAt)) + " ago"
                        } ?? "no heartbeat",
                        live: live.first { $0.deviceID == device.deviceID }.map { "open on \($0.nodeID)" } ?? "closed",
                        lastReceipt: try await lastReceipt(device.deviceID),
                        mayDeactivate: signedIn.role.may(.deactivateDevice)
                    )
                )
            }
            return render(
                "User \(id)",
                "user",
                ["userID": id, "devices": rows] as [String: Any],
                signedIn,
                current: nil
            )
        }
        page(group, "devices/:id/deactivate", .deactivateDevice) { _, context, signedIn in
            let id = try context.parameters.require("id")
            let device = try await relay.activation.device(id: id)
            let view: [String: Any] = [
                "deviceID": id, "app": device.app, "platform": device.platform.rawValue, "user": device.userID,
                "csrf": signedIn.csrf,
            ]
            return render("Deactivate device \(id)", "deactivate", view, signedIn, current: nil)
        }
        form(group, "devices/:id/deactivate", .deactivateDevice) { request, context, signedIn in
            struct DeactivateForm: Decodable { var csrf: String }
            let form = try await ConsoleHTTP.form(DeactivateForm.self, request, limit: configuration.maximumFormBytes)
            try check(form.csrf, signedIn)
            let id = try context.parameters.require("id")
            let device = try await relay.activation.device(id: id)
            try await relay.activation.deactivate(deviceID: id)
            await relay.keys.audit(actor: signedIn.actor, action: "device.deactivated", target: id, app: device.app)
            return ConsoleHTTP.redirect("/console/users/\(device.userID)")
        }
        page(group, "audit") { request, _, signedIn in
            let before: String? = request.uri.queryParameters.get("before")
            let limit = 100
            let entries = try await relay.keys.auditEntries(before: before, limit: limit, app: nil)
            let rows = entries.map {
                [
                    "at": Self.time($0.at), "actor": $0.actor, "action": $0.action, "target": $0.target,
                    "app": $0.appID ?? "",
                ]
            }
            let view: [String: Any] = [
                "entries": rows, "next": entries.count == limit ? entries.last?.id as Any : false,
            ]
            return render("Audit log", "audit", view, signedIn, current: "/console/audit")
        }
    }

    /// Which tokens the device has, in words (never the tokens).
    static func tokens(_ device: UserDeviceView) -> String {
        var held: [String] = []
        if device.hasMessagingToken { held.append("messaging") }
        if device.hasVoIPToken { held.append("VoIP") }
        if held.isEmpty { return device.tokenDeadReason.map { "none (dead: \($0))" } ?? "none" }
        return held.joined(separator: " + ")
    }

    /// The furthest receipt of the device's latest pushes that have one.
    private func lastReceipt(_ deviceID: String) async throws -> String {
        let recent = try await store.pushes(matching: PushQuery(deviceID: deviceID, limit: 20))
        guard let push = recent.pushes.first(where: { $0.deviceStage != nil }), let stage = push.deviceStage else {
            return "none"
        }
        return "\(stage.rawValue) · push accepted \(Self.time(push.createdAt))"
    }
}
