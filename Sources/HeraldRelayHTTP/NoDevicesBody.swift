import HeraldHTTPSupport
import HeraldRelay
import Hummingbird

/// The 409 `no_devices` answer: the usual error body, naming the user the message was for (for a
/// contact-center adapter, the user its customer was mapped to), so the sender knows whose phone
/// to wait for before it sends again.
struct NoDevicesBody: Encodable {
    var error: String
    var reason: String
    var user: String

    static func answer(_ refusal: RelayError, user: String) -> Response {
        let body = NoDevicesBody(error: refusal.identifier, reason: refusal.detail, user: user)
        // Three strings: encoding cannot fail; the plain error body if it ever did.
        return (try? JSONResponse.make(refusal.status, body))
            ?? JSONResponse.error(refusal.status, refusal.identifier, reason: refusal.detail)
    }
}
