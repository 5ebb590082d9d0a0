import HeraldProvider
import HeraldPush
import Testing

/// The provider stage routes each push by its key and environment, or its account; what it cannot
/// route fails at once, naming why, without reaching any network.
@Suite(.timeLimit(.minutes(1)))
struct ProviderRoutingTests {
    static func alert(key: String?, environment: APNsEnvironment?) -> Push {
        Push(
            id: "p",
            token: String(repeating: "ab", count: 32),
            payload: .apns(
                APNsPayload(
                    topic: "com.example.chat",
                    type: .alert,
                    priority: .conserve,
                    apnsID: "0190C0DE-0000-7000-8000-000000000001",
                    json: "{}",
                    key: key,
                    environment: environment
                )
            ),
            expiration: nil
        )
    }

    static let android = Push(
        id: "a",
        token: "fcm-token",
        payload: .fcm(FCMPayload(package: "com.example.chat", priority: .high, data: [:], account: "project-x")),
        expiration: nil
    )

    @Test("Web Push and Push Kit pushes on a provider without their senders: failed, saying why")
    func unservedNetworks() async {
        let stage = ProviderStage(apnsKeys: [], fcmAccounts: [:])
        let web = Push(
            id: "w1",
            token: "https://push.example.net/wp/1",
            payload: .webPush(WebPushPayload(app: "com.example.chat", urgency: .high, json: "{}")),
            expiration: nil
        )
        let huawei = Push(
            id: "h1",
            token: "huawei-token-0123456789",
            payload: .hms(HMSPayload(package: "com.example.chat", urgency: .high, data: [:])),
            expiration: nil
        )
        #expect(
            await stage.send([web, huawei]) == [
                .failed(reason: "Web Push is not configured on this provider (no VAPID key)", status: 503),
                .failed(reason: "Push Kit is not configured on this provider (no Huawei app)", status: 503),
            ]
        )
    }

    @Test("an unknown key, a key without the push's environment, several keys and none named: failed, saying which")
    func refusals() async {
        // Keys without clients: nothing here may reach a network.
        let two = ProviderStage(
            apnsKeys: [
                ProviderStage.APNsKey(name: "team-a", environment: .development, clients: [:]),
                ProviderStage.APNsKey(name: "team-b", environment: .production, clients: [:]),
            ],
            fcmAccounts: [:]
        )
        #expect(two.defaultAPNsKey == nil, "several keys, none named default: no default")
        let outcomes = await two.send([
            Self.alert(key: "team-c", environment: nil),
            Self.alert(key: "team-a", environment: .production),
            Self.alert(key: nil, environment: nil),
            Self.android,
        ])
        #expect(
            outcomes == [
                .failed(reason: "no APNs key named 'team-c' is configured on this provider", status: 503),
                .failed(reason: "the APNs key 'team-a' is not configured for the production environment", status: 503),
                .failed(
                    reason: "the push names no APNs key and this provider has several, none the default",
                    status: 503
                ),
                .failed(reason: "FCM is not configured on this provider (no service account)", status: 503),
            ]
        )
        let one = ProviderStage(
            apnsKeys: [ProviderStage.APNsKey(name: "solo", environment: .production, clients: [:])],
            fcmAccounts: [:]
        )
        #expect(one.defaultAPNsKey == "solo", "the only key is the default")
        #expect(
            await one.send([Self.alert(key: nil, environment: nil)]) == [
                .failed(reason: "the APNs key 'solo' is not configured for the production environment", status: 503)
            ],
            "a push naming no environment takes its key's"
        )
    }

    @Test("BadDeviceToken's reason names the environment that refused the token")
    func badDeviceTokenReason() {
        #expect(
            ProviderStage.badDeviceTokenReason(environment: .development)
                == "BadDeviceToken: APNs' development environment does not know this token (a token of the other environment, or not a device token); the token is kept"
        )
    }
}
