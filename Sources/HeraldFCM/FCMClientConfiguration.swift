public import HeraldFCMCore

/// How the FCM sender connects, authenticates and retries; every field but the account has a
/// working default.
public struct FCMClientConfiguration: Sendable {
    /// Google's FCM endpoint.
    public static let googleURL = "https://fcm.googleapis.com"

    /// The service account messages are sent as; its `project_id` names the project and its
    /// `token_uri` the token endpoint.
    public var account: FCMServiceAccount
    /// The base of `/v1/projects/{project}/messages:send`: Google, or the sandbox's FCM URL.
    public var baseURL: String = FCMClientConfiguration.googleURL
    /// A PEM CA file to trust instead of the system roots (the sandbox's).
    public var caCertificatePath: String?
    /// Sends in flight at once; more wait (HTTP/2 multiplexes them over one connection).
    public var maximumConcurrentSends: Int = 256
    /// How long one request may take before it counts as a connection failure.
    public var requestTimeout: Duration = .seconds(10)
    /// An access token is replaced this long before it expires (or at half its life, if shorter).
    public var tokenRefreshMargin: Duration = .seconds(5 * 60)
    /// Attempts per message before `retryLater` is answered (the relay then retries later).
    public var maximumAttempts: Int = 4
    /// Full-jitter backoff between attempts: base × 2^(n-1), capped.
    public var retryBaseDelay: Duration = .milliseconds(100)
    public var retryMaximumDelay: Duration = .seconds(10)

    public init(account: FCMServiceAccount) {
        self.account = account
    }
}
