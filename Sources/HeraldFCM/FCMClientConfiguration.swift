public import HeraldClientSupport
public import HeraldFCMCore

/// How the FCM sender connects, authenticates and retries; every field but the account has a
/// working default. The transport's fields (`caCertificatePath`, `maximumConcurrentSends`,
/// `requestTimeout`, `tokenRefreshMargin`, `maximumAttempts`, `retryBaseDelay`,
/// `retryMaximumDelay`) are `tuning`'s, read and set as this type's own.
public struct FCMClientConfiguration: PushSenderConfiguration {
    /// Google's FCM endpoint.
    public static let googleURL = "https://fcm.googleapis.com"

    /// The service account messages are sent as; its `project_id` names the project and its
    /// `token_uri` the token endpoint.
    public var account: FCMServiceAccount
    /// The base of `/v1/projects/{project}/messages:send`: Google, or the sandbox's FCM URL.
    public var baseURL: String = FCMClientConfiguration.googleURL
    /// The CA, fan-out width, timeouts, token refresh margin, attempts and backoff.
    public var tuning = PushSenderTuning()

    public init(account: FCMServiceAccount) {
        self.account = account
    }
}
