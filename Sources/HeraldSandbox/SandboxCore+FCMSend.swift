import Foundation
import HeraldAPNsCore
import HeraldFCMCore

extension SandboxCore {
    /// How many messages FCM keeps for an offline device; the oldest goes first.
    static let fcmStorageLimit = 100

    /// `POST /v1/projects/{project}/messages:send`: applies FCM's rules to one request, records it
    /// in the FCM inspection log, and delivers or stores an accepted message. `body` is nil when
    /// it was larger than the listener reads.
    func send(project: String, authorization: String?, body: [UInt8]?) -> SandboxFCMAnswer {
        let parsed = Self.parseSend(body)
        let now = clock.now
        let nowMilliseconds = Self.epochMilliseconds()
        var record = SandboxFCMInspectionRecord(kind: .send, receivedAt: nowMilliseconds)
        record.project = project
        record.token = parsed.token
        if let message = parsed.request?.message {
            record.priority = message.android?.priority?.rawValue
            record.ttl = message.android?.ttl
            record.collapseKey = message.android?.collapseKey
            record.data = message.data ?? [:]
        }
        var delivery: (SandboxFCMMessage, Subscriber)?
        let (answer, observers) = state.withLock { state in
            var answer = evaluate(
                parsed,
                project: project,
                authorization: authorization,
                state: &state,
                now: now,
                nowMilliseconds: nowMilliseconds,
                record: &record,
                delivery: &delivery
            )
            answer.delay = state.latency
            return (answer, state.append(fcm: &record))
        }
        if let (message, subscriber) = delivery {
            subscriber.continuation.yield(.fcmMessage(message))
        }
        for observer in observers { observer.yield(record) }
        return answer
    }

    /// FCM's order: the service, the credentials and their permission, then the request, the
    /// target, and last the registration token.
    private func evaluate(
        _ parsed: ParsedSend,
        project: String,
        authorization: String?,
        state: inout State,
        now: ContinuousClock.Instant,
        nowMilliseconds: Int64,
        record: inout SandboxFCMInspectionRecord,
        delivery: inout (SandboxFCMMessage, Subscriber)?
    ) -> SandboxFCMAnswer {
        func fail(_ body: FCMErrorBody, code: String) -> SandboxFCMAnswer {
            record.status = body.error.code
            record.errorCode = code
            record.errorMessage = body.error.message
            return .json(body.error.code, body)
        }
        func fail(_ code: FCMErrorCode, _ message: String? = nil, field: String? = nil) -> SandboxFCMAnswer {
            fail(FCMErrorBody(code: code, message: message, field: field), code: code.rawValue)
        }

        if state.shuttingDown { return fail(.unavailable) }

        // Credentials: an unexpired access token from the token endpoint, for this project.
        let bearer = authorization.flatMap { value -> String? in
            guard value.utf8.count > 7,
                value.utf8.prefix(7).lazy.map({ $0 | 0x20 }).elementsEqual("bearer ".utf8)
            else { return nil }
            return String(Substring(value.utf8.dropFirst(7)))
        }
        guard let bearer, let access = state.accessTokens[bearer], now < access.expiresAt else {
            var answer = fail(Self.unauthenticated, code: "UNAUTHENTICATED")
            answer.challenge = true
            return answer
        }
        guard access.projectID == project else {
            return fail(Self.permissionDenied(project: project), code: "PERMISSION_DENIED")
        }
        guard access.messaging else {
            return fail(Self.insufficientScopes, code: "PERMISSION_DENIED")
        }

        // Injected faults hit authorized requests, as FCM's own failures do.
        if let index = state.fcmFaults.firstIndex(where: { $0.matches(token: parsed.token) }) {
            let fault = state.fcmFaults[index]
            if fault.count <= 1 {
                state.fcmFaults.remove(at: index)
            } else {
                state.fcmFaults[index].count -= 1
            }
            var body = FCMErrorBody(code: fault.errorCode)
            if let status = fault.status { body.error.code = status }
            var answer = fail(body, code: fault.errorCode.rawValue)
            answer.retryAfter = fault.retryAfter
            record.outcome = "injected"
            return answer
        }

        // The request.
        let request: FCMSendRequest
        switch parsed.result {
        case .failure(let invalid):
            return fail(.invalidArgument, invalid.message, field: invalid.field)
        case .success(let value):
            request = value
        }
        let message = request.message
        do {
            try message.validate()
        } catch {
            return fail(.invalidArgument, error.message, field: error.field)
        }
        guard let token = message.token else {
            let field = message.topic != nil ? "message.topic" : "message.condition"
            return fail(
                .invalidArgument,
                "The sandbox delivers to registration tokens only; topic and condition messages are not supported.",
                field: field
            )
        }

        // The registration token.
        guard let tokenRecord = state.fcmTokens[token] else {
            return fail(
                .invalidArgument,
                "The registration token is not a valid FCM registration token",
                field: "message.token"
            )
        }
        guard tokenRecord.projectID == project else { return fail(.senderIDMismatch) }
        guard tokenRecord.state == .active else { return fail(.unregistered) }

        record.status = 200
        record.outcome = "accepted"
        if request.validateOnly == true {
            let name = "projects/\(project)/messages/fake_message_id"
            record.name = name
            record.delivery = "validate_only"
            return .json(200, ["name": name])
        }
        let name = "projects/\(project)/messages/0:\(nowMilliseconds)%\(Self.hex16(state.random.next()))"
        record.name = name
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
        if let subscriber = state.subscribers[tokenRecord.deviceID] {
            delivery = (delivered, subscriber)
            record.delivery = "delivered"
        } else if ttlSeconds == 0 {
            record.delivery = "discarded: device offline and ttl is 0s"
        } else {
            state.store(
                PendingFCMMessage(message: delivered, expiresAt: nowMilliseconds + ttlSeconds * 1000),
                for: tokenRecord.deviceID,
                now: nowMilliseconds
            )
            record.delivery = "stored"
        }
        return .json(200, ["name": name])
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

    static func hex16(_ value: UInt64) -> String {
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

// MARK: - Reading the request

extension SandboxCore {
    /// A `messages:send` body as read before any rule is applied.
    struct ParsedSend: Sendable {
        var result: Result<FCMSendRequest, InvalidArgument>
        /// `message.token` when the body names one, even if something else is wrong: faults and
        /// the inspection log match on it.
        var token: String?

        var request: FCMSendRequest? { try? result.get() }
    }

    /// A 400 INVALID_ARGUMENT, with the field at fault when there is one.
    struct InvalidArgument: Error, Sendable {
        let field: String?
        let message: String
    }

    /// The names FCM knows in `message` (both the proto and the JSON spelling).
    private static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token",
        "topic", "condition",
    ]

    /// Reads the body with JSONSerialization first, so a data value that is not a string is named,
    /// then decodes it as an `FCMSendRequest`.
    static func parseSend(_ body: [UInt8]?) -> ParsedSend {
        func invalid(_ message: String, field: String? = nil, token: String? = nil) -> ParsedSend {
            ParsedSend(result: .failure(InvalidArgument(field: field, message: message)), token: token)
        }
        guard let body else {
            return invalid("Request payload size exceeds the limit: \(maximumSendBody) bytes.")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return invalid("Invalid JSON payload received. The body is not a JSON object.")
        }
        for key in object.keys.sorted() where !["message", "validate_only", "validateOnly"].contains(key) {
            return invalid("Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.", field: key)
        }
        guard var message = object["message"] as? [String: Any] else {
            return invalid("Invalid JSON payload received. The request has no \"message\" object.", field: "message")
        }
        let token = message["token"] as? String
        for key in message.keys.sorted() where !messageFields.contains(key) {
            return invalid(
                "Invalid JSON payload received. Unknown name \"\(key)\" at 'message': Cannot find field.",
                field: "message",
                token: token
            )
        }
        if let data = message["data"] {
            guard let entries = data as? [String: Any] else {
                return invalid(
                    "Invalid value at 'message.data': data must be an object with string values.",
                    field: "message.data",
                    token: token
                )
            }
            for (key, value) in entries.sorted(by: { $0.key < $1.key }) where value as? String == nil {
                return invalid(
                    "Invalid value at 'message.data[\(key)]' (TYPE_STRING): data values must be strings.",
                    field: "message.data[\(key)]",
                    token: token
                )
            }
        }
        // FCM reads both spellings of every field; `FCMSendRequest` reads the proto's.
        var normalized = object
        if let value = normalized.removeValue(forKey: "validateOnly"), normalized["validate_only"] == nil {
            normalized["validate_only"] = value
        }
        if var android = message["android"] as? [String: Any], let value = android.removeValue(forKey: "collapseKey") {
            if android["collapse_key"] == nil { android["collapse_key"] = value }
            message["android"] = android
        }
        normalized["message"] = message
        do {
            let data = try JSONSerialization.data(withJSONObject: normalized)
            return ParsedSend(result: .success(try JSONDecoder().decode(FCMSendRequest.self, from: data)), token: token)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context),
            let DecodingError.dataCorrupted(context)
        {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            return invalid("Invalid JSON payload received. Invalid value at '\(field)'.", field: field, token: token)
        } catch {
            return invalid("Invalid JSON payload received. \(error)", token: token)
        }
    }

    /// The largest `messages:send` body the listener reads.
    static let maximumSendBody = 64 * 1024
}

// MARK: - Storage

extension SandboxCore.State {
    /// Keeps a message for an offline device: expired ones go, one with the same collapse key is
    /// replaced, and beyond the limit the oldest is dropped.
    mutating func store(_ pending: SandboxCore.PendingFCMMessage, for deviceID: String, now: Int64) {
        var queue = fcmPending[deviceID] ?? []
        queue.removeAll { $0.expiresAt <= now }
        if let key = pending.message.collapseKey {
            queue.removeAll { $0.message.collapseKey == key }
        }
        queue.append(pending)
        if queue.count > SandboxCore.fcmStorageLimit {
            queue.removeFirst(queue.count - SandboxCore.fcmStorageLimit)
        }
        fcmPending[deviceID] = queue
    }
}
