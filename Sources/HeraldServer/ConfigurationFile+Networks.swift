// The configuration file's entries for the networks beyond APNs and FCM.

extension ConfigurationFile {
    /// A Huawei app: `hms_apps[i]`.
    public struct HMS: Sendable, Codable, Hashable {
        /// The name apps' pushes are routed by: the Android package, or `default`.
        public var name: String?
        /// The app id from AppGallery Connect (also the OAuth client id).
        public var appID: String?
        /// A file holding the app's client secret (only the secret, mode 0600).
        public var clientSecretFile: String?
        /// Push Kit's URL and the token URL (Huawei's when absent), and a CA to trust instead of
        /// the system roots.
        public var url: String?
        public var tokenURL: String?
        public var ca: String?

        enum CodingKeys: String, CodingKey {
            case name
            case appID = "app_id"
            case clientSecretFile = "client_secret_file"
            case url
            case tokenURL = "token_url"
            case ca
        }
    }

    /// A VAPID key: `vapid_keys[i]`.
    public struct VAPID: Sendable, Codable, Hashable {
        /// An app's id, or `default`.
        public var name: String?
        /// The key's PEM file (`herald keys vapid`).
        public var key: String?
        /// The `sub` claim push services reach the operator by: a `mailto:` or `https:` URL.
        public var subject: String?
    }
}
