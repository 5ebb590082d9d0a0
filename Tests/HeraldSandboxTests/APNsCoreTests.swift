import Crypto
import Foundation
import HeraldAPNsCore
import HeraldEncoding
import Testing

@Suite(.timeLimit(.minutes(1))) struct APNsCoreTests {
    @Test(
        "the connection window is topped back up to 16 MiB once less than half of it is left",
        arguments: [
            (nil, nil), (1 << 24, nil), (1 << 23, nil), ((1 << 23) - 1, (1 << 23) + 1), (1000, (1 << 24) - 1000),
            (0, 1 << 24),
        ] as [(Int?, Int?)]
    )
    func connectionWindowTopUp(inbound: Int?, increment: Int?) {
        #expect(APNsConnectionWindow.topUp(inbound: inbound) == increment)
    }

    @Test("the window is opened from the protocol's initial 65,535 bytes to its size")
    func connectionWindowOpening() {
        #expect(APNsConnectionWindow.opening + 65_535 == APNsConnectionWindow.size)
        #expect(APNsConnectionWindow.size == 16 * 1024 * 1024)
    }

    /// Whether the sandbox takes `bytes` as an APNs payload.
    func isObject(_ bytes: [UInt8]) -> Bool {
        (try? JSONCheck.check(bytes, limits: .apnsPayload)) != nil
    }

    @Test(arguments: [
        #"{}"#, #" { "aps" : { "alert" : "hi" } } "#, #"{"a":[1,-2.5e+3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"]}"#,
        #"{"emoji":"👋🏽","cjk":"你好"}"#, #"{"n":0,"m":-0.0,"e":1E9}"#,
    ])
    func validObjectsAreAccepted(text: String) {
        #expect(isObject(Array(text.utf8)))
        // Agrees with Foundation.
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any])
    }

    @Test(arguments: [
        "", "[]", "1", #""x""#, "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, #"{a:1}"#, #"{"a":01}"#,
        #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":tru}"#, #"{"a":"\x"}"#, #"{"a":"\u12"}"#, "{\"a\":\"\u{1}\"}",
        #"{} {}"#, #"{"a":1}x"#, #"{"a":[1,]}"#, #"{"a":1e}"#,
    ])
    func everythingElseIsRefused(text: String) {
        #expect(!isObject(Array(text.utf8)))
    }

    @Test func invalidUTF8AndDeepNestingAreRefused() {
        #expect(!isObject([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D]))  // bad continuation
        #expect(!isObject([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D]))  // surrogate
        #expect(!isObject([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC0, 0x80, 0x22, 0x7D]))  // overlong
        let deep = #"{"a":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        #expect(!isObject(Array(deep.utf8)))
        let fine = #"{"a":"# + String(repeating: "[", count: 30) + String(repeating: "]", count: 30) + "}"
        #expect(isObject(Array(fine.utf8)))
    }

    @Test func providerTokensRoundTripAndRefuseTampering() throws {
        let key = P256.Signing.PrivateKey()
        let token = try ProviderTokenSigner(privateKey: key, keyID: "ABC123DEFG", teamID: "TEAM123456")
            .makeToken(issuedAt: 1_763_726_400)
        let parsed = try #require(ParsedProviderToken(token.text[...]))
        #expect(parsed.keyID == "ABC123DEFG")
        #expect(parsed.teamID == "TEAM123456")
        #expect(parsed.issuedAt == 1_763_726_400)
        #expect(parsed.isSigned(by: key.publicKey))
        #expect(!parsed.isSigned(by: P256.Signing.PrivateKey().publicKey))
        #expect(!token.description.contains(token.text))
        for broken in ["", "a.b", "a.b.c", token.text + ".x", token.text.replacingOccurrences(of: ".", with: "=")] {
            #expect(ParsedProviderToken(broken[...]) == nil)
        }
    }

    @Test func randomUUIDsAreCanonicalVersion4() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = APNsUUID.random()
            #expect(APNsUUID.isCanonical(id[...]))
            #expect(Array(id)[14] == "4")
            #expect("89ab".contains(Array(id)[19]))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
        #expect(!APNsUUID.isCanonical("8E1BB2A4-0C1D-4F5E-9A1B-2C3D4E5F6A7"[...]))
        #expect(!APNsUUID.isCanonical("8E1BB2A4x0C1D-4F5E-9A1B-2C3D4E5F6A7B"[...]))
    }

    @Test func everyReasonHasApplesStatus() {
        #expect(APNsReason.allCases.count == 32)
        #expect(APNsReason.unregistered.status == 410)
        #expect(APNsReason.tooManyProviderTokenUpdates.status == 429)
        #expect(APNsReason.shutdown.status == 503)
        #expect(APNsReason.badPath.status == 404)
        #expect(APNsPushType.voip.payloadLimit == 5120)
        #expect(APNsPushType.alert.payloadLimit == 4096)
        #expect(!APNsPushType.background.allows(.immediate))
    }
}
