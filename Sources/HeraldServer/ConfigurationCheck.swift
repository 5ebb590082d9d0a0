import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCrypto
import HeraldEncoding
import HeraldFCMCore
import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
public import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// `herald check`: whether a resolved configuration can run, one finding per thing it names —
/// the keys and files it points at, the database, and the hosts it sends to — without starting
/// anything or writing anything (a key not made yet is reported, not made).
public struct ConfigurationCheck: Sendable {
    /// One finding: a line of `herald check`'s output.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        public var passed: Bool
        /// Not checked, on purpose (`--offline`): counts as passed, and says so.
        public var skipped = false
        /// What was checked: `database`, `apns`, `master key`, ….
        public var subject: String
        /// Where, and what was found; never a secret.
        public var detail: String

        public init(passed: Bool, subject: String, detail: String) {
            self.passed = passed
            self.subject = subject
            self.detail = detail
        }

        /// `ok   database data/herald.sqlite (schema v11)` or `FAIL apns 127.0.0.1:1: connection refused`.
        public var description: String { (skipped ? "skip" : passed ? "ok  " : "FAIL") + " " + subject + " " + detail }
    }

    public let configuration: HeraldConfiguration
    let environment: [String: String]
    let logger: Logger
    /// How long one connection attempt, or one answer, may take.
    public var timeout: Duration = .seconds(5)
    /// Whether the hosts (APNs, FCM, a remote provider) are left unprobed: a node without egress
    /// or DNS at boot still starts (the relay queues through a push network it cannot reach),
    /// while its keys, files and database are checked as always.
    public var offline = false

    public init(configuration: HeraldConfiguration, environment: [String: String], logger: Logger) {
        self.configuration = configuration
        self.environment = environment
        self.logger = logger
    }

    /// Every check, in order, each reported to `report` as it finishes.
    public func run(report: (Finding) -> Void) async -> [Finding] {
        var findings: [Finding] = []
        func add(_ finding: Finding) {
            findings.append(finding)
            report(finding)
        }
        for finding in keys() { add(finding) }
        add(await database())
        if offline {
            for (subject, url) in hosts {
                var finding = Finding(passed: true, subject: subject, detail: "\(url): not probed (--offline)")
                finding.skipped = true
                add(finding)
            }
            return findings
        }
        if let http = try? makeHTTPClient() {
            for apns in configuration.apnsKeys {
                let subject = apns.name == HeraldConfiguration.defaultName ? "apns" : "apns \(apns.name)"
                add(await reach(subject, url: apns.url, ca: apns.ca, http2: true, client: http.client(apns.ca)))
            }
            for fcm in configuration.fcmAccounts {
                let subject = fcm.name == HeraldConfiguration.defaultName ? "fcm" : "fcm \(fcm.name)"
                add(await reach(subject, url: fcm.url, ca: fcm.ca, http2: false, client: http.client(fcm.ca)))
            }
            if let provider = configuration.provider {
                for url in provider.urls {
                    add(await reach("provider", url: url, ca: nil, http2: false, client: http.plain))
                }
            }
            await http.shutdown()
        }
        return findings
    }

    /// Each host the configuration sends to, with the subject its finding names.
    private var hosts: [(subject: String, url: String)] {
        configuration.apnsKeys.map { ($0.name == HeraldConfiguration.defaultName ? "apns" : "apns \($0.name)", $0.url) }
            + configuration.fcmAccounts.map {
                ($0.name == HeraldConfiguration.defaultName ? "fcm" : "fcm \($0.name)", $0.url)
            }
            + (configuration.provider?.urls ?? []).map { ("provider", $0) }
    }

    // MARK: Keys and files

    private var sharedDatabase: Bool {
        if case .postgres = configuration.database { return true }
        return false
    }

    private func path(_ name: String) -> String {
        (configuration.keysDirectory as NSString).appendingPathComponent(name)
    }

    private func keys() -> [Finding] {
        var findings: [Finding] = []
        findings.append(masterKey())
        findings.append(apiKey())
        // Each key and account, named after its entry when it is not the default one.
        for apns in configuration.apnsKeys { findings.append(apnsKey(apns)) }
        for fcm in configuration.fcmAccounts {
            findings.append(fcmAccount(fcm.serviceAccount, name: fcm.name))
        }
        for vapid in configuration.vapidKeys { findings.append(vapidKey(vapid)) }
        var checkedCAs = Set<String>()
        for (subject, ca) in configuration.apnsKeys.map({ ("apns ca", $0.ca) })
            + configuration.fcmAccounts.map({ ("fcm ca", $0.ca) })
        {
            guard let ca, checkedCAs.insert(subject + ca).inserted else { continue }
            findings.append(certificate(subject, path: ca))
        }
        if let provider = configuration.provider, environment["HERALD_PROVIDER_SECRET"].map(\.isEmpty) ?? true {
            let file = provider.secretFile ?? path("provider.secret")
            findings.append(secretFile("provider secret", path: file, made: false))
        }
        return findings
    }

    /// A key every node of a shared database must hold alike: one made on first start would
    /// differ from the others', so there a missing one fails.
    private func missing(_ subject: String, _ file: String) -> Finding {
        if sharedDatabase {
            return Finding(
                passed: false,
                subject: subject,
                detail: "\(file): missing (every node on the shared database needs the same one)"
            )
        }
        return Finding(passed: true, subject: subject, detail: "\(file): not there yet, made on first start")
    }

    private func masterKey() -> Finding {
        if let value = environment[MasterKey.environmentVariable], !value.isEmpty {
            do {
                _ = try MasterKey.resolve(environment: environment, path: path("master.key"))
                return Finding(passed: true, subject: "master key", detail: MasterKey.environmentVariable)
            } catch {
                return Finding(
                    passed: false,
                    subject: "master key",
                    detail: "\(MasterKey.environmentVariable): \(error)"
                )
            }
        }
        let file = path("master.key")
        guard FileManager.default.fileExists(atPath: file) else { return missing("master key", file) }
        do {
            _ = try MasterKey.load(path: file)
            return Finding(passed: true, subject: "master key", detail: file)
        } catch {
            return Finding(passed: false, subject: "master key", detail: "\(file): \(error)")
        }
    }

    private func apiKey() -> Finding {
        if let value = environment["HERALD_API_KEY"], !value.isEmpty {
            return value.count >= 16
                ? Finding(passed: true, subject: "api key", detail: "HERALD_API_KEY")
                : Finding(passed: false, subject: "api key", detail: "HERALD_API_KEY: shorter than 16 characters")
        }
        let file = path("api.key")
        guard FileManager.default.fileExists(atPath: file) else { return missing("api key", file) }
        return secretFile("api key", path: file, made: true)
    }

    private func secretFile(_ subject: String, path file: String, made: Bool) -> Finding {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            return Finding(passed: false, subject: subject, detail: "\(file): cannot be read")
        }
        guard text.trimmingCharacters(in: .whitespacesAndNewlines).count >= 16 else {
            return Finding(passed: false, subject: subject, detail: "\(file): shorter than 16 characters")
        }
        return Finding(passed: true, subject: subject, detail: file)
    }

    private func apnsKey(_ apns: HeraldConfiguration.APNs) -> Finding {
        let subject = apns.name == HeraldConfiguration.defaultName ? "apns key" : "apns key \(apns.name)"
        let settings = apns.settings()
        guard let keyID = settings.resolvedKeyID else {
            return Finding(
                passed: false,
                subject: subject,
                detail: "\(apns.key): no key id (name the file AuthKey_<KEYID>.p8 or set apns.key_id)"
            )
        }
        guard let pem = try? String(contentsOfFile: apns.key, encoding: .utf8) else {
            return Finding(passed: false, subject: subject, detail: "\(apns.key): cannot be read")
        }
        guard (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
            return Finding(
                passed: false,
                subject: subject,
                detail: "\(apns.key): not a P-256 private key in PEM form"
            )
        }
        return Finding(passed: true, subject: subject, detail: "\(apns.key) (key \(keyID), team \(apns.teamID))")
    }

    private func fcmAccount(_ file: String, name: String = HeraldConfiguration.defaultName) -> Finding {
        let subject = name == HeraldConfiguration.defaultName ? "fcm account" : "fcm account \(name)"
        do {
            let account = try FCMServiceAccount.load(path: file)
            return Finding(
                passed: true,
                subject: subject,
                detail: "\(file) (\(account.clientEmail), project \(account.projectID))"
            )
        } catch {
            return Finding(passed: false, subject: subject, detail: "\(file): \(error)")
        }
    }

    /// A VAPID key: readable, an ES256 key, and its public half (what browsers subscribe with).
    private func vapidKey(_ vapid: HeraldConfiguration.VAPID) -> Finding {
        let subject = "vapid key \(vapid.name)"
        do {
            let key = try vapid.loadKey()
            return Finding(
                passed: true,
                subject: subject,
                detail: "\(vapid.key) (\(vapid.subject); application server key \(key.applicationServerKey))"
            )
        } catch {
            return Finding(passed: false, subject: subject, detail: error.message)
        }
    }

    private func certificate(_ subject: String, path file: String) -> Finding {
        do {
            let certificates = try NIOSSLCertificate.fromPEMFile(file)
            guard !certificates.isEmpty else {
                return Finding(passed: false, subject: subject, detail: "\(file): no certificate in it")
            }
            return Finding(passed: true, subject: subject, detail: file)
        } catch {
            return Finding(passed: false, subject: subject, detail: "\(file): not a PEM certificate")
        }
    }

    // MARK: The database

    private func database() async -> Finding {
        switch configuration.database {
        case .sqlite:
            let file = configuration.databasePath
            guard FileManager.default.fileExists(atPath: file) else {
                // Made on first start: the directory must be there or makeable.
                var directory = configuration.dataDirectory
                while !FileManager.default.fileExists(atPath: directory) {
                    let parent = FilePathText.parent(of: directory)
                    if parent.isEmpty || parent == directory {
                        directory = "."
                        break
                    }
                    directory = parent
                }
                guard FileManager.default.isWritableFile(atPath: directory) else {
                    return Finding(passed: false, subject: "database", detail: "\(file): \(directory) is not writable")
                }
                return Finding(
                    passed: true,
                    subject: "database",
                    detail: "\(file) (not there yet, made on first start)"
                )
            }
            do {
                return schema(try SQLiteStore.schemaStatus(path: file), at: file)
            } catch {
                return Finding(passed: false, subject: "database", detail: "\(file): \(error.detail)")
            }
        case .postgres(let postgres):
            var quick = postgres
            quick.connectTimeout = timeout
            do {
                return schema(
                    try await PostgresStore.schemaStatus(configuration: quick, logger: logger),
                    at: "\(postgres)"
                )
            } catch {
                return Finding(passed: false, subject: "database", detail: "\(postgres): \(error.detail)")
            }
        }
    }

    private func schema(_ status: SchemaStatus, at place: String) -> Finding {
        if status.isNewer {
            return Finding(
                passed: false,
                subject: "database",
                detail:
                    "\(place): schema v\(status.version) is newer than this build's (v\(status.latest)): upgrade herald"
            )
        }
        let note = status.version < status.latest ? ", migrated to v\(status.latest) on start" : ""
        return Finding(passed: true, subject: "database", detail: "\(place) (schema v\(status.version)\(note))")
    }

    // MARK: Hosts

    /// One client trusting the system's roots, and one per extra CA.
    private struct Clients {
        let plain: HTTPClient
        let withCA: [String: HTTPClient]

        func client(_ ca: String?) -> HTTPClient { ca.flatMap { withCA[$0] } ?? plain }

        func shutdown() async {
            for client in [plain] + Array(withCA.values) { try? await client.shutdown() }
        }
    }

    private func makeHTTPClient() throws -> Clients {
        func make(ca: String?) throws -> HTTPClient {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let ca { tls.trustRoots = .file(ca) }
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.timeout = .init(connect: TimeAmount(timeout), read: TimeAmount(timeout))
            configuration.httpVersion = .automatic
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        }
        var withCA: [String: HTTPClient] = [:]
        let cas = configuration.apnsKeys.map(\.ca) + configuration.fcmAccounts.map(\.ca)
        for ca in cas.compactMap(\.self) where withCA[ca] == nil {
            withCA[ca] = try make(ca: ca)
        }
        return Clients(plain: try make(ca: nil), withCA: withCA)
    }

    /// Connects (TLS for https) and makes one request: any answer means the host is there. APNs
    /// must answer over HTTP/2, the only protocol it speaks.
    private func reach(_ subject: String, url: String, ca: String?, http2: Bool, client: HTTPClient) async -> Finding {
        guard let parsed = URL(string: url), let host = parsed.host, let scheme = parsed.scheme else {
            return Finding(passed: false, subject: subject, detail: "'\(url)' is not a URL")
        }
        let port = parsed.port ?? (scheme == "https" ? 443 : 80)
        let place = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        var request = HTTPClientRequest(
            url: "\(scheme)://\(place)" + (subject == "provider" ? parsed.path + "/health" : "/")
        )
        request.method = .GET
        do {
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            if http2, response.version != .http2 {
                return Finding(
                    passed: false,
                    subject: subject,
                    detail:
                        "\(place): answered over HTTP/\(response.version.major).\(response.version.minor), not HTTP/2"
                )
            }
            let protocolName =
                response.version == .http2 ? "HTTP/2" : "HTTP/\(response.version.major).\(response.version.minor)"
            let tls = scheme == "https" ? "TLS, " : ""
            return Finding(
                passed: true,
                subject: subject,
                detail: "\(place) (\(tls)\(protocolName), status \(response.status.code))"
            )
        } catch {
            return Finding(passed: false, subject: subject, detail: "\(place): \(Self.describe(error))")
        }
    }

    /// A connection failure in a few words: `connection refused`, `cannot resolve the host`, ….
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return "cannot resolve the host"
            }
            if let first = error.connectionErrors.first { return describe(first.error) }
            return "cannot connect"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as HTTPClientError where error == .connectTimeout:
            return "connect timed out"
        case let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout:
            return "no answer in time"
        case let error as HTTPClientError where error == .tlsHandshakeTimeout:
            return "TLS handshake timed out"
        case let error as NIOSSLError:
            return "TLS: \(error)"
        case let error as ChannelError:
            if case .connectTimeout = error { return "connect timed out" }
            return "\(error)"
        default:
            return "\(error)"
        }
    }
}
