import Crypto
import Foundation
import HeraldCrypto
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
        try fileManager.createDirectory(atPath: directory, withIntermediateDirectories: true)
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
