import Crypto
import DequeModule
import HeraldEncoding

/// A Web Push subscription as the push request rules need it.
struct WebSubscriptionRecord: Equatable, Sendable {
    let deviceID: String
    /// The endpoint minted for it: the device's messaging token.
    let endpoint: String
    /// The application server key (the VAPID public key, 65 bytes) the browser subscribed with:
    /// only tokens signed by it are taken.
    let applicationServerKey: [UInt8]
    var state: TokenState = .active
}

/// What a browser subscribes with: its app's VAPID public key (base64url, as the control API
/// takes it), and the base URL its endpoint is minted under.
struct WebSubscriptionRequest: Sendable {
    var applicationServerKey: String?
    var endpointBase = ""
}

/// What the Web Push emulator asks of the devices.
protocol WebPushDeviceDirectory: Sendable {
    /// The subscription with this id (the last part of its endpoint).
    func webSubscription(id: String) -> WebSubscriptionRecord?
    /// Hands an accepted message to the browser the subscription belongs to, or keeps it until
    /// `keepUntil` (milliseconds since the epoch) while the browser is offline, a kept one with
    /// the same topic replaced; nil keeps nothing. A delivered one reaches the browser at
    /// `handoff.complete()`.
    func deliver(
        _ message: SandboxWebPushMessage,
        subscriptionID: String,
        keepUntil: Int64?
    ) -> (delivery: DeviceDelivery, handoff: DeviceHandoff)
}

extension DeviceRegistry: WebPushDeviceDirectory {
    /// The registry's Web Push part, under its lock: subscriptions by id, and what is kept for
    /// offline browsers.
    struct WebPushDevices {
        var subscriptions: [String: WebSubscriptionRecord] = [:]
        var stored: [String: Deque<StoredWebPush>] = [:]

        /// The subscription whose endpoint is `token`, or whose id it is.
        func record(forToken token: String) -> (id: String, record: WebSubscriptionRecord)? {
            let id = DeviceRegistry.subscriptionID(of: token) ?? token
            return subscriptions[id].map { (id, $0) }
        }

        /// Keeps a message for an offline browser: expired ones go, one with the same topic is
        /// replaced (RFC 8030 §5.4), and beyond the limit the oldest is dropped.
        mutating func store(_ message: StoredWebPush, for deviceID: String, now: Int64) {
            let topic = message.message.topic
            stored[deviceID, default: []].keep(message) {
                $0.expiresAt <= now || (topic != nil && $0.message.topic == topic)
            }
        }

        /// Takes what was kept for a browser and has not expired, oldest first.
        mutating func takeStored(for deviceID: String, now: Int64) -> [SandboxWebPushMessage] {
            (stored.removeValue(forKey: deviceID) ?? []).filter { $0.expiresAt > now }.map(\.message)
        }
    }

    struct StoredWebPush {
        let message: SandboxWebPushMessage
        /// Milliseconds since the epoch.
        let expiresAt: Int64
    }

    /// The id at the end of an endpoint the sandbox minted (`https://…/wp/<id>`).
    static func subscriptionID(of endpoint: String) -> String? {
        guard let range = endpoint.range(of: "/wp/", options: .backwards) else { return nil }
        let id = endpoint[range.upperBound...]
        return id.isEmpty || id.contains("/") ? nil : String(id)
    }

    /// Registers an emulated browser: a subscription for the request's application server key,
    /// whose endpoint under the request's base is its messaging token.
    func registerWebDevice(
        bundleID: String,
        messagingTokenDelay: Duration,
        _ subscription: WebSubscriptionRequest
    ) throws(SandboxError) -> SandboxDevice {
        guard !bundleID.isEmpty else { throw .invalidRequest("bundle_id (the web app's name) must not be empty") }
        guard let text = subscription.applicationServerKey else {
            throw .invalidRequest("application_server_key is required for a web device: the app's VAPID public key")
        }
        guard let key = Self.applicationServerKey(text) else {
            throw .invalidRequest(
                "application_server_key must be an uncompressed P-256 public key (65 bytes) in base64url"
            )
        }
        let now = clock.now
        let id = RandomText.urlSafe(count: 43)
        let endpoint = subscription.endpointBase + "/wp/" + id
        let device = DeviceRecord(
            id: "dev-" + RandomText.hex(bytes: 8),
            bundleID: bundleID,
            platform: .web,
            projectID: nil,
            messagingToken: endpoint,
            voipToken: nil,
            messagingReadyAt: now + messagingTokenDelay,
            voipReadyAt: now
        )
        let view = state.withLock { state in
            state.devices[device.id] = device
            state.web.subscriptions[id] = WebSubscriptionRecord(
                deviceID: device.id,
                endpoint: endpoint,
                applicationServerKey: key
            )
            return state.view(of: device, now: now)
        }
        try save(deviceID: device.id)
        return view
    }

    /// The key of an `application_server_key`: base64url with or without padding, 65 bytes, a
    /// P-256 point.
    static func applicationServerKey(_ text: String) -> [UInt8]? {
        var trimmed = Substring(text)
        while trimmed.hasSuffix("=") { trimmed = trimmed.dropLast() }
        guard let key = Base64URL.decode(trimmed), key.count == 65,
            (try? P256.Signing.PublicKey(x963Representation: key)) != nil
        else { return nil }
        return key
    }

    func webSubscription(id: String) -> WebSubscriptionRecord? {
        state.withLock { $0.web.subscriptions[id] }
    }

    func deliver(
        _ message: SandboxWebPushMessage,
        subscriptionID: String,
        keepUntil: Int64?
    ) -> (delivery: DeviceDelivery, handoff: DeviceHandoff) {
        let now = clock.epochMilliseconds
        let (delivery, connection) = state.withLock { state -> (DeviceDelivery, DeviceConnection?) in
            guard let subscription = state.web.subscriptions[subscriptionID] else { return (.notKept, nil) }
            guard subscription.state == .active else { return (.refused(subscription.state), nil) }
            if let connection = state.connections[subscription.deviceID] { return (.delivered, connection) }
            guard let keepUntil else { return (.notKept, nil) }
            state.web.store(StoredWebPush(message: message, expiresAt: keepUntil), for: subscription.deviceID, now: now)
            return (.stored, nil)
        }
        return (delivery, DeviceHandoff(connection: connection?.events, event: .webPush(message)))
    }
}

extension Deque {
    /// Keeps `element` in a queue for an offline device: those `isGone` (expired, or replaced by
    /// it: the same collapse key or topic) go first, and beyond the registry's limit the oldest.
    mutating func keep(_ element: Element, removing isGone: (Element) -> Bool) {
        removeAll(where: isGone)
        append(element)
        if count > DeviceRegistry.storedMessageLimit { removeFirst(count - DeviceRegistry.storedMessageLimit) }
    }
}
