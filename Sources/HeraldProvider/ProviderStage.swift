import Foundation
public import HeraldAPNs
import HeraldAPNsCore
public import HeraldDomain
public import HeraldFCM
import HeraldFCMCore
public import HeraldHMS
import HeraldMacros
public import HeraldPush
public import HeraldTracing
public import HeraldWebPush
public import Logging
import Metrics
import NIOCore

/// The provider stage's senders, one per push network, behind one entry point: `herald provider`
/// serves it over HTTP, and the relay calls it in-process.
///
/// A fleet has several APNs keys (each its team's, with a client per environment it serves) and
/// several FCM service accounts (each its Firebase project's): a push names its key and
/// environment, or its account, and goes through that client; one that names none goes through
/// the default.
public struct ProviderStage: Sendable {
    /// One APNs key: its clients, one per environment (each environment its own host), sharing
    /// the key's provider token.
    @MemberwiseInit
    public struct APNsKey: Sendable {
        /// The key's name in the configuration.
        public var name: String
        /// The environment of a push that names none: the key's configured one.
        public var environment: APNsEnvironment
        /// A client per environment this key serves.
        public var clients: [APNsEnvironment: APNsClient]
    }

    /// The APNs keys by name.
    public let apnsKeys: [String: APNsKey]
    /// The key of a push that names none.
    public let defaultAPNsKey: String?
    /// The FCM senders by account name.
    public let fcmAccounts: [String: FCMClient]
    /// The account of a push that names none.
    public let defaultFCMAccount: String?
    /// The Web Push sender (every push service, every VAPID key); nil when none is configured.
    public let webPush: WebPushClient?
    /// The Push Kit senders by Huawei app name.
    public let hmsApps: [String: HMSClient]
    /// The Huawei app of a push that names none.
    public let defaultHMSApp: String?
    let logger: Logger
    /// What an FCM push without an expiration is dated from.
    let clock: any HeraldClock
    /// Each traced push's attempt span (docs/tracing.md); off unless configured.
    let tracing: PushTracing

    /// The name of the one key or account of a stage made from a single client.
    public static let defaultName = "default"

    /// The default key's client for its environment; nil when no Apple key is configured.
    public var apns: APNsClient? {
        defaultAPNsKey.flatMap { apnsKeys[$0] }.flatMap { $0.clients[$0.environment] ?? $0.clients.values.first }
    }
    /// The default FCM sender; nil when no service account is configured.
    public var fcm: FCMClient? { defaultFCMAccount.flatMap { fcmAccounts[$0] } }

    /// One key and one account, each named `default`: the key's one client serves whichever
    /// environment a push names (its URL decides where it goes).
    public init(apns: APNsClient?, fcm: FCMClient? = nil) {
        self.init(
            apnsKeys: apns.map {
                [
                    APNsKey(
                        name: Self.defaultName,
                        environment: .development,
                        clients: [.development: $0, .production: $0]
                    )
                ]
            } ?? [],
            fcmAccounts: fcm.map { [Self.defaultName: $0] } ?? [:]
        )
    }

    /// A fleet's keys and accounts.
    ///
    /// - Parameters:
    ///   - defaultAPNsKey: The key of a push that names none: the only key when nil.
    ///   - defaultFCMAccount: The account of a push that names none: the only account when nil.
    ///   - clock: What an FCM push without an expiration is dated from.
    public init(
        apnsKeys: [APNsKey],
        defaultAPNsKey: String? = nil,
        fcmAccounts: [String: FCMClient],
        defaultFCMAccount: String? = nil,
        webPush: WebPushClient? = nil,
        hmsApps: [String: HMSClient] = [:],
        defaultHMSApp: String? = nil,
        clock: any HeraldClock = WallClock(),
        logger: Logger = Logger(label: "herald.provider"),
        tracing: PushTracing = .off
    ) {
        self.webPush = webPush
        self.hmsApps = hmsApps
        // The app named `default` when there is one (the configuration's), else the only one.
        self.defaultHMSApp =
            defaultHMSApp
            ?? (hmsApps[Self.defaultName] != nil ? Self.defaultName : hmsApps.count == 1 ? hmsApps.keys.first : nil)
        self.tracing = tracing
        self.clock = clock
        self.apnsKeys = Dictionary(apnsKeys.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.defaultAPNsKey = defaultAPNsKey ?? (apnsKeys.count == 1 ? apnsKeys[0].name : nil)
        self.fcmAccounts = fcmAccounts
        self.defaultFCMAccount = defaultFCMAccount ?? (fcmAccounts.count == 1 ? fcmAccounts.keys.first : nil)
        self.logger = logger
    }

    /// Every client, for the service group that runs them.
    public var clients: (apns: [APNsClient], fcm: [FCMClient]) {
        var seen = Set<ObjectIdentifier>()
        var apns: [APNsClient] = []
        for key in apnsKeys.keys.sorted() {
            for environment in APNsEnvironment.allCases {
                guard let client = apnsKeys[key]?.clients[environment] else { continue }
                if seen.insert(ObjectIdentifier(client)).inserted { apns.append(client) }
            }
        }
        return (apns, fcmAccounts.keys.sorted().compactMap { fcmAccounts[$0] })
    }

    /// Sends every push through its network (both at once) and answers one outcome per push, in
    /// order, without spans (`send(_:)` adds each traced push's attempt span around it).
    func sendUntraced(_ pushes: [Push]) async -> [PushOutcome] {
        var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
        var apnsPushes: [(index: Int, push: Push, payload: APNsPayload)] = []
        var fcmPushes: [(index: Int, push: Push, payload: FCMPayload)] = []
        var webPushes: [(index: Int, push: Push, payload: WebPushPayload)] = []
        var hmsPushes: [(index: Int, push: Push, payload: HMSPayload)] = []
        for (index, push) in pushes.enumerated() {
            switch push.payload {
            case .apns(let payload): apnsPushes.append((index, push, payload))
            case .fcm(let payload): fcmPushes.append((index, push, payload))
            case .webPush(let payload): webPushes.append((index, push, payload))
            case .hms(let payload): hmsPushes.append((index, push, payload))
            }
        }
        // Built before the child tasks, which then capture only these constants (the arrays
        // above are read again below; a sanitizer build refuses to send them).
        let apnsBatch = apnsPushes.map { ($0.push, $0.payload) }
        let fcmBatch = fcmPushes.map { ($0.push, $0.payload) }
        let webBatch = webPushes.map { ($0.push, $0.payload) }
        let hmsBatch = hmsPushes.map { ($0.push, $0.payload) }
        async let apnsOutcomes = sendAPNs(apnsBatch)
        async let fcmOutcomes = sendFCM(fcmBatch)
        async let webOutcomes = sendWebPush(webBatch)
        async let hmsOutcomes = sendHMS(hmsBatch)
        for (item, outcome) in zip(apnsPushes, await apnsOutcomes) { outcomes[item.index] = outcome }
        for (item, outcome) in zip(fcmPushes, await fcmOutcomes) { outcomes[item.index] = outcome }
        for (item, outcome) in zip(webPushes, await webOutcomes) { outcomes[item.index] = outcome }
        for (item, outcome) in zip(hmsPushes, await hmsOutcomes) { outcomes[item.index] = outcome }
        return outcomes.map { $0! }
    }

    /// Hands the Web Push pushes to the sender (one for every push service and VAPID key).
    private func sendWebPush(_ pushes: [(Push, WebPushPayload)]) async -> [PushOutcome] {
        guard !pushes.isEmpty else { return [] }
        guard let webPush else {
            return pushes.map { _ in
                .failed(reason: "Web Push is not configured on this provider (no VAPID key)", status: 503)
            }
        }
        return await webPush.send(batch: pushes)
    }

    /// Where an APNs push goes: its key's client for its environment, or why it cannot go.
    private func route(_ payload: APNsPayload) -> Result<(key: String, APNsEnvironment, APNsClient), RouteRefusal> {
        guard !apnsKeys.isEmpty else {
            return .failure(RouteRefusal("APNs is not configured on this provider (no Apple key)"))
        }
        guard let name = payload.key ?? defaultAPNsKey else {
            return .failure(RouteRefusal("the push names no APNs key and this provider has several, none the default"))
        }
        guard let key = apnsKeys[name] else {
            return .failure(RouteRefusal("no APNs key named '\(name)' is configured on this provider"))
        }
        let environment = payload.environment ?? key.environment
        guard let client = key.clients[environment] else {
            return .failure(
                RouteRefusal("the APNs key '\(name)' is not configured for the \(environment.rawValue) environment")
            )
        }
        return .success((name, environment, client))
    }

    /// Hands the APNs pushes to their clients, one batch per (key, environment), all at once (a
    /// client checks each push; a refused one is checked again here only to say why).
    private func sendAPNs(_ pushes: [(Push, APNsPayload)]) async -> [PushOutcome] {
        guard !pushes.isEmpty else { return [] }
        var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
        var groups: [RouteKey: (client: APNsClient, items: [(index: Int, notification: APNsNotification)])] = [:]
        for (index, (push, payload)) in pushes.enumerated() {
            switch route(payload) {
            case .failure(let refusal):
                outcomes[index] = .failed(reason: refusal.reason, status: 503)
            case .success(let (key, environment, client)):
                let notification = APNsNotification(
                    deviceToken: push.token,
                    topic: payload.topic,
                    pushType: payload.type,
                    priority: payload.priority,
                    expiration: push.expiration,
                    collapseID: push.collapseID,
                    apnsID: payload.apnsID,
                    payload: ByteBuffer(string: payload.json)
                )
                groups[RouteKey(key: key, environment: environment), default: (client, [])].items.append(
                    (index, notification)
                )
            }
        }
        let answered = await withTaskGroup(of: [(Int, PushOutcome)].self) { tasks in
            for (route, group) in groups {
                tasks.addTask {
                    let answers = await group.client.send(batch: group.items.map(\.notification))
                    return zip(group.items, answers).map { item, answer in
                        (item.index, outcome(of: answer, for: item.notification, route: route))
                    }
                }
            }
            var all: [(Int, PushOutcome)] = []
            for await some in tasks { all += some }
            return all
        }
        for (index, outcome) in answered { outcomes[index] = outcome }
        return outcomes.map { $0! }
    }

    /// What APNs' answer means for the push. BadDeviceToken is a failed push, not a dead token:
    /// APNs answers it for a live token sent to the other environment, so it is named here and
    /// counted for the operator (`herald_apns_bad_device_tokens_total`), and the token is kept.
    private func outcome(of answer: APNsResult, for notification: APNsNotification, route: RouteKey) -> PushOutcome {
        if case .failed(nil, 400) = answer {
            do throws(APNsClientError) {
                try notification.validate()
            } catch {
                return .failed(reason: error.message, status: 400)
            }
        }
        if case .failed(.badDeviceToken?, let status) = answer {
            Counter(
                label: "herald_apns_bad_device_tokens_total",
                dimensions: [("key", route.key), ("environment", route.environment.rawValue)]
            ).increment()
            logger.warning(
                "APNs refused a device token as BadDeviceToken: it is not a token of this environment (a development token sent to production or the reverse, or a malformed one); the push failed and the token is kept",
                metadata: [
                    "key": "\(route.key)", "environment": "\(route.environment.rawValue)",
                    "topic": "\(notification.topic)",
                ]
            )
            return .failed(reason: Self.badDeviceTokenReason(environment: route.environment), status: status)
        }
        return PushOutcome(answer)
    }

    /// The reason a BadDeviceToken push fails with: the environment that refused the token.
    public static func badDeviceTokenReason(environment: APNsEnvironment) -> String {
        "BadDeviceToken: APNs' \(environment.rawValue) environment does not know this token "
            + "(a token of the other environment, or not a device token); the token is kept"
    }

    /// Hands the FCM pushes to their accounts' senders.
    private func sendFCM(_ pushes: [(Push, FCMPayload)]) async -> [PushOutcome] {
        let now = clock.seconds()
        return await sendByAccount(
            pushes,
            clients: fcmAccounts,
            defaultName: defaultFCMAccount,
            naming: ("FCM", "service account"),
            account: \.account,
            message: { push, payload in
                FCMPush(
                    token: push.token,
                    data: payload.data,
                    priority: payload.priority,
                    // FCM's own default when none is given: four weeks.
                    expiration: push.expiration ?? now + FCMMessage.maximumTTLSeconds,
                    collapseKey: push.collapseID
                )
            },
            send: { client, messages in await client.send(batch: messages).map(PushOutcome.init) }
        )
    }

    /// Hands the Push Kit pushes to their Huawei apps' senders.
    private func sendHMS(_ pushes: [(Push, HMSPayload)]) async -> [PushOutcome] {
        let now = clock.seconds()
        return await sendByAccount(
            pushes,
            clients: hmsApps,
            defaultName: defaultHMSApp,
            naming: ("Push Kit", "Huawei app"),
            // Each Huawei app is its package's: a push names its app, else the one named after
            // its package, else the default.
            account: { [hmsApps] payload in payload.account ?? (hmsApps[payload.package] != nil ? payload.package : nil)
            },
            message: { push, payload in
                HMSPush(
                    token: push.token,
                    payload: payload,
                    // Push Kit's own longest: four weeks, as FCM's.
                    expiration: push.expiration ?? now + FCMMessage.maximumTTLSeconds,
                    collapseKey: push.collapseID
                )
            },
            send: { client, messages in await client.send(batch: messages).map(PushOutcome.init) }
        )
    }

    /// Sends a data-message network's pushes, each through the client of the account it names
    /// (else the default), every account's batch at once; a push no client serves fails, named.
    private func sendByAccount<Payload, Client: Sendable, Message: Sendable>(
        _ pushes: [(Push, Payload)],
        clients: [String: Client],
        defaultName: String?,
        naming: (network: String, account: String),
        account: (Payload) -> String?,
        message: (Push, Payload) -> Message,
        send: @escaping @Sendable (Client, [Message]) async -> [PushOutcome]
    ) async -> [PushOutcome] {
        guard !pushes.isEmpty else { return [] }
        var outcomes = [PushOutcome?](repeating: nil, count: pushes.count)
        var groups: [String: [(index: Int, message: Message)]] = [:]
        for (index, (push, payload)) in pushes.enumerated() {
            let refusal: String?
            if clients.isEmpty {
                refusal = "\(naming.network) is not configured on this provider (no \(naming.account))"
            } else if let name = account(payload) ?? defaultName {
                refusal =
                    clients[name] == nil ? "no \(naming.account) named '\(name)' is configured on this provider" : nil
                if refusal == nil { groups[name, default: []].append((index, message(push, payload))) }
            } else {
                refusal = "the push names no \(naming.account) and this provider has several, none the default"
            }
            if let refusal { outcomes[index] = .failed(reason: refusal, status: 503) }
        }
        let answered = await withTaskGroup(of: [(Int, PushOutcome)].self) { tasks in
            for (name, items) in groups {
                guard let client = clients[name] else { continue }
                let messages = items.map(\.message)
                let indexes = items.map(\.index)
                tasks.addTask { Array(zip(indexes, await send(client, messages))) }
            }
            var all: [(Int, PushOutcome)] = []
            for await some in tasks { all += some }
            return all
        }
        for (index, outcome) in answered { outcomes[index] = outcome }
        return outcomes.map { $0! }
    }
}

/// A key and an environment: one APNs client.
private struct RouteKey: Hashable, Sendable {
    var key: String
    var environment: APNsEnvironment
}

/// Why a push cannot be routed to a client.
private struct RouteRefusal: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

extension ProviderStage: PushSender {}

extension PushOutcome {
    /// What the APNs client made of a push.
    init(_ result: APNsResult) {
        switch result {
        case .delivered(_, let uniqueID): self = .delivered(receipt: uniqueID)
        case .tokenDead(let reason, let timestamp): self = .tokenDead(reason: reason.rawValue, since: timestamp)
        case .failed(let reason, let status):
            self = .failed(reason: reason?.rawValue ?? "InvalidNotification", status: status)
        case .retryLater(let reason, let after): self = .retryLater(reason: reason, after: after)
        case .unreachable(let reason): self = .unreachable(reason: reason)
        case .expired: self = .expired
        }
    }

    /// What the FCM sender made of a message.
    init(_ result: FCMResult) {
        switch result {
        case .delivered(let name): self = .delivered(receipt: name)
        case .tokenDead(let code): self = .tokenDead(reason: code.rawValue, since: nil)
        case .failed(let code, let status, let message):
            self = .failed(reason: code.map { "\($0.rawValue): \(message)" } ?? message, status: status)
        case .retryLater(let reason, let after): self = .retryLater(reason: reason, after: after)
        case .unreachable(let reason): self = .unreachable(reason: reason)
        case .expired: self = .expired
        }
    }
}
