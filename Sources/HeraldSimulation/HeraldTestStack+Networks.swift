import HeraldHMS
import HeraldHMSCore
import HeraldProvider
import HeraldSandbox
import HeraldWebPush
import HeraldWebPushCore
import Logging

// The stack's senders for the networks beyond APNs and FCM.
extension HeraldTestStack {
    /// A Push Kit sender as the stack's Huawei app, trusting the sandbox's CA, retrying quickly.
    static func makeHMS(_ settings: HMS, _ endpoints: SandboxEndpoints, logger: Logger) throws -> HMSClient {
        var configuration = HMSClientConfiguration(
            credentials: HMSAppCredentials(
                appID: settings.appID,
                clientSecret: settings.clientSecret,
                tokenURL: endpoints.hmsTokenURL
            )
        )
        configuration.baseURL = endpoints.hmsURL
        configuration.caCertificatePath = endpoints.caCertificatePath
        configuration.retryBaseDelay = .milliseconds(10)
        configuration.retryMaximumDelay = .milliseconds(200)
        settings.client(&configuration)
        return try HMSClient(configuration: configuration, logger: logger)
    }

    /// A Web Push sender trusting the sandbox's CA and posting to its loopback endpoints, signing
    /// with `key`.
    static func makeWebPush(
        _ settings: WebPush,
        _ endpoints: SandboxEndpoints,
        key: VAPIDKey,
        logger: Logger
    ) throws -> WebPushClient {
        var configuration = WebPushClientConfiguration(
            signers: [ProviderStage.defaultName: try VAPIDSigner(key: key, subject: settings.subject)]
        )
        configuration.caCertificatePath = endpoints.caCertificatePath
        configuration.allowPrivateEndpoints = true
        settings.client(&configuration)
        return WebPushClient(configuration: configuration, logger: logger)
    }
}
