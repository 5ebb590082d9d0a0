import AsyncHTTPClient
import Foundation
import HeraldCrypto
import HeraldDomain
import HeraldPush
import HeraldRelayAPI
import Logging
import Synchronization

/// The vendor SDK's user session (the analog of `CSUser`): created with the tokens it has, never
/// changing them while started. Starting it activates the device at the relay the first time,
/// and sends its tokens afterwards.
public final class SDKSession: Sendable {
    public let tokens: AppGroupStore.Tokens
    /// 1 for the first session of a launch, 2 for the next, …
    public let number: Int
    private let started = Mutex(false)

    init(tokens: AppGroupStore.Tokens, number: Int) {
        self.tokens = tokens
        self.number = number
    }

    public var isStarted: Bool { started.withLock { $0 } }

    func start(phone: EmulatedPhone) async throws {
        let configuration = phone.configuration
        // A browser's messaging token is its subscription's endpoint; the relay takes the whole
        // subscription (endpoint and keys) in its place.
        let web = configuration.platform == .web
        let subscription = try web ? tokens.messaging.map(phone.subscription(endpoint:)) : nil
        let messagingToken = web ? nil : tokens.messaging
        if let registration = phone.store.registration(), let credential = phone.store.credential() {
            if !tokens.isEmpty {
                _ = try await phone.http.updateTokens(
                    relay: configuration.relayURL,
                    deviceID: registration.deviceID,
                    TokenUpdateRequest(
                        messagingToken: messagingToken,
                        voipToken: tokens.voip,
                        subscription: subscription
                    ),
                    credential: credential
                )
                phone.timeline.record("sdk", "relay", "tokens sent", detail: tokens.summary)
            }
        } else if !web || subscription != nil {
            // A browser activates once `pushManager.subscribe` has given its subscription: the
            // relay keeps a web device's subscription with the device, never apart from it.
            let keys = KeyPair.generate()
            let activation = try await phone.http.activate(
                relay: configuration.relayURL,
                ActivationRequest(
                    userID: configuration.userID,
                    app: configuration.bundleID,
                    platform: configuration.platform,
                    publicKey: keys.publicKey.base64,
                    messagingToken: messagingToken,
                    voipToken: tokens.voip,
                    apnsEnvironment: configuration.platform == .ios ? configuration.apnsEnvironment : nil,
                    subscription: subscription
                ),
                bearer: configuration.apiKey
            )
            try phone.store.adopt(activation, keys: keys)
            try phone.store.save(
                AppGroupStore.Registration(
                    deviceID: activation.deviceID,
                    userID: activation.userID,
                    app: activation.app,
                    relayURL: configuration.relayURL,
                    keyID: activation.keyID,
                    previousKeyID: nil,
                    contentPolicy: activation.contentPolicy
                )
            )
            phone.timeline.record(
                "sdk",
                "relay",
                "activated (key agreement)",
                detail: "device \(activation.deviceID), key id \(activation.keyID), \(tokens.summary)"
            )
        }
        started.withLock { $0 = true }
        phone.timeline.record("app", "sdk", "session \(number) started", detail: tokens.summary)
    }

    func stop(phone: EmulatedPhone) {
        started.withLock { $0 = false }
        phone.timeline.record("app", "sdk", "session \(number) stopped")
    }
}
