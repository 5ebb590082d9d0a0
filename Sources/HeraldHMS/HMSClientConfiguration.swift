public import HeraldClientSupport
public import HeraldHMSCore

/// How the Push Kit sender reaches Huawei and as which app. Every field but the credentials has a
/// working default; the transport's (`caCertificatePath`, `maximumConcurrentSends`,
/// `requestTimeout`, `tokenRefreshMargin`, `maximumAttempts`, `retryBaseDelay`,
/// `retryMaximumDelay`) are `tuning`'s, the FCM sender's too, read and set as this type's own.
public struct HMSClientConfiguration: PushSenderConfiguration {
    /// The app messages are sent as: its id names `/v1/{appId}/messages:send`, its client
    /// secret gets the access tokens at its token URL.
    public var credentials: HMSAppCredentials
    /// Huawei's Push Kit endpoint (`https://push-api.cloud.huawei.com`), or the sandbox's Push Kit
    /// URL: the base of `/v1/{appId}/messages:send`.
    public var baseURL = "https://push-api.cloud.huawei.com"
    /// `android.category` of HIGH-urgency messages: Huawei delivers a high-urgency data message
    /// only in a scenario it granted the app (`VOIP`, `IM`…); nil sends none.
    public var highUrgencyCategory: String?
    /// The CA, fan-out width, timeouts, token refresh margin, attempts and backoff.
    public var tuning = PushSenderTuning()

    public init(credentials: HMSAppCredentials) {
        self.credentials = credentials
    }
}
