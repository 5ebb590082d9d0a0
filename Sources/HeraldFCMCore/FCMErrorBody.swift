import HeraldMacros

/// An FCM HTTP v1 error body, as Google's APIs return it:
///
/// ```json
/// {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
///   "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
///                "errorCode": "UNREGISTERED"}]}}
/// ```
@MemberwiseInit
public struct FCMErrorBody: Sendable, Hashable, Codable {
    public var error: Status

    /// The `error` object: a `google.rpc.Status`.
    @MemberwiseInit
    public struct Status: Sendable, Hashable, Codable {
        public var code: Int
        public var message: String
        /// The `google.rpc.Code` name (`NOT_FOUND`, `UNAUTHENTICATED`, …).
        public var status: String
        public var details: [Detail]?
    }

    /// One entry of `details`: an `FcmError` with its code, or a `BadRequest` naming fields.
    @MemberwiseInit
    public struct Detail: Sendable, Hashable, Codable {
        public var type: String
        public var errorCode: String?
        public var fieldViolations: [FieldViolation]?

        enum CodingKeys: String, CodingKey {
            case type = "@type"
            case errorCode, fieldViolations
        }
    }

    @MemberwiseInit
    public struct FieldViolation: Sendable, Hashable, Codable {
        public var field: String
        public var description: String
    }

    public static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    public static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    /// The body FCM sends for `code`, with `message` (or the code's usual one) and, for invalid
    /// arguments, the offending field.
    public init(code: FCMErrorCode, message: String? = nil, field: String? = nil) {
        var details = [Detail(type: Self.fcmErrorType, errorCode: code.rawValue)]
        if let field {
            details.append(
                Detail(
                    type: Self.badRequestType,
                    fieldViolations: [FieldViolation(field: field, description: message ?? code.defaultMessage)]
                )
            )
        }
        error = Status(
            code: code.status,
            message: message ?? code.defaultMessage,
            status: code.rpcStatus,
            details: details
        )
    }

    /// The FCM error code, read from `details` (nil when FCM sent none, as for an expired OAuth
    /// token, which is only `UNAUTHENTICATED`).
    public var fcmErrorCode: FCMErrorCode? {
        for detail in error.details ?? [] where detail.type == Self.fcmErrorType {
            if let code = detail.errorCode { return FCMErrorCode(rawValue: code) ?? .unspecifiedError }
        }
        return nil
    }
}
