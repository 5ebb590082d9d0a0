import HeraldConsoleCore
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldStore
import Hummingbird

extension Console {
    struct SearchView {
        var query: String
        var searched: Bool
        var users: [String] = []
        var calls: [String] = []
        var conversation: String?
        var user: String?
        var pushes: [PushRow] = []
    }

    struct PushView {
        var pushID: String
        var deviceID: String
        var user: String?
        var kind: String
        var state: String
        var reason: String?
        var explanation: String?
        var subject: String
        var expiresAt: String
        var steps: [StepRow]
        var sandboxed: Bool
        var sandbox: [SandboxRow]
    }

    struct StepRow {
        var at: String
        var actor: String
        var title: String
        var detail: String?
        var tone: String
    }

    struct SandboxRow {
        var at: String
        var network: String
        var status: Int
        var reason: String?
        var facts: String
        var device: String?
    }

    /// The longest query searched: ids are shorter; anything longer is not one.
    static let longestQuery = 200

    func addSearch(to group: RouterGroup<RelayRequestContext>) {
        page(group, "search") { request, _, signedIn in
            let query = (request.uri.queryParameters.get("q") ?? "").trimmingCharacters(in: .whitespaces)
            guard !query.isEmpty else {
                return render(
                    "Search",
                    "search",
                    SearchView(query: "", searched: false),
                    signedIn,
                    current: "/console/search"
                )
            }
            guard query.utf8.count <= Self.longestQuery else {
                throw ConsoleError.badRequest("a search is an id of at most \(Self.longestQuery) characters")
            }
            return render("Search", "search", try await search(query), signedIn, current: "/console/search")
        }
        page(group, "pushes/:id") { _, context, signedIn in
            let id = try context.parameters.require("id")
            return render("Push \(id)", "push", try await pushView(id), signedIn, current: nil)
        }
    }

    /// Every lookup an id can answer, each by an index: a user's devices and pushes, a device's
    /// pushes, a push by id, the pushes of a message, call or callback, a conversation's user.
    func search(_ query: String) async throws -> SearchView {
        var view = SearchView(query: query, searched: true)
        var pushes: [String: PushSummary] = [:]
        func add(_ page: PushPage) { for push in page.pushes { pushes[push.pushID] = push } }
        if try await !store.recipients(userID: query).isEmpty {
            view.users.append(query)
            add(try await store.pushes(matching: PushQuery(userID: query, limit: 100)))
        }
        if let device = try await store.device(id: query) {
            if !view.users.contains(device.userID) { view.users.append(device.userID) }
            add(try await store.pushes(matching: PushQuery(deviceID: query, limit: 100)))
        }
        for push in try await store.pushSummaries(ids: [query]) { pushes[push.pushID] = push }
        add(try await store.pushes(matching: PushQuery(subjectID: query, limit: 100)))
        if try await store.call(id: query) != nil { view.calls.append(query) }
        if let callback = try await store.callback(id: query) {
            for number in 0...callback.pushes {
                let subject = CallbackPushSubject.make(callbackID: query, push: number)
                add(try await store.pushes(matching: PushQuery(subjectID: subject, limit: 100)))
            }
        }
        let inConversation = try await store.pushes(matching: PushQuery(conversation: query, limit: 100))
        if let chat = try await store.chat(conversation: query) {
            view.conversation = query
            view.user = chat.userID
        } else if let user = inConversation.pushes.first?.userID {
            view.conversation = query
            view.user = user
        }
        add(inConversation)
        view.pushes = pushes.values.sorted { ($0.createdAt, $0.pushID) > ($1.createdAt, $1.pushID) }.prefix(200)
            .map(PushRow.init)
        return view
    }

    func pushView(_ id: String) async throws -> PushView {
        let status = try await relay.ingest.pushStatus(id: id)
        let entry = try await store.push(id: id)
        let device = try await store.device(id: status.deviceID)
        let webhooks = try await store.webhookEvents(orderingKey: "push:" + id, limit: 50)
        let road = PushRoad(status: status, entry: entry, webhooks: webhooks)
        var sandbox: [SandboxRow] = []
        if let records = configuration.sandbox {
            let apnsID = status.apnsID.isEmpty ? nil : status.apnsID
            sandbox = await records.received(pushID: id, apnsID: apnsID).map {
                SandboxRow(
                    at: Self.time($0.at),
                    network: $0.network,
                    status: $0.status,
                    reason: $0.reason,
                    facts: $0.facts.joined(separator: " · "),
                    device: $0.device
                )
            }
        }
        return PushView(
            pushID: id,
            deviceID: status.deviceID,
            user: device?.userID,
            kind: status.kind.rawValue,
            state: status.state.rawValue,
            reason: status.reason,
            explanation: status.explanation,
            subject: entry?.subjectID ?? "",
            expiresAt: Self.time(status.expiresAt),
            steps: road.steps.map {
                StepRow(at: Self.time($0.at), actor: $0.actor, title: $0.title, detail: $0.detail, tone: $0.tone)
            },
            sandboxed: configuration.sandbox != nil,
            sandbox: sandbox
        )
    }
}
