import AsyncHTTPClient
import Foundation
import HeraldCrypto
public import HeraldDomain
public import HeraldPush
import HeraldRelayAPI
import Logging
import Synchronization

/// How an emulated phone behaves.
public struct PhoneConfiguration: Sendable {
    /// The relay's base URL (`http://127.0.0.1:8080`).
    public var relayURL: String
    /// The sandbox's control URL (`http://127.0.0.1:2198`).
    public var sandboxURL: String
    /// What the app's backend login stands for: the relay's API key, used for the activation.
    public var apiKey: String
    public var userID: String
    /// The bundle id (iOS) or package name (Android).
    public var bundleID: String
    /// iOS (APNs: messaging and VoIP tokens, the extension, PushKit and CallKit) or Android (one
    /// FCM token, data messages opened by the app's messaging service, an incoming-call screen).
    public var platform: DevicePlatform = .ios
    /// The app-group container.
    public var storeDirectory: String
    /// How long iOS takes to hand out each token (the sandbox holds them back this long).
    public var messagingTokenDelay: Duration = .zero
    public var voipTokenDelay: Duration = .zero
    /// After this long without any token, push is reported "not available" again.
    public var tokenTimeout: Duration = .seconds(10)
    /// The extension's time budget (iOS: 30 s) and any extra time it takes.
    public var extensionBudget: Duration = .seconds(30)
    public var extensionDelay: Duration = .zero
    /// Unreported VoIP pushes before PushKit stops delivering them.
    public var violationLimit: Int = 3
    /// Whether the app's PushKit handler reports calls to CallKit (a broken app does not).
    public var reportsCalls: Bool = true
    /// Where the notification center's log goes, as JSON lines (title, body, thread, time).
    public var notificationLogPath: String?
    /// How many shown pushes the app-group store remembers, so that a push the relay sends
    /// again (at least once, after a crash) is dropped instead of shown twice; 0 remembers none.
    /// Default `AppGroupStore.defaultRememberedPushes` (1,000).
    public var rememberedPushes: Int = AppGroupStore.defaultRememberedPushes
    /// What the user picks when a callback's dialog is shown (`--callbacks`); nil shows the
    /// dialog and answers nothing.
    public var callbackChoice: CallbackChoice?
    /// The app's clock for its timers (the presence heartbeat). Real time by default; tests and
    /// simulations pass the clock the relay shares, so thirty seconds pass when they say.
    public var clock: any HeraldClock = WallClock()
    /// The notification permission the user gave (`herald device --notifications`); nil: the app
    /// has not asked, and reports nothing (the relay assumes granted).
    public var notificationPermission: NotificationPermission?
    /// iOS: the APNs environment of the build (`herald device --environment`): a debug build's
    /// tokens are `development`, a TestFlight or App Store build's `production`. The sandbox
    /// issues tokens of it and the activation names it; nil leaves both to their defaults.
    public var apnsEnvironment: APNsEnvironment?

    public init(
        relayURL: String,
        sandboxURL: String,
        apiKey: String,
        userID: String,
        bundleID: String,
        storeDirectory: String
    ) {
        self.relayURL = relayURL
        self.sandboxURL = sandboxURL
        self.apiKey = apiKey
        self.userID = userID
        self.bundleID = bundleID
        self.storeDirectory = storeDirectory
    }
}
