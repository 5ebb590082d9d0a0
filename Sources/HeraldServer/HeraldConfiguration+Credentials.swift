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
