import HeraldEncoding
import HeraldHTTPSupport
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Hummingbird

/// Apps, activations and devices: the backend registers apps and activates, re-tokens and
/// deactivates devices with an API key; a device keeps its own tokens, presence and
/// notification permission with its credential. Every change is written to the audit log.
enum DeviceRoutes {
    static func add(to v1: RouterGroup<RelayRequestContext>, relay: Relay, api: API) {
        let appSetting = api.routes(v1, .backend(.apps))
        let reading = api.routes(v1, .backend(.read))
        // A key acting for the path device's app, or the device itself.
        let keeping = api.routes(v1, .backendOrPathDevice(.devices))
        let pathDevices = api.routes(v1, .pathDevice)
        appSetting.put("apps/:id") { request, context -> Response in
            let caller = try context.caller
            let id = try context.parameters.require("id")
            try API.require(caller, app: id)
            var app = try await api.decode(AppBody.self, request)
            app.id = id
            let saved = try await relay.activation.saveApp(
                try app.record(),
                webhook: app.webhook.map { WebhookSettings(url: $0.url, secret: $0.secret) }
            )
            await relay.keys.audit(actor: caller.actor, action: "app.saved", target: id, app: id)
            return try JSONResponse.make(.ok, saved)
        }
        reading.get("apps") { request, context -> Response in
            let caller = try context.caller
            let apps = try await relay.activation.apps().filter { caller.permits(app: $0.id) }
            return try JSONResponse.make(.ok, ["apps": apps])
        }
        reading.get("apps/:id/web-push") { _, context -> Response in
            let id = try context.parameters.require("id")
            try API.require(try context.caller, app: id)
            return try JSONResponse.make(.ok, try await relay.activation.webPush(app: id))
        }
        v1.post("activations") { request, _ -> Response in
            // The credential first, so an unknown caller's body is never parsed: the API key
            // activates any device; a device's own credential only re-activates that device.
            guard api.bearer(request) != nil else {
                throw RelayError.unauthorized.with(
                    detail:
                        "an activation needs the API key, or the device's credential to re-activate it (authorization: Bearer <secret>)"
                )
            }
            let caller = try api.admitsBackend(request, .devices)
            let device: DeviceRecord? = caller != nil ? nil : try await api.requireDevice(request)
            let body = try await api.decode(ActivationRequest.self, request)
            if let caller { try API.require(caller, app: body.app) }
            if let device {
                guard let deviceID = body.deviceID else {
                    throw RelayError.forbidden.with(
                        detail: "a new activation needs the API key; a device credential re-activates its device"
                    )
                }
                guard device.id == deviceID else { throw RelayError.forbidden }
            }
            let activated = try await relay.activation.activate(body)
            await relay.keys.audit(
                actor: caller?.actor ?? "device:" + activated.deviceID,
                action: body.deviceID == nil ? "device.activated" : "device.reactivated",
                target: activated.deviceID,
                app: body.app
            )
            return try JSONResponse.make(.created, activated)
        }
        api.routes(v1, .backendOrPathDevice(.read)).get("devices/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            return try JSONResponse.make(.ok, try await relay.activation.device(id: id))
        }
        keeping.put("devices/:id/tokens") { request, context -> Response in
            let id = try context.parameters.require("id")
            let caller = context.authenticated?.caller
            let body = try await api.decode(TokenUpdateRequest.self, request)
            let device = try await relay.activation.updateTokens(deviceID: id, body)
            await relay.keys.audit(
                actor: caller?.actor ?? "device:" + id,
                action: "device.tokens_updated",
                target: id,
                app: device.app
            )
            return try JSONResponse.make(.ok, device)
        }
        keeping.delete("devices/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            let caller = context.authenticated?.caller
            let app = try? await relay.activation.device(id: id).app
            try await relay.activation.deactivate(deviceID: id)
            await relay.keys.audit(
                actor: caller?.actor ?? "device:" + id,
                action: "device.deactivated",
                target: id,
                app: app
            )
            return Response(status: .noContent)
        }
        pathDevices.put("devices/:id/presence") { request, context -> Response in
            let device = try context.device
            let body = try await api.decode(HeartbeatRequest.self, request)
            return try JSONResponse.make(.ok, try await relay.activation.heartbeat(device: device, body))
        }
        pathDevices.put("devices/:id/notifications") { request, context -> Response in
            let device = try context.device
            let body = try await api.decode(NotificationPermissionRequest.self, request)
            return try JSONResponse.make(
                .ok,
                try await relay.activation.setNotificationPermission(device: device, body)
            )
        }
        pathDevices.post("devices/:id/receipts") { request, context -> Response in
            let device = try context.device
            let body = try await api.decode(ReceiptRequest.self, request)
            let (receipt, recorded) = try await relay.receipts.record(device: device, body)
            // 201 for a receipt this request recorded, 200 for one recorded before (a retry).
            return try JSONResponse.make(recorded ? .created : .ok, receipt)
        }
    }
}

/// `PUT /v1/apps/{id}`: the id comes from the path.
struct AppBody: Decodable, KnownJSONFields {
    static let jsonFields = JSONFields.object(
        CodingKeys.self,
        nested: ["webhook": .object(WebhookBody.CodingKeys.self)]
    )

    var id: String = ""
    var teamID: String
    var contentPolicy: ContentPolicy?
    var alertTitle: String?
    var alertBody: String?
    var messageTTL: Int64?
    var callTTL: Int64?
    var collapseByConversation: Bool?
    var apnsKey: String?
    var fcmAccount: String?
    var apnsEnvironment: APNsEnvironment?
    var presencePolicy: PresencePolicy?
    var messagePriority: Int?
    var queueOrder: QueueOrder?
    var undeliverable: Undeliverable?
    var holdFor: Int64?
    /// What the relay does with a push not shown in time (docs/receipts.md); none when absent.
    var deadlines: [DeadlineRule]?
    /// The app's webhook; without it the app has none.
    var webhook: WebhookBody?

    /// `"webhook": {"url": …, "secret": …}`.
    struct WebhookBody: Decodable {
        var url: String
        var secret: String

        enum CodingKeys: String, CodingKey, CaseIterable {
            case url, secret
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case apnsKey = "apns_key"
        case fcmAccount = "fcm_account"
        case apnsEnvironment = "apns_environment"
        case teamID = "team_id"
        case contentPolicy = "content_policy"
        case alertTitle = "alert_title"
        case alertBody = "alert_body"
        case messageTTL = "message_ttl"
        case callTTL = "call_ttl"
        case collapseByConversation = "collapse_by_conversation"
        case webhook
        case presencePolicy = "presence_policy"
        case messagePriority = "message_priority"
        case queueOrder = "queue_order"
        case undeliverable
        case holdFor = "hold_for"
        case deadlines
    }

    func record() throws -> AppRecord {
        var app = AppRecord(id: id, teamID: teamID)
        if let contentPolicy { app.contentPolicy = contentPolicy }
        if let alertTitle { app.alertTitle = alertTitle }
        if let alertBody { app.alertBody = alertBody }
        if let messageTTL { app.messageTTL = messageTTL }
        if let callTTL { app.callTTL = callTTL }
        if let collapseByConversation { app.collapseByConversation = collapseByConversation }
        app.apnsKey = apnsKey
        app.fcmAccount = fcmAccount
        app.apnsEnvironment = apnsEnvironment
        if let presencePolicy { app.presencePolicy = presencePolicy }
        if let messagePriority { app.messagePriority = messagePriority }
        if let queueOrder { app.queueOrder = queueOrder }
        app.undeliverable = undeliverable
        app.holdFor = holdFor
        app.deadlines = deadlines ?? []
        return app
    }
}
