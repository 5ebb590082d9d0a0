import Foundation
import HeraldEncoding
import HeraldFCMCore

/// Reading a `messages:send` body.
extension FCMEmulator {
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

    /// What a send body may hold before it is parsed: a request's limits. A key given twice is
    /// left to JSONSerialization, as before (the sandbox documents no rule of FCM's for it).
    static let sendLimits: JSONLimits = {
        var limits = JSONLimits.request
        limits.refusesDuplicateKeys = false
        return limits
    }()

    /// Reads the body with JSONSerialization first, so a data value that is not a string is named,
    /// then decodes it as an `FCMSendRequest`.
    static func parseSend(_ body: [UInt8]?) -> ParsedSend {
        func invalid(_ message: String, field: String? = nil, token: String? = nil) -> ParsedSend {
            ParsedSend(result: .failure(InvalidArgument(field: field, message: message)), token: token)
        }
        guard let body else {
            return invalid("Request payload size exceeds the limit: \(maximumSendBody) bytes.")
        }
        // Bounded before Foundation builds anything from it.
        guard (try? JSONCheck.check(body, limits: sendLimits)) != nil,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else {
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
