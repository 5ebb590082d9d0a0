import HeraldRelay
import HeraldStore
import Hummingbird

/// Who a request authenticated as: an API key's caller, or a device.
enum Authenticated: Sendable {
    case backend(Caller)
    case device(DeviceRecord)

    /// The API key's caller; nil for a device.
    var caller: Caller? {
        if case .backend(let caller) = self { caller } else { nil }
    }
}

/// The credential a group of routes takes, checked before any of its handlers runs (and so before
/// a body is read): the answers are `API`'s, 401 without a credential or with one the relay does
/// not know, 403 for the wrong kind or a key without the scope.
struct RelayAuthMiddleware: RouterMiddleware {
    typealias Context = RelayRequestContext

    enum Requirement: Sendable {
        /// An API key with the scope; a device credential is 403.
        case backend(APIScope)
        /// An API key with the scope and no app (it acts across apps); `what` names the action
        /// in the 403 an app key gets.
        case admin(APIScope, what: String)
        /// Any device's credential; the API key is 403. The route decides what the device may see.
        case device
        /// The credential of the device the path's `:id` names; another device's is 403.
        case pathDevice
        /// An API key with the scope, or else any device's credential.
        case backendOrDevice(APIScope)
        /// An API key with the scope acting for the path device's app (another app's device is
        /// 404), or that device's own credential.
        case backendOrPathDevice(APIScope)
    }

    let api: API
    let requirement: Requirement

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.authenticated = try await authenticate(request, context)
        return try await next(request, context)
    }

    private func authenticate(_ request: Request, _ context: Context) async throws -> Authenticated {
        switch requirement {
        case .backend(let scope):
            return .backend(try await api.requireBackend(request, scope))
        case .admin(let scope, let what):
            let caller = try await api.requireBackend(request, scope)
            try API.requireAdmin(caller, what)
            return .backend(caller)
        case .device:
            return .device(try await api.requireDevice(request))
        case .pathDevice:
            return .device(try await api.requireDevice(request, id: try context.parameters.require("id")))
        case .backendOrDevice(let scope):
            if let caller = try api.admitsBackend(request, scope) { return .backend(caller) }
            return .device(try await api.requireDevice(request))
        case .backendOrPathDevice(let scope):
            let id = try context.parameters.require("id")
            if let caller = try api.admitsBackend(request, scope) {
                if caller.appID != nil {
                    try API.visible(caller, app: try await api.relay.activation.device(id: id).app)
                }
                return .backend(caller)
            }
            return .device(try await api.requireDevice(request, id: id))
        }
    }
}

extension API {
    /// A group of `parent`'s routes that all take `requirement`'s credential.
    func routes(
        _ parent: RouterGroup<RelayRequestContext>,
        _ requirement: RelayAuthMiddleware.Requirement
    ) -> RouterGroup<RelayRequestContext> {
        parent.group().add(middleware: RelayAuthMiddleware(api: self, requirement: requirement))
    }
}

/// A route outside the group its handler expects: a bug, answered 500.
struct NotAuthenticated: Error {}

extension RelayRequestContext {
    /// The API key's caller, on a route of a backend group.
    var caller: Caller {
        get throws {
            guard case .backend(let caller) = authenticated else { throw NotAuthenticated() }
            return caller
        }
    }

    /// The device, on a route of a device group.
    var device: DeviceRecord {
        get throws {
            guard case .device(let device) = authenticated else { throw NotAuthenticated() }
            return device
        }
    }
}
