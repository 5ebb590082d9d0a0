import Foundation
public import HeraldConsoleCore
import HeraldEncoding
public import HeraldRelay
import HeraldRelayAPI
public import HeraldRelayHTTP
public import HeraldStore
public import Hummingbird
public import Logging
import Mustache
public import ServiceLifecycle

/// The operator console at `/console`, served by the relay's own listener: pages rendered on the
/// server (they work with JavaScript off), a live stream of pushes (server-sent events), and the
/// simulations. Every page but sign-in needs a session; every form carries the session's CSRF
/// token; nothing the console shows holds message text, a sender or a caller (docs/console.md).
///
/// Sessions, operators and everything shown live in the store, so every node of a cluster serves
/// the same console and a sign-out on one ends the session on all.
public struct Console: Sendable {
    let relay: Relay
    let store: any HeraldStore
    let configuration: ConsoleConfiguration
    let clock: any HeraldClock
    let logger: Logger
    let sessions: ConsoleSessions
    let templates: MustacheLibrary
    /// The live stream's poller: one per node.
    public let live: LiveFeed
    let simulations: SimulationRuns

    /// A console over `relay` and its `store`; throws when a page template does not compile.
    public init(
        relay: Relay,
        store: any HeraldStore,
        configuration: ConsoleConfiguration,
        clock: any HeraldClock,
        logger: Logger
    ) throws {
        self.relay = relay
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        sessions = ConsoleSessions(store: store, configuration: configuration, clock: clock)
        templates = try ConsoleTemplates.library()
        live = LiveFeed(store: store, clock: clock, interval: configuration.livePollInterval, logger: logger)
        simulations = SimulationRuns(simulator: configuration.simulator, logger: logger)
    }

    /// The console's long-lived tasks: the live stream's poller and the simulations' player.
    public var services: [any Service] { [live, simulations] }

    /// Adds the console's routes under `/console`.
    public func add(to router: Router<RelayRequestContext>) {
        let group = router.group("console")
        group.get { _, _ in ConsoleHTTP.redirect("/console/overview") }
        group.get("assets/console.css") { _, _ in asset(ConsoleAssets.css, "text/css; charset=utf-8") }
        group.get("assets/console.js") { _, _ in asset(ConsoleAssets.javascript, "text/javascript; charset=utf-8") }
        addSignIn(to: group)
        addOverview(to: group)
        addLive(to: group)
        addSearch(to: group)
        addDevices(to: group)
        addCalls(to: group)
        addSimulations(to: group)
    }

    private func asset(_ text: String, _ type: String) -> Response {
        var headers: HTTPFields = [.contentType: type]
        ConsoleHTTP.secure(&headers)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: Pages

    /// What a handler gets: the signed-in operator and the request.
    typealias Handler = @Sendable (Request, RelayRequestContext, SignedIn) async throws -> Response

    /// A page (GET) for operators allowed `action`: without a session, a redirect to sign-in
    /// (then back here); with a role that may not, 403.
    func page(
        _ group: RouterGroup<RelayRequestContext>,
        _ path: RouterPath,
        _ action: ConsoleAction = .view,
        _ handler: @escaping Handler
    ) {
        group.get(path) { request, context in
            await answer(request, context, action, signInRedirect: true, handler)
        }
    }

    /// Data a page's script fetches (a fragment, a stream): without a session a plain 401.
    func data(_ group: RouterGroup<RelayRequestContext>, _ path: RouterPath, _ handler: @escaping Handler) {
        group.get(path) { request, context in
            await answer(request, context, .view, signInRedirect: false, handler)
        }
    }

    /// A form's target for operators allowed `action`: refused when posted from another site,
    /// without a session, or without the session's token (the handler checks it with the form).
    func form(
        _ group: RouterGroup<RelayRequestContext>,
        _ path: RouterPath,
        _ action: ConsoleAction,
        _ handler: @escaping Handler
    ) {
        group.post(path) { request, context in
            if ConsoleHTTP.isCrossSite(request) { return error(.crossSite, nil) }
            return await answer(request, context, action, signInRedirect: false, handler)
        }
    }

    private func answer(
        _ request: Request,
        _ context: RelayRequestContext,
        _ action: ConsoleAction,
        signInRedirect: Bool,
        _ handler: Handler
    ) async -> Response {
        do {
            guard let signedIn = try await sessions.signedIn(request) else {
                if signInRedirect {
                    let next = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
                    let encoded = next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                    return ConsoleHTTP.redirect("/console/sign-in?next=" + encoded)
                }
                return error(.forbidden("sign in first"), nil, status: .unauthorized)
            }
            guard signedIn.role.may(action) else {
                return error(.forbidden("a \(signedIn.role.rawValue) may not \(Self.words(action))"), signedIn)
            }
            return try await handler(request, context, signedIn)
        } catch {
            let refusal = ConsoleError.from(error)
            if refusal.status == .serviceUnavailable {
                logger.error("a console page failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            }
            return self.error(refusal, try? await sessions.signedIn(request))
        }
    }

    /// A form's token checked against the session: a cross-site page cannot know it.
    func check(_ token: String?, _ signedIn: SignedIn) throws(ConsoleError) {
        guard signedIn.token.accepts(token, for: .session) else { throw .crossSite }
    }

    static func words(_ action: ConsoleAction) -> String {
        switch action {
        case .view: "view the console"
        case .deactivateDevice: "deactivate devices"
        case .startSimulation: "start simulations"
        }
    }

    /// An error page.
    func error(_ refusal: ConsoleError, _ signedIn: SignedIn?, status: HTTPResponse.Status? = nil) -> Response {
        let body = templates.render(["detail": refusal.detail], withTemplate: "error") ?? ""
        return ConsoleHTTP.html(status ?? refusal.status, layout(refusal.title, body, signedIn, current: nil))
    }

    /// A page: `template` rendered with `view`, inside the layout.
    func render(
        _ title: String,
        _ template: String,
        _ view: Any,
        _ signedIn: SignedIn?,
        current: String?,
        refresh: Int? = nil,
        status: HTTPResponse.Status = .ok,
        cookies: [ConsoleCookie] = []
    ) -> Response {
        let body = templates.render(view, withTemplate: template) ?? ""
        return ConsoleHTTP.html(
            status,
            layout(title, body, signedIn, current: current, refresh: refresh),
            cookies: cookies
        )
    }

    /// A fragment (no layout), for a page's script.
    func fragment(_ template: String, _ view: Any) -> Response {
        ConsoleHTTP.html(.ok, templates.render(view, withTemplate: template) ?? "")
    }

    static let navigation: [(String, String)] = [
        ("/console/overview", "Overview"), ("/console/live", "Live"), ("/console/search", "Search"),
        ("/console/calls", "Calls"), ("/console/callbacks", "Callbacks"), ("/console/simulations", "Simulations"),
        ("/console/audit", "Audit"),
    ]

    private func layout(
        _ title: String,
        _ body: String,
        _ signedIn: SignedIn?,
        current: String?,
        refresh: Int? = nil
    )
        -> String
    {
        let operatorView = signedIn.map { signedIn in
            OperatorView(
                name: signedIn.name,
                role: signedIn.role.rawValue,
                csrf: signedIn.csrf,
                nav: Self.navigation.map { NavItem(href: $0.0, label: $0.1, current: $0.0 == current) }
            )
        }
        let view = LayoutView(title: title, operator: operatorView, body: body, refresh: refresh)
        return templates.render(view, withTemplate: "layout") ?? body
    }

    struct LayoutView {
        var title: String
        var `operator`: OperatorView?
        var body: String
        var refresh: Int?
    }

    struct OperatorView {
        var name: String
        var role: String
        var csrf: String
        var nav: [NavItem]
    }

    struct NavItem {
        var href: String
        var label: String
        var current: Bool
    }

    /// A time as the console writes it (RFC 3339, UTC).
    static func time(_ milliseconds: Int64?) -> String {
        milliseconds.map(RequestTime.format) ?? ""
    }

    /// A span of time in words: "850 ms", "12 s", "3 min", "2 h".
    static func span(_ milliseconds: Int64) -> String {
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        if milliseconds < 120_000 { return "\(milliseconds / 1000) s" }
        if milliseconds < 7_200_000 { return "\(milliseconds / 60_000) min" }
        if milliseconds < 172_800_000 { return "\(milliseconds / 3_600_000) h" }
        return "\(milliseconds / 86_400_000) d"
    }
}
