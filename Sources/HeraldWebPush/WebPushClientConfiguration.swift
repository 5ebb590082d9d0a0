public import HeraldWebPushCore

/// How the Web Push sender signs, connects and bounds its sends; every field but the keys has a
/// working default.
public struct WebPushClientConfiguration: Sendable {
    /// The VAPID signers by key name: the key named after an app signs that app's pushes,
    /// `default` every other app's (a push may also name its key).
    public var signers: [String: VAPIDSigner]
    /// A PEM CA file to trust instead of the system roots (the sandbox's push service).
    public var caCertificatePath: String?
    /// Whether an endpoint may be a loopback or private address: only for the sandbox. A
    /// subscription is a URL the provider posts to, so production refuses them here too.
    public var allowPrivateEndpoints = false
    /// Sends in flight at once; more wait.
    public var maximumConcurrentSends: Int = 256
    /// How long one request may take.
    public var requestTimeout: Duration = .seconds(10)
    /// The TTL of a push without an expiration: four weeks, the most push services keep one.
    public var defaultTTL: Int = WebPushRequest.maxTTL

    public init(signers: [String: VAPIDSigner]) {
        self.signers = signers
    }

    /// The signer of a push for `app` that names `key`: the key named, else the app's, else the
    /// default.
    func signer(app: String, key: String?) -> VAPIDSigner? {
        if let key { return signers[key] }
        return signers[app] ?? signers["default"]
    }
}
