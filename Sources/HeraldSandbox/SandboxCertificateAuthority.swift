import Crypto
import Foundation
import HeraldCrypto
import HeraldEncoding
import SwiftASN1
import X509

/// The sandbox's development CA and server certificate, made once under `keys/`.
///
/// Clients trust the sandbox by adding `sandbox-ca.pem` to their trust roots, never by
/// switching verification off.
public enum SandboxCertificateAuthority {
    /// The file names inside the directory.
    public static let caCertificateFile = "sandbox-ca.pem"
    public static let caKeyFile = "sandbox-ca.key"
    public static let serverCertificateFile = "sandbox-server.pem"
    public static let serverKeyFile = "sandbox-server.key"

    /// Returns the TLS files in `directory`, making the CA and the server certificate first if
    /// they are missing. The server certificate names `localhost`, `127.0.0.1` and `::1`.
    public static func ensure(directory: String) throws -> SandboxTLS {
        let tls = SandboxTLS(
            certificateChainPath: directory + "/" + serverCertificateFile,
            privateKeyPath: directory + "/" + serverKeyFile,
            caCertificatePath: directory + "/" + caCertificateFile
        )
        let fileManager = FileManager.default
        if [tls.certificateChainPath, tls.privateKeyPath, tls.caCertificatePath].allSatisfy(fileManager.fileExists) {
            return tls
        }
        // Holds the CA's private key: 0700, like every directory Herald makes for secrets.
        try SecretFile.makeDirectory(directory)
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Herald")
            CommonName("Herald Sandbox Development CA")
        }
        let ca = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365 * 24 * 3600),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            // Under 398 days, as clients that follow the CA/Browser rules expect.
            notValidAfter: now.addingTimeInterval(397 * 24 * 3600),
            issuer: caName,
            subject: try DistinguishedName {
                OrganizationName("Herald")
                CommonName("localhost")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: .init(caKey)
        )
        try write(caKey.pemRepresentation, to: directory + "/" + caKeyFile, mode: 0o600)
        try write(serverKey.pemRepresentation, to: tls.privateKeyPath, mode: 0o600)
        try write(try ca.serializeAsPEM().pemString, to: tls.caCertificatePath, mode: 0o644)
        try write(try server.serializeAsPEM().pemString, to: tls.certificateChainPath, mode: 0o644)
        return tls
    }

    private static func write(_ text: String, to path: String, mode: UInt32) throws {
        try SecretFile.write(Array((text + "\n").utf8), to: path, mode: mode, overwrite: true)
    }
}

extension SandboxCertificateAuthority {
    /// A client certificate for certificate-based connections, as Apple issues per app and
    /// environment: PEM texts of the certificate and its private key.
    public struct ClientIdentity: Sendable, Codable {
        public var certificatePEM: String
        public var privateKeyPEM: String

        enum CodingKeys: String, CodingKey {
            case certificatePEM = "certificate_pem"
            case privateKeyPEM = "private_key_pem"
        }
    }

    /// Issues a client certificate for `bundleID` in `environment` (`sandbox` or `production`),
    /// signed by the CA in `tls`. The bundle id is the subject's common name and the environment
    /// its organizational unit.
    public static func issueClientCertificate(
        bundleID: String,
        environment: SandboxKey.Environment,
        tls: SandboxTLS
    ) throws -> ClientIdentity {
        let caKeyPath = FilePathText.parent(of: tls.caCertificatePath) + "/" + caKeyFile
        let caKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: caKeyPath, encoding: .utf8))
        let ca = try Certificate(pemEncoded: String(contentsOfFile: tls.caCertificatePath, encoding: .utf8))
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 24 * 3600),
            issuer: ca.subject,
            subject: try DistinguishedName {
                OrganizationName("Herald")
                OrganizationalUnitName(environment.rawValue)
                CommonName(bundleID)
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: .init(caKey)
        )
        return ClientIdentity(
            certificatePEM: try certificate.serializeAsPEM().pemString,
            privateKeyPEM: key.pemRepresentation
        )
    }

    /// What a presented client certificate chain is worth, checked against the CA at `caPath`.
    static func classify(chainDER: [[UInt8]], ca: Certificate?) -> SandboxClientCertificate {
        guard let ca, let leafBytes = chainDER.first,
            let leaf = try? Certificate(derEncoded: leafBytes),
            leaf.issuer == ca.subject,
            ca.publicKey.isValidSignature(leaf.signature, for: leaf),
            leaf.notValidBefore <= Date(), Date() <= leaf.notValidAfter
        else { return .untrusted }
        var bundleID: String?
        var unit: String?
        for relative in leaf.subject {
            for attribute in relative {
                if attribute.type == .RDNAttributeType.commonName { bundleID = "\(attribute.value)" }
                if attribute.type == .RDNAttributeType.organizationalUnitName { unit = "\(attribute.value)" }
            }
        }
        guard let bundleID, let unit, let environment = SandboxKey.Environment(rawValue: unit) else {
            return .untrusted
        }
        return .trusted(bundleID: bundleID, environment: environment)
    }
}
