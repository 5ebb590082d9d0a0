/// The error codes FCM HTTP v1 returns in the `details` of an error body
/// (`type.googleapis.com/google.firebase.fcm.v1.FcmError`), with the HTTP status and the
/// `google.rpc` status FCM sends each with.
public enum FCMErrorCode: String, Sendable, Hashable, Codable, CaseIterable {
    case unspecifiedError = "UNSPECIFIED_ERROR"
    /// A field of the request is invalid (token format, data too big, reserved key, bad ttl …).
    case invalidArgument = "INVALID_ARGUMENT"
    /// The token is no longer valid: the app was uninstalled or the token expired.
    case unregistered = "UNREGISTERED"
    /// The token belongs to another Firebase project.
    case senderIDMismatch = "SENDER_ID_MISMATCH"
    /// The project's, or the device's, sending rate was exceeded.
    case quotaExceeded = "QUOTA_EXCEEDED"
    /// FCM is overloaded.
    case unavailable = "UNAVAILABLE"
    /// An unknown internal error.
    case `internal` = "INTERNAL"
    /// The APNs certificate or web push auth key behind the project is invalid or missing.
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"

    /// The HTTP status FCM answers this code with.
    public var status: Int {
        switch self {
        case .unspecifiedError, .invalidArgument: 400
        case .unregistered: 404
        case .senderIDMismatch: 403
        case .quotaExceeded: 429
        case .unavailable: 503
        case .internal: 500
        case .thirdPartyAuthError: 401
        }
    }

    /// The `google.rpc.Code` name in the error body's `status`.
    public var rpcStatus: String {
        switch self {
        case .unspecifiedError, .invalidArgument: "INVALID_ARGUMENT"
        case .unregistered: "NOT_FOUND"
        case .senderIDMismatch: "PERMISSION_DENIED"
        case .quotaExceeded: "RESOURCE_EXHAUSTED"
        case .unavailable: "UNAVAILABLE"
        case .internal: "INTERNAL"
        case .thirdPartyAuthError: "UNAUTHENTICATED"
        }
    }

    /// The `message` FCM sends with this code when nothing more specific applies.
    public var defaultMessage: String {
        switch self {
        case .unspecifiedError: "Unspecified error."
        case .invalidArgument: "Request contains an invalid argument."
        case .unregistered: "Requested entity was not found."
        case .senderIDMismatch: "SenderId mismatch"
        case .quotaExceeded: "Quota exceeded for quota metric 'Send requests'."
        case .unavailable: "The service is currently unavailable."
        case .internal: "Internal error encountered."
        case .thirdPartyAuthError: "Auth error from APNS or Web Push Service"
        }
    }
}
