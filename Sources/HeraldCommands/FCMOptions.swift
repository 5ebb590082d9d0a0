import ArgumentParser
import HeraldFCM
import HeraldFCMCore
import HeraldServer
import Logging
import NIOCore

/// Options for the FCM sender: a service account and where FCM is.
struct FCMOptions: ParsableArguments {
    @Option(
        name: .customLong("fcm-service-account"),
        help:
            "A Google service-account JSON file; without it Android pushes are not sent (serve: made for the sandbox). (HERALD_FCM_SERVICE_ACCOUNT)"
    )
    var serviceAccount: String?

    @Option(
        name: .customLong("fcm-url"),
        help: "Another FCM endpoint, such as the local sandbox (https://127.0.0.1:2196). (HERALD_FCM_URL)"
    )
    var url: String?

    @Option(
        name: .customLong("fcm-ca"),
        help: "A CA certificate (PEM) to trust for --fcm-url and the token URI. (HERALD_FCM_CA)"
    )
    var caFile: String?

    func validate() throws {
        if serviceAccount == nil, url != nil || caFile != nil {
            throw ValidationError("--fcm-url and --fcm-ca need --fcm-service-account")
        }
    }

    /// What these flags set, as a configuration layer.
    var layer: ConfigurationFile.FCM? {
        var fcm = ConfigurationFile.FCM()
        fcm.serviceAccount = serviceAccount
        fcm.url = url
        fcm.ca = caFile
        return fcm == ConfigurationFile.FCM() ? nil : fcm
    }
}
