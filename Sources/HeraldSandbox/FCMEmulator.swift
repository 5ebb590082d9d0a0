import Foundation
import HeraldAPNsCore
import HeraldFCMCore
import HeraldHTTPSupport
import Synchronization

/// An answer of the FCM listener, as the emulator decides it: the transport only writes it.
struct SandboxFCMAnswer: Sendable {
    var status: Int
    var body: Data
    /// Seconds for a `Retry-After` header.
    var retryAfter: Int?
    /// Latency to add before answering.
    var delay: Duration = .zero
    /// Adds `WWW-Authenticate: Bearer`, as Google does with 401.
    var challenge = false

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json(_ status: Int, _ value: some Encodable) -> Self {
        SandboxFCMAnswer(status: status, body: (try? encoder.encode(value)) ?? Data("{}".utf8))
    }
}

/// FCM HTTP v1: the `messages:send` rules and error codes, FCM faults and latency, and the
/// OAuth2 token endpoint whose access tokens authorize the sends. Registration tokens and
/// devices are the registry's: the emulator asks it whether a token is live and hands it
/// accepted messages.
final class FCMEmulator: FaultPlanning {
    /// The token endpoint (`POST /token`) whose access tokens authorize sends.
    let tokenEndpoint: FCMTokenEndpoint
    private let devices: any FCMDeviceDirectory
    /// Where every send and token request is recorded.
    let log: InspectionLog<SandboxFCMInspectionRecord>
    private let state = Mutex(State())

    private let clock: SandboxClock

    /// The configuration's service accounts and token lifetime, over `devices`, recording into `log`.
    init(
        configuration: SandboxConfiguration,
        devices: any FCMDeviceDirectory,
        log: InspectionLog<SandboxFCMInspectionRecord>
    ) throws(SandboxError) {
        tokenEndpoint = try FCMTokenEndpoint(
            serviceAccounts: configuration.serviceAccounts,
            accessTokenLifetime: configuration.fcmAccessTokenLifetime,
            clock: configuration.clock
        )
        clock = configuration.clock
        self.devices = devices
        self.log = log
    }

    // MARK: - Faults, latency, shutdown

    /// Queues a fault for the next matching `messages:send` requests.
    func inject(_ fault: SandboxFCMFault) throws(SandboxError) {
        try checkFault(count: fault.count, status: fault.status, retryAfter: fault.retryAfter)
        state.withLock { $0.plan.faults.append(fault) }
    }

    /// The plan's latency delays every answer (sends and token requests).
    func changePlan(_ change: (inout FaultPlan<SandboxFCMFault>) -> Void) {
        state.withLock { change(&$0.plan) }
    }

    // MARK: - Requests

    /// `POST /token`: the token endpoint's answer, recorded and delayed like every FCM answer.
    func grantAccessToken(form: [String: String]) -> SandboxFCMAnswer {
        var record = SandboxFCMInspectionRecord(kind: .token, receivedAt: clock.epochMilliseconds)
        var answer = tokenEndpoint.grant(form: form, record: &record)
        answer.delay = state.withLock { $0.plan.latency }
        log.append(record)
        return answer
    }

    /// `POST /v1/projects/{project}/messages:send`: applies FCM's rules to one request, records it
    /// in the FCM inspection log, and hands an accepted message to the registry. `body` is nil
    /// when it was larger than the listener reads.
    func send(project: String, authorization: String?, body: [UInt8]?) -> SandboxFCMAnswer {
        let parsed = Self.parseSend(body)
        let nowMilliseconds = clock.epochMilliseconds
        var record = SandboxFCMInspectionRecord(kind: .send, receivedAt: nowMilliseconds)
        record.project = project
        record.token = parsed.token
        if let message = parsed.request?.message {
            record.priority = message.android?.priority?.rawValue
            record.ttl = message.android?.ttl
            record.collapseKey = message.android?.collapseKey
            record.data = message.data ?? [:]
        }
        // Looked up before the emulator's lock (locks are never nested); it changes nothing.
        let access = Self.bearer(authorization).flatMap(tokenEndpoint.access(for:))
        let authorized = access.map { $0.projectID == project && $0.messaging } ?? false
        let admission = state.withLock { state in
            Admission(
                seed: state.random.next(),
                latency: state.plan.latency,
                shuttingDown: state.plan.shuttingDown,
                // Injected faults hit authorized requests, as FCM's own failures do.
                fault: authorized && !state.plan.shuttingDown
                    ? state.plan.take(where: { $0.matches(token: parsed.token) }) : nil
            )
        }
        var handoff = DeviceHandoff.none
        var answer = evaluate(
            parsed,
            project: project,
            access: access,
            admission: admission,
            nowMilliseconds: nowMilliseconds,
            record: &record,
            handoff: &handoff
        )
        answer.delay = admission.latency
        log.append(record)
        // After the record: whoever sees the message on the device also finds it in the log.
        handoff.complete()
        return answer
    }

    private struct Admission {
        /// Seeds the message name.
        var seed: UInt64
        var latency: Duration
        var shuttingDown: Bool
        var fault: SandboxFCMFault?
    }

    /// FCM's order: the service, the credentials and their permission, then the request, the
    /// target, and last the registration token.
    private func evaluate(
        _ parsed: ParsedSend,
        project: String,
        access: FCMTokenEndpoint.AccessGrant?,
        admission: Admission,
        nowMilliseconds: Int64,
        record: inout SandboxFCMInspectionRecord,
        handoff: inout DeviceHandoff
    ) -> SandboxFCMAnswer {
        do throws(Refusal) {
            try Self.admit(access, project: project, admission: admission)
            let (request, token) = try target(of: parsed, project: project)
            if request.validateOnly == true {
                let name = "projects/\(project)/messages/fake_message_id"
                record.accept(name: name, delivery: "validate_only")
                return .json(200, ["name": name])
            }
            var random = SplitMix64(seed: admission.seed)
            let name = "projects/\(project)/messages/0:\(nowMilliseconds)%\(RandomText.hex16(random.next()))"
            let delivery: DeviceDelivery
            (delivery, handoff) = deliver(request.message, to: token, name: name, nowMilliseconds: nowMilliseconds)
            switch delivery {
            case .delivered: record.accept(name: name, delivery: "delivered")
            case .stored: record.accept(name: name, delivery: "stored")
            case .notKept: record.accept(name: name, delivery: "discarded: device offline and ttl is 0s")
            case .refused: throw Refusal(.unregistered)
            }
            return .json(200, ["name": name])
        } catch {
            return error.answer(record: &record)
        }
    }

    /// An error answer: FCM's body, and the code the inspection log shows.
    private struct Refusal: Error {
        var body: FCMErrorBody
        var code: String
        /// `WWW-Authenticate: Bearer`, as Google adds to a 401.
        var challenge = false
        /// Seconds for a `Retry-After` header.
        var retryAfter: Int?
        /// The inspection log's outcome, for a refusal that is not FCM's own.
        var outcome: String?

        init(_ body: FCMErrorBody, code: String) {
            self.body = body
            self.code = code
        }

        init(_ code: FCMErrorCode, _ message: String? = nil, field: String? = nil) {
            self.init(FCMErrorBody(code: code, message: message, field: field), code: code.rawValue)
        }

        /// The answer, noted in the inspection record.
        func answer(record: inout SandboxFCMInspectionRecord) -> SandboxFCMAnswer {
            record.status = body.error.code
            record.errorCode = code
            record.errorMessage = body.error.message
            if let outcome { record.outcome = outcome }
            var answer = SandboxFCMAnswer.json(body.error.code, body)
            answer.challenge = challenge
            answer.retryAfter = retryAfter
            return answer
        }
    }

    /// What FCM checks before the request: the service, then the credentials and their
    /// permission; an injected fault comes after them, as FCM's own failures hit authorized
    /// requests.
    private static func admit(
        _ access: FCMTokenEndpoint.AccessGrant?,
        project: String,
        admission: Admission
    ) throws(Refusal) {
        if admission.shuttingDown { throw Refusal(.unavailable) }

        // Credentials: an unexpired access token from the token endpoint, for this project.
        guard let access else {
            var refusal = Refusal(Self.unauthenticated, code: "UNAUTHENTICATED")
            refusal.challenge = true
            throw refusal
        }
        guard access.projectID == project else {
            throw Refusal(Self.permissionDenied(project: project), code: "PERMISSION_DENIED")
        }
        guard access.messaging else {
            throw Refusal(Self.insufficientScopes, code: "PERMISSION_DENIED")
        }

        if let fault = admission.fault {
            var body = FCMErrorBody(code: fault.errorCode)
            if let status = fault.status { body.error.code = status }
            var refusal = Refusal(body, code: fault.errorCode.rawValue)
            refusal.retryAfter = fault.retryAfter
            refusal.outcome = "injected"
            throw refusal
        }
    }

    /// The request and the registration token it targets: the request, the target, and last
    /// the registration token, live and of this project.
    private func target(of parsed: ParsedSend, project: String) throws(Refusal) -> (FCMSendRequest, String) {
        let request: FCMSendRequest
        switch parsed.result {
        case .failure(let invalid):
            throw Refusal(.invalidArgument, invalid.message, field: invalid.field)
        case .success(let value):
            request = value
        }
        let message = request.message
        do {
            try message.validate()
        } catch {
            throw Refusal(.invalidArgument, error.message, field: error.field)
        }
        guard let token = message.token else {
            let field = message.topic != nil ? "message.topic" : "message.condition"
            throw Refusal(
                .invalidArgument,
                "The sandbox delivers to registration tokens only; topic and condition messages are not supported.",
                field: field
            )
        }

        // The registration token.
        guard let tokenRecord = devices.fcmToken(token) else {
            throw Refusal(
                .invalidArgument,
                "The registration token is not a valid FCM registration token",
                field: "message.token"
            )
        }
        guard tokenRecord.projectID == project else { throw Refusal(.senderIDMismatch) }
        guard tokenRecord.state == .active else { throw Refusal(.unregistered) }
        return (request, token)
    }

    /// Hands an accepted message to the registry: to its device, or kept for it until its ttl
    /// ends.
    private func deliver(
        _ message: FCMMessage,
        to token: String,
        name: String,
        nowMilliseconds: Int64
    ) -> (DeviceDelivery, DeviceHandoff) {
        let delivered = SandboxFCMMessage(
            name: name,
            token: token,
            data: message.data ?? [:],
            priority: message.android?.priority ?? .normal,
            ttl: message.android?.ttl,
            collapseKey: message.android?.collapseKey,
            sentAt: nowMilliseconds
        )
        let ttlSeconds = message.android?.ttl.flatMap(FCMMessage.seconds(ttl:)) ?? FCMMessage.maximumTTLSeconds
        let keepUntil = ttlSeconds == 0 ? nil : nowMilliseconds + ttlSeconds * 1000
        return devices.deliver(delivered, keepUntil: keepUntil)
    }

    /// The access token of an `Authorization: Bearer …` header.
    private static func bearer(_ authorization: String?) -> String? {
        Bearer.token(in: authorization).map(String.init)
    }

    static let unauthenticated = FCMErrorBody(
        error: .init(
            code: 401,
            message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie "
                + "or other valid authentication credential. "
                + "See https://developers.google.com/identity/sign-in/web/devconsole-project.",
            status: "UNAUTHENTICATED"
        )
    )

    static let insufficientScopes = FCMErrorBody(
        error: .init(code: 403, message: "Request had insufficient authentication scopes.", status: "PERMISSION_DENIED")
    )

    static func permissionDenied(project: String) -> FCMErrorBody {
        FCMErrorBody(
            error: .init(
                code: 403,
                message: "Permission 'cloudmessaging.messages.create' denied on resource "
                    + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).",
                status: "PERMISSION_DENIED"
            )
        )
    }
}

// MARK: - State

extension FCMEmulator {
    struct State {
        var plan = FaultPlan<SandboxFCMFault>()
        var random: SplitMix64 = {
            var system = SystemRandomNumberGenerator()
            return SplitMix64(seed: system.next())
        }()
    }
}

extension SandboxFCMInspectionRecord {
    /// A record about to be filled in.
    init(kind: Kind, receivedAt: Int64) {
        self.init(
            sequence: 0,
            receivedAt: receivedAt,
            kind: kind,
            project: nil,
            token: nil,
            priority: nil,
            ttl: nil,
            collapseKey: nil,
            data: nil,
            status: 0,
            errorCode: nil,
            errorMessage: nil,
            outcome: "rejected",
            delivery: nil,
            name: nil
        )
    }

    /// Marks an accepted send.
    mutating func accept(name: String, delivery: String) {
        status = 200
        outcome = "accepted"
        self.name = name
        self.delivery = delivery
    }
}
