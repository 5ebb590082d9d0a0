public import HeraldAPNsCore

/// The sandbox's parts, composed for the listeners and the control API, and usable in-process
/// as tests do.
///
/// Each part has its own state behind its own lock: the `DeviceRegistry` (apps, devices and
/// tokens, device connections, what is kept for offline devices), the `APNsEmulator` (provider
/// keys and tokens, the APNs rules, APNs faults), the `FCMEmulator` with its
/// `FCMTokenEndpoint` (service accounts, access tokens, the `messages:send` rules, FCM faults),
/// the `WebPushEmulator` (VAPID and RFC 8030 rules, Web Push faults), and one `InspectionLog`
/// per push service. The emulators reach the registry only through `APNsDeviceDirectory`,
/// `FCMDeviceDirectory` and `WebPushDeviceDirectory`.
public final class SandboxCore: Sendable {
    let configuration: SandboxConfiguration
    let devices: DeviceRegistry
    let apns: APNsEmulator
    let fcm: FCMEmulator
    let hms: HMSEmulator
    let webPush: WebPushEmulator

    /// A sandbox with the configuration's apps, keys and service accounts registered.
    public init(configuration: SandboxConfiguration) throws {
        self.configuration = configuration
        devices = DeviceRegistry(
            apps: configuration.apps,
            clock: configuration.clock,
            file: configuration.registryFile
        )
        try devices.load()
        apns = try APNsEmulator(
            configuration: configuration,
            devices: devices,
            log: InspectionLog(capacity: configuration.inspectionCapacity)
        )
        fcm = try FCMEmulator(
            configuration: configuration,
            devices: devices,
            log: InspectionLog(capacity: configuration.inspectionCapacity)
        )
        hms = try HMSEmulator(configuration: configuration, devices: devices)
        webPush = WebPushEmulator(
            configuration: configuration,
            devices: devices,
            log: InspectionLog(capacity: configuration.inspectionCapacity)
        )
    }

    // MARK: - Apps and keys

    /// Registers (or re-registers) an app.
    public func register(app: SandboxApp) throws(SandboxError) {
        try devices.register(app: app)
    }

    /// Registers (or replaces) a provider key; its PEM must be a P-256 public key.
    public func register(key: SandboxKey) throws(SandboxError) {
        try apns.register(key: key)
    }

    /// Revokes a key: tokens it signed get 403 Forbidden from now on.
    public func revoke(keyID: String) throws(SandboxError) {
        try apns.revoke(keyID: keyID)
    }

    /// The registered apps.
    public var apps: [SandboxApp] { devices.apps }

    // MARK: - Devices and tokens

    /// Registers an emulated device and issues its tokens, which the device receives after the
    /// given delays (to exercise late-token handling).
    ///
    /// An iOS device is for a registered app (`bundleID`) and gets an APNs messaging token and a
    /// VoIP token. An Android device gets one FCM registration token (its messaging token) for
    /// `projectID`, which defaults to the project of the registered service accounts when they
    /// all share one; `bundleID` is then its package name and needs no registration. A Huawei
    /// device gets one Push Kit token for the Huawei app `projectID` (the one registered app
    /// when nil). A web device (a browser) gets a Web Push subscription for
    /// `applicationServerKey` (the app's VAPID public key, base64url), whose endpoint is its
    /// messaging token.
    public func registerDevice(
        bundleID: String,
        messagingTokenDelay: Duration = .zero,
        voipTokenDelay: Duration = .zero,
        platform: SandboxPlatform = .ios,
        projectID: String? = nil,
        apnsEnvironment: APNsEnvironment? = nil,
        applicationServerKey: String? = nil
    ) throws(SandboxError) -> SandboxDevice {
        try devices.registerDevice(
            bundleID: bundleID,
            messagingTokenDelay: messagingTokenDelay,
            voipTokenDelay: voipTokenDelay,
            platform: platform,
            projectID: projectID,
            apnsEnvironment: apnsEnvironment,
            serviceAccountProjects: fcm.tokenEndpoint.projects,
            hmsApps: hms.tokenEndpoint.appIDs,
            subscription: .init(applicationServerKey: applicationServerKey, endpointBase: webPush.endpointBase)
        )
    }

    /// A device as the control API shows it: tokens appear only once their delay has passed.
    public func device(id: String) throws(SandboxError) -> SandboxDevice {
        try devices.device(id: id)
    }

    /// Uninstalls the app from a device: its tokens answer 410 Unregistered (APNs, with this
    /// moment as the timestamp) or 404 UNREGISTERED (FCM) from now on, and its connection and
    /// stored notifications go.
    public func uninstall(deviceID: String) throws(SandboxError) {
        try devices.uninstall(deviceID: deviceID)
    }

    /// Marks one token expired: APNs pushes to it answer 410 ExpiredToken, FCM sends 404
    /// UNREGISTERED.
    public func expire(token: String) throws(SandboxError) {
        try devices.expire(token: token)
    }

    /// Throws unless the device exists and its app is installed: checked before a WebSocket
    /// upgrade, so a refusal is an HTTP answer and not a socket that closes at once.
    public func checkConnectable(deviceID: String) throws(SandboxError) {
        try devices.checkConnectable(deviceID: deviceID)
    }

    /// Opens the device's connection: the returned stream yields its tokens as they become
    /// available, the notification (iOS) or FCM messages (Android) stored while it was offline,
    /// then every new one, in order. A second connection for the same device replaces the first.
    public func connect(deviceID: String) throws(SandboxError) -> AsyncStream<SandboxDeviceEvent> {
        try devices.connect(deviceID: deviceID)
    }

    // MARK: - APNs

    /// Applies every APNs rule to one request: answers, records it in the inspection log, and
    /// delivers or stores an accepted notification.
    public func handle(_ request: SandboxAPNsRequest, connection: inout SandboxConnectionState) -> SandboxAPNsOutcome {
        apns.handle(request, connection: &connection)
    }

    /// How many provider tokens have been parsed and checked (not served from the cache).
    public var providerTokenVerifications: Int { apns.providerTokenVerifications }

    /// Per team and key: how many distinct provider tokens were taken up, and how many new ones
    /// were refused as TooManyProviderTokenUpdates (`GET /sandbox/apns/provider-tokens`).
    public var providerTokenCounts: [SandboxProviderTokenCount] { apns.providerTokenCounts }

    // MARK: - Faults

    /// Queues a fault for the next matching requests.
    public func inject(_ fault: SandboxFault) throws(SandboxError) {
        try apns.inject(fault)
    }

    /// Adds latency to every answer (APNs, FCM, Push Kit) from now on; `.zero` removes it.
    public func setLatency(_ latency: Duration) {
        apns.setLatency(latency)
        fcm.setLatency(latency)
        hms.setLatency(latency)
        webPush.setLatency(latency)
    }

    /// Removes every queued fault (APNs, FCM, Web Push, Push Kit) and the latency.
    public func clearFaults() {
        apns.clearFaults()
        fcm.clearFaults()
        hms.clearFaults()
        webPush.clearFaults()
    }

    // MARK: - Inspection

    /// The inspection log, oldest first, optionally only for one device token.
    public func inspection(token: String? = nil, limit: Int? = nil) -> [SandboxInspectionRecord] {
        let token = token?.lowercased()
        return apns.log.records(where: token.map { token in { $0.token == token } }, limit: limit)
    }

    /// Forgets the inspection log.
    public func clearInspection() {
        apns.log.removeAll()
    }

    /// Every inspection record made from now on, as it is made. For tests: a signal to wait on.
    public func inspectionUpdates() -> AsyncStream<SandboxInspectionRecord> {
        apns.log.updates()
    }

    // MARK: - FCM

    /// Registers (or replaces) a service account; its PEM must be an RSA public key. Access
    /// tokens already issued stay valid.
    public func register(serviceAccount: SandboxServiceAccount) throws(SandboxError) {
        try fcm.tokenEndpoint.register(serviceAccount: serviceAccount)
    }

    /// The registered service accounts.
    public var serviceAccounts: [SandboxServiceAccount] { fcm.tokenEndpoint.serviceAccounts }

    /// How many access tokens the token endpoint has granted: a sender that caches its token
    /// makes one grant, not one per message.
    public var fcmAccessTokenGrants: Int { fcm.tokenEndpoint.grants }

    /// Makes every access token issued so far expired: sends with one get 401 UNAUTHENTICATED.
    public func expireAccessTokens() {
        fcm.tokenEndpoint.expireAccessTokens()
    }

    /// Queues an FCM fault for the next matching `messages:send` requests.
    public func inject(fcmFault fault: SandboxFCMFault) throws(SandboxError) {
        try fcm.inject(fault)
    }

    /// The FCM inspection log (sends and token requests), oldest first, optionally only the sends
    /// to one registration token, and only the last `limit`.
    public func fcmInspection(token: String? = nil, limit: Int? = nil) -> [SandboxFCMInspectionRecord] {
        fcm.log.records(where: token.map { token in { $0.token == token } }, limit: limit)
    }

    /// Every FCM inspection record made from now on, as it is made. For tests: a signal to wait on.
    public func fcmInspectionUpdates() -> AsyncStream<SandboxFCMInspectionRecord> {
        fcm.log.updates()
    }

    // MARK: - Shutdown

    /// From now on every request gets 503: Shutdown (APNs), UNAVAILABLE (FCM).
    func beginShutdown() {
        apns.beginShutdown()
        fcm.beginShutdown()
        hms.beginShutdown()
        webPush.beginShutdown()
    }

    /// Ends every device connection and inspection stream.
    func finishStreams() {
        devices.disconnectAll()
        apns.log.finishUpdates()
        fcm.log.finishUpdates()
        hms.log.finishUpdates()
        webPush.log.finishUpdates()
    }
}
