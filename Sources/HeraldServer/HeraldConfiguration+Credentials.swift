import HeraldPush

extension HeraldConfiguration {
    /// A network named without its credentials is a mistake, never a request for the sandbox: a
    /// production configuration whose key file went missing (an unset HERALD_APNS_KEY, an edited
    /// unit) would otherwise start in sandbox mode and "deliver" every push to it.
    static func refuseNetworksWithoutCredentials(_ file: ConfigurationFile) throws(HeraldServerError) {
        if let apns = file.apns, apns.key == nil, let named = apns.namedSetting {
            throw .configuration(
                "apns names \(named) but no key file (apns.key, --apns-key or HERALD_APNS_KEY): give the .p8 key, or leave APNs out to run the sandbox"
            )
        }
        if let fcm = file.fcm, fcm.serviceAccount == nil, let named = fcm.namedSetting {
            throw .configuration(
                "fcm names \(named) but no service account (fcm.service_account, --fcm-service-account or HERALD_FCM_SERVICE_ACCOUNT): give the account file, or leave FCM out"
            )
        }
    }

    /// Every APNs key and FCM account the file gives: the flags' (named `default`) first, then
    /// `apns_keys` and `fcm_accounts`, each named once and with its file.
    mutating func resolveCredentials(_ file: ConfigurationFile) throws(HeraldServerError) {
        if let apns = file.apns, apns.key != nil {
            var flags = apns
            flags.name = flags.name ?? Self.defaultName
            apnsKeys.append(try Self.resolve(flags, flagNames: true))
        }
        for (index, entry) in (file.apnsKeys ?? []).enumerated() {
            _ = try Self.namedEntry(
                entry.name,
                of: "apns_keys[\(index)]",
                naming: ("key", "APNs keys"),
                file: (entry.key, "the key (.p8 file)"),
                taken: apnsKeys.map(\.name)
            )
            apnsKeys.append(try Self.resolve(entry, flagNames: false))
        }
        if let fcm = file.fcm, let account = fcm.serviceAccount {
            fcmAccounts.append(FCM(serviceAccount: account, url: fcm.url ?? Self.googleFCM, ca: fcm.ca))
        }
        for (index, entry) in (file.fcmAccounts ?? []).enumerated() {
            let (name, account) = try Self.namedEntry(
                entry.name,
                of: "fcm_accounts[\(index)]",
                naming: ("account", "FCM accounts"),
                file: (entry.serviceAccount, "the service_account file"),
                taken: fcmAccounts.map(\.name)
            )
            fcmAccounts.append(FCM(name: name, serviceAccount: account, url: entry.url ?? Self.googleFCM, ca: entry.ca))
        }
        for (index, entry) in (file.vapidKeys ?? []).enumerated() {
            let (name, key) = try Self.namedEntry(
                entry.name,
                of: "vapid_keys[\(index)]",
                naming: ("VAPID key", "VAPID keys"),
                file: (entry.key, "the key (PEM file)"),
                taken: vapidKeys.map(\.name)
            )
            guard let subject = entry.subject, subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
                throw .configuration(
                    "vapid_keys[\(index)] (\(name)): subject must be a mailto: or https: URL push services can reach you at"
                )
            }
            vapidKeys.append(VAPID(name: name, key: key, subject: subject))
        }
        for (index, entry) in (file.hmsApps ?? []).enumerated() {
            let (name, secretFile) = try Self.namedEntry(
                entry.name,
                of: "hms_apps[\(index)]",
                naming: ("Huawei app", "Huawei apps"),
                file: (entry.clientSecretFile, "the client_secret_file"),
                taken: hmsApps.map(\.name)
            )
            guard let appID = entry.appID, !appID.isEmpty else {
                throw .configuration("hms_apps[\(index)] (\(name)): app_id is missing (AppGallery Connect's app id)")
            }
            var app = HMS(name: name, appID: appID, clientSecretFile: secretFile, ca: entry.ca)
            if let url = entry.url { app.url = url }
            if let tokenURL = entry.tokenURL { app.tokenURL = tokenURL }
            hmsApps.append(app)
        }
    }

    /// The name and file of a list's entry (`apns_keys[0]`), checked: a name given (apps name
    /// the one they use), the file given, and the name not given to another entry.
    private static func namedEntry(
        _ name: String?,
        of entry: String,
        naming: (one: String, many: String),
        file: (path: String?, what: String),
        taken: [String]
    ) throws(HeraldServerError) -> (name: String, file: String) {
        guard let name, !name.isEmpty else {
            throw .configuration("\(entry): a name is needed (apps name the \(naming.one) they use)")
        }
        guard let path = file.path else { throw .configuration("\(entry) (\(name)): \(file.what) is missing") }
        guard !taken.contains(name) else {
            throw .configuration("\(entry): the name '\(name)' is given to two \(naming.many)")
        }
        return (name, path)
    }

    /// One APNs key as a layer gives it, checked; `flagNames` words errors after the flags.
    private static func resolve(_ apns: ConfigurationFile.APNs, flagNames: Bool) throws(HeraldServerError) -> APNs {
        let name = apns.name ?? defaultName
        let subject = flagNames ? "" : "apns_keys (\(name)): "
        guard let teamID = apns.teamID else {
            throw .configuration(
                flagNames ? "--apns-team-id is needed with --apns-key" : subject + "team_id is missing"
            )
        }
        let environmentText = apns.environment ?? "development"
        guard let environment = APNsEnvironment(rawValue: environmentText) else {
            throw .configuration(
                flagNames
                    ? "--apns-environment must be development or production"
                    : subject + "environment must be development or production"
            )
        }
        let apple: [APNsEnvironment: String] = [.development: appleDevelopment, .production: appleProduction]
        var urls: [APNsEnvironment: String] = apns.url == nil ? apple : [environment: apns.url!]
        if let url = apns.developmentURL { urls[.development] = url }
        if let url = apns.productionURL { urls[.production] = url }
        var resolved = APNs(
            key: apns.key ?? "",
            keyID: apns.keyID,
            teamID: teamID,
            environment: environment.rawValue,
            url: urls[environment] ?? apple[environment]!,
            ca: apns.ca,
            connections: apns.connections ?? 2,
            requestTimeout: .seconds(apns.requestTimeout ?? 10)
        )
        resolved.name = name
        resolved.urls = urls
        return resolved
    }
}

extension ConfigurationFile.APNs {
    /// The first setting given besides the key, as a configuration names it; nil when none is.
    fileprivate var namedSetting: String? {
        let given: [(String, Bool)] = [
            ("key_id", keyID != nil), ("team_id", teamID != nil), ("environment", environment != nil),
            ("url", url != nil), ("development_url", developmentURL != nil), ("production_url", productionURL != nil),
            ("ca", ca != nil), ("connections", connections != nil), ("request_timeout", requestTimeout != nil),
        ]
        return given.first { $0.1 }.map { "'\($0.0)'" }
    }
}

extension ConfigurationFile.FCM {
    /// The first setting given besides the service account; nil when none is.
    fileprivate var namedSetting: String? {
        let given: [(String, Bool)] = [("url", url != nil), ("ca", ca != nil)]
        return given.first { $0.1 }.map { "'\($0.0)'" }
    }
}
