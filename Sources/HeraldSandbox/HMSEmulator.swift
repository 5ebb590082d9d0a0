import Foundation
import HeraldEncoding
import HeraldHMSCore
import HeraldHTTPSupport
import Synchronization

/// Huawei Push Kit: the `messages:send` rules and result codes, faults and latency, and the
/// OAuth 2.0 token endpoint whose access tokens authorize the sends. Tokens and devices are the
/// registry's: the emulator asks it whether a token is live and hands it accepted messages.
final class HMSEmulator: FaultPlanning {
    /// The token endpoint (`POST /oauth2/v3/token`).
    let tokenEndpoint: HMSTokenEndpoint
    /// Where every send and token request is recorded.
    let log: InspectionLog<SandboxHMSInspectionRecord>
    private let devices: any HMSDeviceDirectory
    private let clock: SandboxClock
    private let state = Mutex(FaultPlan<SandboxHMSFault>())

    /// What the listener reads of a send's body; beyond it Push Kit answers 80300008.
    static let maximumSendBody = 64 * 1024
    /// How long Push Kit keeps a message for an offline device when the sender gives no ttl.
    static let defaultTTLSeconds: Int64 = 24 * 60 * 60

    /// The configuration's Huawei apps and token lifetime, over `devices`, recording into a log
    /// of `inspectionCapacity` records.
    init(configuration: SandboxConfiguration, devices: any HMSDeviceDirectory) throws(SandboxError) {
        (clock, self.devices) = (configuration.clock, devices)
        log = InspectionLog(capacity: configuration.inspectionCapacity)
        tokenEndpoint = try HMSTokenEndpoint(
            apps: configuration.hmsApps,
            accessTokenLifetime: configuration.hmsAccessTokenLifetime,
            clock: clock
        )
    }

    /// Queues a fault for the next matching authorized sends.
    func inject(_ fault: SandboxHMSFault) throws(SandboxError) {
        try checkFault(count: fault.count, status: nil, retryAfter: fault.retryAfter)
        state.withLock { $0.faults.append(fault) }
    }

    func changePlan(_ change: (inout FaultPlan<SandboxHMSFault>) -> Void) {
        state.withLock { change(&$0) }
    }

    /// `POST /oauth2/v3/token`, recorded and delayed like every Push Kit answer.
    func grantAccessToken(form: [String: String]) -> SandboxFCMAnswer {
        var record = SandboxHMSInspectionRecord(receivedAt: clock.epochMilliseconds, kind: .token)
        var answer = tokenEndpoint.grant(form: form, record: &record)
        answer.delay = state.withLock { $0.latency }
        log.append(record)
        return answer
    }

    /// `POST /v1/{appId}/messages:send`: Push Kit's rules for one request, recorded, with every
    /// accepted token's message handed to the registry. `body` is nil when it was larger than
    /// the listener reads.
    func send(appID: String, authorization: String?, body: [UInt8]?) -> SandboxFCMAnswer {
        let now = clock.epochMilliseconds
        var record = SandboxHMSInspectionRecord(receivedAt: now, kind: .send, appID: appID)
        let request = body.flatMap { try? JSONDecoder().decode(HMSSendRequest.self, from: Data($0)) }
        if let message = request?.message {
            record.tokens = message.token
            record.urgency = message.android?.urgency?.rawValue
            record.ttl = message.android?.ttl
            record.collapseKey = message.android?.collapseKey
            record.category = message.android?.category
            record.data = message.data
        }
        let access = tokenEndpoint.access(for: Bearer.token(in: authorization).map(String.init))
        let tokens = request?.message.token ?? []
        let (latency, shuttingDown, fault) = state.withLock { plan in
            // Injected faults hit authorized sends, as Push Kit's own failures do.
            let authorized = access == .valid(appID: appID) && !plan.shuttingDown
            let fault = authorized ? plan.take(where: { $0.token.map(tokens.contains) ?? true }) : nil
            return (plan.latency, plan.shuttingDown, fault)
        }
        let requestID = "\(now)\(RandomText.hex(bytes: 6))"
        record.requestID = requestID
        var handoffs: [DeviceHandoff] = []
        var answer: SandboxFCMAnswer
        do throws(Refusal) {
            if shuttingDown { throw Refusal(.internalError, status: 503, msg: "The service is shutting down") }
            try Self.admit(access, appID: appID)
            if let fault { throw Refusal(fault) }
            answer = try accept(
                request,
                body: body,
                appID: appID,
                requestID: requestID,
                record: &record,
                handoffs: &handoffs
            )
        } catch {
            answer = error.answer(requestID: requestID, record: &record)
        }
        answer.delay = latency
        log.append(record)
        // After the record: whoever sees the message on the device also finds it in the log.
        for handoff in handoffs { handoff.complete() }
        return answer
    }

    /// The credentials: a bearer token granted for this app and not expired.
    private static func admit(_ access: HMSTokenEndpoint.Access, appID: String) throws(Refusal) {
        switch access {
        case .valid(appID: appID): return
        case .expired: throw Refusal(.oauthTokenExpired)
        case .valid, .unknown: throw Refusal(.oauthAuthenticationError)
        }
    }

    /// The request, its message, then each token: the live ones get the message, the rest are
    /// listed as illegal (80100000 when some took it, 80300007 when none did).
    private func accept(
        _ request: HMSSendRequest?,
        body: [UInt8]?,
        appID: String,
        requestID: String,
        record: inout SandboxHMSInspectionRecord,
        handoffs: inout [DeviceHandoff]
    ) throws(Refusal) -> SandboxFCMAnswer {
        guard body != nil else { throw Refusal(.bodyTooLarge) }
        guard let request else { throw Refusal(.badMessageStructure) }
        do {
            try request.message.validate()
        } catch {
            throw Refusal(error.code, msg: error.description)
        }
        let tokens = request.message.token ?? []
        let illegal = tokens.filter {
            devices.hmsToken($0).map { $0.projectID != appID || $0.state != .active } ?? true
        }
        guard illegal.count < tokens.count else {
            throw Refusal(.allTokensInvalid, msg: Self.report(of: tokens, illegal: illegal))
        }
        var deliveries: [String] = []
        for token in tokens where !illegal.contains(token) {
            if request.validateOnly {
                deliveries.append("validate_only")
                continue
            }
            let (delivery, handoff) = deliver(
                SandboxHMSMessage(request.message, token: token, requestID: requestID, sentAt: record.receivedAt)
            )
            deliveries.append(delivery)
            handoffs.append(handoff)
        }
        record.status = 200
        record.outcome = "accepted"
        record.delivery = deliveries
        let code: HMSResultCode = illegal.isEmpty ? .success : .partialSuccess
        let answer = HMSSendAnswer(
            code: code,
            msg: illegal.isEmpty ? nil : Self.report(of: tokens, illegal: illegal),
            requestId: requestID
        )
        record.code = answer.code
        record.message = answer.msg
        return .json(200, answer)
    }

    /// Hands the message to the registry: delivered, kept until its ttl, or discarded (offline
    /// with a ttl of 0). Answers what the inspection log shows for its token.
    private func deliver(_ delivered: SandboxHMSMessage) -> (String, DeviceHandoff) {
        let ttl = delivered.ttl.flatMap(DurationText.seconds) ?? Self.defaultTTLSeconds
        let (delivery, handoff) = devices.deliver(delivered, keepUntil: ttl == 0 ? nil : delivered.sentAt + ttl * 1000)
        switch delivery {
        case .delivered: return ("delivered", handoff)
        case .stored: return ("stored", handoff)
        case .notKept, .refused: return ("discarded: device offline and ttl is 0s", handoff)
        }
    }

    /// A partial answer's `msg`: how many tokens took the message and which did not.
    private static func report(of tokens: [String], illegal: [String]) -> String {
        let report = HMSTokenReport(
            success: tokens.count - illegal.count,
            failure: illegal.count,
            illegalTokens: illegal
        )
        let data = (try? SandboxFCMAnswer.encoder.encode(report)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// An error answer: Push Kit's body and status, and what the inspection log shows.
    private struct Refusal: Error {
        var code: HMSResultCode
        var status: Int
        var msg: String
        var retryAfter: Int?
        var outcome = "rejected"

        init(_ code: HMSResultCode, status: Int? = nil, msg: String? = nil) {
            self.code = code
            self.status = status ?? code.status
            self.msg = msg ?? code.defaultMessage
        }

        init(_ fault: SandboxHMSFault) {
            switch fault.kind {
            case .flowControl: self.init(.internalError, status: 503, msg: "Flow control: too many requests, try later")
            case .tooManyRequests: self.init(.internalError, status: 429, msg: "Too many requests")
            case .internalError: self.init(.internalError)
            }
            retryAfter = fault.retryAfter
            outcome = "injected"
        }

        func answer(requestID: String, record: inout SandboxHMSInspectionRecord) -> SandboxFCMAnswer {
            record.status = status
            record.code = code.text
            record.message = msg
            record.outcome = outcome
            var answer = SandboxFCMAnswer.json(status, HMSSendAnswer(code: code, msg: msg, requestId: requestID))
            answer.retryAfter = retryAfter
            return answer
        }
    }
}

extension SandboxHMSMessage {
    /// What the device receives of `message`, sent to `token`.
    init(_ message: HMSMessage, token: String, requestID: String, sentAt: Int64) {
        let android = message.android
        self.init(
            requestID: requestID,
            token: token,
            data: message.data ?? "",
            urgency: android?.urgency ?? .normal,
            ttl: android?.ttl,
            collapseKey: android?.collapseKey,
            category: android?.category,
            sentAt: sentAt
        )
    }
}
