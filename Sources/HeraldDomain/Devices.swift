// The vocabulary of devices and apps: platforms, presence, permission and the policies an app
// chooses.

/// The phone's operating system, which decides the push network.
public enum DevicePlatform: String, Sendable, Hashable, Codable, CaseIterable {
    case ios
    case android
    /// A browser, through Web Push.
    case web
    /// An Android device without Google's services, through Huawei Push Kit.
    case huawei
}

/// Whether an app is on screen.
public enum PresenceState: String, Sendable, Hashable, Codable, CaseIterable {
    case active
    case background
}

/// What the lock screen may learn from a messaging push, per app.
public enum ContentPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Sender and text sealed in the push.
    case full
    /// Only the sender sealed; the app fetches the text by id.
    case senderOnly = "sender_only"
    /// Nothing but ids; the app fetches the message by id after a tap.
    case none
}

/// Whose presence keeps a messaging push from a device (docs/relay.md, "Push options").
public enum PresencePolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// A device active in the conversation is not pushed; the user's other devices are.
    case perDevice = "per_device"
    /// Any of the user's devices active in the conversation keeps the push from all of them
    /// (a customer reading on the tablet does not get the phone buzzing).
    case perUser = "per_user"
}

/// How the queue orders an app's message pushes behind the calls (docs/relay.md, "Queue order").
public enum QueueOrder: String, Sendable, Hashable, Codable, CaseIterable {
    /// The longest in the queue first.
    case queueTime = "queue_time"
    /// The customer who has waited longest for the agent first (seed 000: at peak, the
    /// conversations with the longest agent response delay are pushed first).
    case customerWait = "customer_wait"
}

/// What the relay does with a message for a user without an activated device (docs/relay.md,
/// "A message to nobody").
public enum Undeliverable: String, Sendable, Hashable, Codable, CaseIterable {
    /// Refused (409 `no_devices`), nothing written, its idempotency key unused: the sender
    /// retries once the user's phone activated.
    case refuse
    /// Accepted and held for a while; pushed when a device of the user activates.
    case hold
}
