import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldSandbox
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing
import X509

/// Certificate-based connections: the reasons only a TLS client certificate can cause.
@Suite(.timeLimit(.minutes(2))) struct CertificateTests {
    func client(_ sandbox: SandboxHarness, certificatePEM: String, keyPEM: String) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(sandbox.endpoints.caCertificatePath)
        tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))]
        tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem))
        configuration.tlsConfiguration = tls
        configuration.httpVersion = .automatic
        return sandbox.track(HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
    }

    @Test func aSandboxCertificateNeedsNoProviderToken() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let identity = try SandboxCertificateAuthority.issueClientCertificate(
                bundleID: SandboxHarness.bundleID,
                environment: .sandbox,
                tls: SandboxHarness.tls
            )
            let client = try client(sandbox, certificatePEM: identity.certificatePEM, keyPEM: identity.privateKeyPEM)
            let reply = try await sandbox.push(to: token, headers: [("authorization", nil)], client: client)
            #expect(reply.status == 200)
            // The certificate is for one app: another app of the same team is not its topic.
            try sandbox.core.register(app: SandboxApp(bundleID: "com.example.other", teamID: SandboxHarness.teamID))
            let other = try #require(try sandbox.core.registerDevice(bundleID: "com.example.other").messagingToken)
            let refused = try await sandbox.push(
                to: other,
                headers: [("authorization", nil), ("apns-topic", "com.example.other")],
                client: client
            )
            #expect(refused.status == 400)
            #expect(refused.reason == "TopicDisallowed")
        }
    }

    @Test func aProductionCertificateIsTheWrongEnvironment() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let identity = try SandboxCertificateAuthority.issueClientCertificate(
                bundleID: SandboxHarness.bundleID,
                environment: .production,
                tls: SandboxHarness.tls
            )
            let client = try client(sandbox, certificatePEM: identity.certificatePEM, keyPEM: identity.privateKeyPEM)
            let reply = try await sandbox.push(to: token, client: client)
            #expect(reply.status == 403)
            #expect(reply.reason == "BadCertificateEnvironment")
        }
    }

    @Test func aCertificateFromAnotherIssuerIsBad() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let key = P256.Signing.PrivateKey()
            let name = try DistinguishedName {
                OrganizationalUnitName("sandbox")
                CommonName(SandboxHarness.bundleID)
            }
            let selfSigned = try Certificate(
                version: .v3,
                serialNumber: .init(),
                publicKey: .init(key.publicKey),
                notValidBefore: Date().addingTimeInterval(-60),
                notValidAfter: Date().addingTimeInterval(3600),
                issuer: name,
                subject: name,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: Certificate.Extensions(),
                issuerPrivateKey: .init(key)
            )
            let client = try client(
                sandbox,
                certificatePEM: try selfSigned.serializeAsPEM().pemString,
                keyPEM: key.pemRepresentation
            )
            // A valid provider token does not make up for a bad certificate.
            let reply = try await sandbox.push(to: token, client: client)
            #expect(reply.status == 403)
            #expect(reply.reason == "BadCertificate")
        }
    }

    @Test func certificatesAreIssuedOverTheControlAPI() async throws {
        try await SandboxHarness.with { sandbox in
            var request = HTTPClientRequest(url: sandbox.endpoints.controlURL + "/sandbox/certificates")
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: #"{"bundle_id":"com.example.chat","environment":"sandbox"}"#))
            let response = try await sandbox.client.execute(request, timeout: .seconds(10))
            #expect(response.status.code == 201)
            let body = try await response.body.collect(upTo: 1 << 16)
            let identity = try JSONDecoder().decode(
                SandboxCertificateAuthority.ClientIdentity.self,
                from: Data(buffer: body)
            )
            #expect(identity.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
            let certificate = try Certificate(pemEncoded: identity.certificatePEM)
            #expect("\(certificate.subject)".contains(SandboxHarness.bundleID))

            var unknown = HTTPClientRequest(url: sandbox.endpoints.controlURL + "/sandbox/certificates")
            unknown.method = .POST
            unknown.body = .bytes(ByteBuffer(string: #"{"bundle_id":"com.nope"}"#))
            #expect(try await sandbox.client.execute(unknown, timeout: .seconds(10)).status.code == 400)
        }
    }
}
