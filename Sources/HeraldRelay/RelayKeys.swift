public import HeraldDomain
import HeraldMacros
public import HeraldStore
public import Logging
import Metrics
public import ServiceLifecycle

/// The backends' stored API keys and the audit log: making and revoking keys (`herald keys api`),
/// the keyring every request is checked against, and the record of who changed apps, keys and
/// devices.
///
/// Needs only a store and a clock, so `herald keys api` uses it on the node's database without a
/// running relay; a running node sees its changes at the next `refresh`.
public final class RelayKeys: Sendable {
    /// The keys every request is checked against.
    public let keyring: APIKeyring
    let store: any HeraldStore
    let clock: any HeraldClock
    let logger: Logger
    private let auditFailures = Counter(label: "herald_relay_audit_failures_total")

    /// The most keys one deployment keeps (valid and revoked): the whole set is read at each refresh.
    public static let maximumKeys = 10_000

    public init(
        store: any HeraldStore,
        keyring: APIKeyring = APIKeyring(),
        clock: any HeraldClock = WallClock(),
        logger: Logger
    ) {
        self.store = store
        self.keyring = keyring
        self.clock = clock
        self.logger = logger
    }

    /// What a new key is made from; checked by `create`.
    @MemberwiseInit
    public struct NewKey: Sendable {
        public var name: String
        /// `nil` for an admin key.
        public var appID: String?
        public var scopes: Set<APIScope>
        public var ratePerSecond: Double?
        public var burst: Int?
    }

    /// Why a new key is refused, or `nil` when it may be made. `apps` are the registered apps.
    public static func refusal(_ key: NewKey, apps: Set<String>) -> RelayError? {
        let nameBytes = key.name.utf8
        guard (1...64).contains(nameBytes.count),
            nameBytes.allSatisfy({
                $0.isASCIILetterOrDigit || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                    || $0 == UInt8(ascii: ".")
            })
        else { return .invalidField("name", "must be 1 to 64 letters, digits, '.', '-' or '_'") }
        if let app = key.appID, !apps.contains(app) {
            let known = apps.isEmpty ? "none is registered" : "registered: " + apps.sorted().joined(separator: ", ")
            return .invalidField("app", "names no registered app: \(app) (\(known))")
        }
        guard !key.scopes.isEmpty else { return .invalidField("scopes", "must name at least one scope") }
        if let rate = key.ratePerSecond, !(rate > 0 && rate <= 100_000) {
            return .invalidField("rate", "must be more than 0 and at most 100000 messages a second")
        }
        if let burst = key.burst {
            guard key.ratePerSecond != nil else { return .invalidField("burst", "needs a rate") }
            guard (1...100_000).contains(burst) else { return .invalidField("burst", "must be 1 to 100000") }
        }
        return nil
    }

    /// Makes a key and stores its digest; the token is returned once and never again.
    public func create(_ key: NewKey, actor: String) async throws(RelayError) -> (APIKeyRecord, APIKeyToken) {
        let apps = try await storing { Set(try await $0.apps().map(\.id)) }
        if let refusal = Self.refusal(key, apps: apps) { throw refusal }
        let count = try await storing { try await $0.apiKeys().count }
        guard count < Self.maximumKeys else {
            throw RelayError.conflict.with(detail: "this deployment holds \(Self.maximumKeys) keys already")
        }
        while true {
            let token = APIKeyToken.make()
            let record = APIKeyRecord(
                id: token.id,
                name: key.name,
                appID: key.appID,
                scopes: key.scopes,
                secretDigest: token.digest,
                ratePerSecond: key.ratePerSecond,
                burst: key.ratePerSecond.map { MessageQuota(messagesPerSecond: $0, burst: key.burst).burst },
                createdAt: clock.now()
            )
            // 64 random bits: a taken id is all but impossible, and simply drawn again.
            let entry = auditEntry(actor: actor, action: "key.created", target: record.id, app: record.appID)
            // The key and its audit entry in one transaction: neither is stored without the other.
            let outcome = try await storing { try await $0.apply(.insertAPIKey(record, audit: entry)) }
            guard outcome == .applied else { continue }
            try await refresh()
            return (record, token)
        }
    }

    /// Revokes a key; `false` when there is no such valid key.
    public func revoke(id: String, actor: String) async throws(RelayError) -> Bool {
        let keys = try await storing { try await $0.apiKeys() }
        guard let key = keys.first(where: { $0.id == id }) else { return false }
        let entry = auditEntry(actor: actor, action: "key.revoked", target: id, app: key.appID)
        let outcome = try await storing { try await $0.apply(.revokeAPIKey(id: id, at: entry.at, audit: entry)) }
        guard outcome == .applied else { return false }
        try await refresh()
        return true
    }

    /// Every key, revoked ones included.
    public func keys() async throws(RelayError) -> [APIKeyRecord] {
        try await storing { try await $0.apiKeys() }
    }

    /// Reads the keys from the store into the keyring.
    public func refresh() async throws(RelayError) {
        keyring.replace(with: try await keys())
    }

    /// Appends to the audit log. A failure is logged and counted, never thrown: the change it
    /// records is made already, and the caller's answer must say so.
    public func audit(actor: String, action: String, target: String, app: String?) async {
        let entry = auditEntry(actor: actor, action: action, target: target, app: app)
        do {
            try await store.appendAudit(entry)
        } catch {
            auditFailures.increment()
            logger.error(
                "cannot append to the audit log",
                metadata: ["action": "\(action)", "target": "\(target)", "error": "\(error)"]
            )
        }
    }

    /// An audit entry for a change made now (a time-ordered id, this clock's time), to write with
    /// the change it records.
    public func auditEntry(actor: String, action: String, target: String, app: String?) -> AuditEntry {
        let at = clock.now()
        return AuditEntry(
            id: TimeOrderedID.make(milliseconds: at),
            at: at,
            actor: actor,
            action: action,
            target: target,
            appID: app
        )
    }

    /// Audit entries newest first; only `app`'s when given (an app key reads its own app's).
    public func auditEntries(before: String?, limit: Int, app: String?) async throws(RelayError) -> [AuditEntry] {
        guard (1...1000).contains(limit) else { throw .invalidField("limit", "must be 1 to 1000") }
        var entries: [AuditEntry] = []
        var cursor = before
        // An app's entries among every app's: read pages until `limit` of them or the end.
        while entries.count < limit {
            let page = try await storing { [cursor] in try await $0.auditEntries(before: cursor, limit: limit) }
            entries += page.filter { app == nil || $0.appID == app }
            guard page.count == limit, let last = page.last else { break }
            cursor = last.id
        }
        return Array(entries.prefix(limit))
    }

    private func storing<T: Sendable>(
        _ work: @Sendable (any HeraldStore) async throws -> T
    ) async throws(RelayError) -> T {
        try await RelayContext.storing(store, logger: logger, work)
    }
}

/// Reads the stored API keys into the keyring every `interval`, so a key made or revoked by
/// `herald keys api` (or on another node) takes effect on this node without a restart.
@MemberwiseInit
public struct APIKeyRefresh: Service {
    let keys: RelayKeys
    let interval: Duration

    public func run() async throws {
        var failing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await keys.refresh()
                if failing { keys.logger.notice("API keys read again from the store") }
                failing = false
            } catch {
                // The keys known last stay in force; one line when reading starts failing.
                if !failing { keys.logger.warning("cannot read the API keys; the last ones read stay in force") }
                failing = true
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
