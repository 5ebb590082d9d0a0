import Crypto
import HeraldAPNs
import HeraldAPNsCore
import HeraldFCM
import HeraldFCMCore
import HeraldHMS
import HeraldHMSCore
import HeraldProvider
import HeraldSandbox
import HeraldWebPush
import HeraldWebPushCore
import Logging

// The stack's senders for each network.
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

    /// An APNs client on the sandbox, trusting its CA, retrying quickly, with tokens signed by `key`
    /// and issued at the sandbox's time (`clock`): the provider and APNs share one wall clock, so
    /// a test that moves the sandbox's clock on ages the tokens too, instead of waiting.
    static func makeAPNs(
        _ settings: APNs,
        _ options: Options,
        _ endpoints: SandboxEndpoints,
        key: P256.Signing.PrivateKey,
        clock: SandboxClock,
        logger: Logger,
        feedback: Feedback<APNsTokenFeedback>
    ) throws -> (client: APNsClient, tokens: ProviderTokenManager) {
        var configuration = try APNsClientConfiguration(url: endpoints.apnsURL)
        configuration.caCertificatePath = endpoints.caCertificatePath
        configuration.serverHostname = "localhost"
        configuration.retryBaseDelay = .milliseconds(5)
        configuration.retryMaximumDelay = .milliseconds(20)
        settings.client(&configuration)
        let tokens = ProviderTokenManager(
            signer: ProviderTokenSigner(privateKey: key, keyID: options.keyID, teamID: options.teamID),
            refreshAfter: settings.refreshAfter,
            minimumInterval: settings.minimumInterval,
            wallClock: SandboxWallClock(sandbox: clock)
        )
        let client = try APNsClient(configuration: configuration, tokens: tokens, logger: logger) {
            feedback.record($0)
        }
        return (client, tokens)
    }

    /// An FCM sender on the sandbox (its token endpoint too), trusting its CA, retrying quickly.
    static func makeFCM(
        _ settings: FCM,
        _ options: Options,
        _ endpoints: SandboxEndpoints,
        logger: Logger,
        feedback: Feedback<FCMTokenFeedback>
    ) throws -> FCMClient {
        var account = settings.account ?? options.fcmAccount
        account.tokenURI = endpoints.tokenURL
        var configuration = FCMClientConfiguration(account: account)
        configuration.baseURL = endpoints.fcmURL
        configuration.caCertificatePath = endpoints.caCertificatePath
        configuration.retryBaseDelay = .milliseconds(5)
        configuration.retryMaximumDelay = .milliseconds(20)
        settings.client(&configuration)
        return try FCMClient(configuration: configuration, logger: logger) { feedback.record($0) }
    }
}
