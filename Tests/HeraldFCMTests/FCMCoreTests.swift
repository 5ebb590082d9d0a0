import CryptoExtras
import Foundation
import HeraldFCMCore
import Testing

@testable import HeraldFCM

@Suite("FCM protocol facts", .timeLimit(.minutes(1)))
struct FCMCoreTests {
    static let account = try! FCMServiceAccount.generate(projectID: "herald-test", tokenURI: "https://t.example/token")

    @Test("an assertion carries the account's claims and verifies with its public key only")
    func assertionSignsAndVerifies() throws {
        let (account, publicPEM) = Self.account
        let signer = try FCMAssertionSigner(account: account)
        let text = try signer.assertion(issuedAt: 1_700_000_000)
        let parsed = try #require(FCMAssertion(text))
        #expect(parsed.keyID == account.privateKeyID)
        // Google's form: 40 lowercase hex digits.
        #expect(account.privateKeyID.utf8.count == 40)
        #expect(account.privateKeyID.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(parsed.issuer == account.clientEmail)
        #expect(parsed.scope == FCMServiceAccount.messagingScope)
        #expect(parsed.audience == "https://t.example/token")
        #expect(parsed.issuedAt == 1_700_000_000)
        #expect(parsed.expiresAt == 1_700_003_600)
        #expect(parsed.isSigned(by: try _RSA.Signing.PublicKey(pemRepresentation: publicPEM)))

        let other = try FCMServiceAccount.generate(projectID: "herald-test", tokenURI: "https://t.example/token")
        #expect(!parsed.isSigned(by: try _RSA.Signing.PublicKey(pemRepresentation: other.publicKeyPEM)))

        // A changed claim breaks the signature.
        var parts = text.split(separator: ".").map(String.init)
        let claims = try #require(Data(base64Encoded: Self.padded(parts[1])))
        let forged = String(decoding: claims, as: UTF8.self).replacingOccurrences(of: "1700003600", with: "1700099999")
        parts[1] = Data(forged.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let tampered = try #require(FCMAssertion(parts.joined(separator: ".")))
        #expect(tampered.expiresAt == 1_700_099_999)
        #expect(!tampered.isSigned(by: try _RSA.Signing.PublicKey(pemRepresentation: publicPEM)))
        #expect(FCMAssertion("not.a.jwt") == nil)
    }

    @Test("a service-account file round-trips in Google's field names and is checked on load")
    func serviceAccountFile() throws {
        let (account, _) = Self.account
        let data = try JSONEncoder().encode(account)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for key in ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"] {
            #expect(object[key] is String, "missing \(key)")
        }
        #expect((object["private_key"] as? String)?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
        let path = NSTemporaryDirectory() + "herald-fcm-account-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try data.write(to: URL(filePath: path))
        #expect(try FCMServiceAccount.load(path: path) == account)

        var broken = account
        broken.privateKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        try JSONEncoder().encode(broken).write(to: URL(filePath: path))
        #expect(throws: FCMCoreError.self) { try FCMServiceAccount.load(path: path) }
        try Data("{}".utf8).write(to: URL(filePath: path))
        #expect(throws: FCMCoreError.self) { try FCMServiceAccount.load(path: path) }
    }

    @Test("messages are checked against FCM's rules")
    func validation() throws {
        let token = "cXx1:APA91b" + String(repeating: "A", count: 130)
        var message = FCMMessage(token: token, data: ["kind": "message"], android: .init(priority: .high, ttl: "3600s"))
        try message.validate()

        func field(_ change: (inout FCMMessage) -> Void) -> String? {
            var copy = message
            change(&copy)
            do {
                try copy.validate()
                return nil
            } catch {
                return error.field
            }
        }
        #expect(field { $0.data = ["sealed": String(repeating: "x", count: 4091)] } == "message.data")
        #expect(field { $0.data = ["from": "x"] } == "message.data")
        #expect(field { $0.data = ["google.c.a": "x"] } == "message.data")
        #expect(field { $0.android?.ttl = "3600" } == "message.android.ttl")
        #expect(field { $0.android?.ttl = "2419201s" } == "message.android.ttl")
        #expect(field { $0.topic = "news" } == "message")
        #expect(field { $0.token = "bad token!" } == "message.token")
        #expect(field { $0.android?.ttl = "0.5s" } == nil)
        message.data = ["k": String(repeating: "x", count: 4095)]
        try message.validate()  // exactly 4096 bytes of keys and values
        #expect(FCMMessage.seconds(ttl: "86400s") == 86400)
        #expect(FCMMessage.seconds(ttl: "1.000000001s") == 1)
        #expect(FCMMessage.seconds(ttl: "-1s") == nil)
    }

    @Test("the FCM error code is read from details, as FCM returns it")
    func errorBodies() throws {
        let unregistered = """
            {"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND",
             "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}
            """
        #expect(
            try JSONDecoder().decode(FCMErrorBody.self, from: Data(unregistered.utf8)).fcmErrorCode == .unregistered
        )
        let unauthenticated = """
            {"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}
            """
        #expect(try JSONDecoder().decode(FCMErrorBody.self, from: Data(unauthenticated.utf8)).fcmErrorCode == nil)
        let invalid = FCMErrorBody(code: .invalidArgument, message: "bad ttl", field: "message.android.ttl")
        let decoded = try JSONDecoder().decode(FCMErrorBody.self, from: try JSONEncoder().encode(invalid))
        #expect(decoded.fcmErrorCode == .invalidArgument)
        #expect(decoded.error.status == "INVALID_ARGUMENT")
        #expect(decoded.error.details?.last?.fieldViolations?.first?.field == "message.android.ttl")
        for code in FCMErrorCode.allCases {
            #expect(FCMErrorBody(code: code).error.code == code.status)
        }
    }

    @Test("every answer is classified as the issue's rules say")
    func classification() {
        #expect(FCMClassification(status: 200, code: nil) == .delivered)
        #expect(FCMClassification(status: 404, code: .unregistered) == .tokenDead)
        #expect(FCMClassification(status: 429, code: .quotaExceeded) == .retry)
        #expect(FCMClassification(status: 503, code: .unavailable) == .retry)
        #expect(FCMClassification(status: 500, code: .internal) == .retry)
        #expect(FCMClassification(status: 400, code: .invalidArgument) == .permanent)
        #expect(FCMClassification(status: 403, code: .senderIDMismatch) == .configuration)
        #expect(FCMClassification(status: 401, code: .thirdPartyAuthError) == .configuration)
        #expect(FCMClassification(status: 401, code: nil) == .refreshTokenAndRetry)
        #expect(FCMClassification(status: 403, code: nil) == .configuration)
        #expect(FCMClassification(status: 502, code: nil) == .retry)
        #expect(FCMClient.retryAfter("120") == .seconds(120))
        #expect(FCMClient.retryAfter("soon") == nil)
        let later = Date().addingTimeInterval(30)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let parsed = FCMClient.retryAfter(formatter.string(from: later))
        #expect(parsed.map { $0 >= .seconds(28) && $0 <= .seconds(31) } == true)
    }

    static func padded(_ text: String) -> String {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return standard
    }
}
