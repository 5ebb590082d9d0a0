import HeraldDomain

/// Every way the crypto core can refuse an input or an operation.
///
/// Compare against the static members (`error == .authenticationFailed`); equality looks at the
/// kind of failure only, not at the detail text.
public struct HeraldCryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case emptyInput
        case tooShort
        case badFormat
        case unknownVersion
        case unknownKeyID
        case authenticationFailed
        case wrongKind
        case contentMismatch
        case malformedContent
        case fieldTooLong
        case doesNotFit
        case invalidKey
        case keyAgreementFailed
        case keyFileMissing
        case keyFileInsecure
        case keyFileInvalid
        case keyFileExists
        case keyFileIO
        case passwordHashFailed
    }

    /// The kind and the words; equality and hashing look at the kind only.
    private let kind: ErrorKind<Code>
    /// What went wrong, for a person. Never contains key material or plaintext.
    public var detail: String { kind.text }

    private init(_ code: Code, _ detail: String) { kind = ErrorKind(code, detail) }

    public var description: String { detail }

    /// A stable name for the kind of failure (`"authenticationFailed"`), for JSON error bodies
    /// and test vectors.
    public var identifier: String { "\(kind.code)" }

    /// The input was empty.
    public static let emptyInput = Self(.emptyInput, "the envelope is empty")
    /// The input is shorter than the smallest valid envelope.
    public static let tooShort = Self(.tooShort, "the envelope is shorter than its header and tag")
    /// The text form is not base64url, or a field has the wrong shape.
    public static let badFormat = Self(.badFormat, "the envelope is not well-formed base64url")
    /// The version byte names a format this build does not know.
    public static let unknownVersion = Self(.unknownVersion, "the envelope has an unknown format version")
    /// No session key is known for the envelope's key id.
    public static let unknownKeyID = Self(.unknownKeyID, "no key is known for the envelope's key id")
    /// The tag did not verify: wrong key, tampered bytes, or a different context.
    public static let authenticationFailed = Self(
        .authenticationFailed,
        "the envelope did not authenticate (wrong key, tampered, or another context)"
    )
    /// The envelope opened, but holds a different push kind than the one expected.
    public static let wrongKind = Self(.wrongKind, "the sealed content is of another push kind")
    /// The envelope opened, but its content names another message or call id.
    public static let contentMismatch = Self(.contentMismatch, "the sealed content names another id")
    /// The plaintext does not follow the content encoding.
    public static let malformedContent = Self(.malformedContent, "the sealed content is malformed")
    /// A text field is longer than the encoding allows (65,535 UTF-8 bytes).
    public static let fieldTooLong = Self(.fieldTooLong, "a content field is longer than 65535 bytes")
    /// Even with the text cut to nothing, the content does not fit the payload budget.
    public static let doesNotFit = Self(.doesNotFit, "the content does not fit the payload budget")
    /// A key has the wrong length or is not a valid public key.
    public static let invalidKey = Self(.invalidKey, "the key has the wrong length or is invalid")
    /// libsodium refused the key exchange (for example, a low-order public key).
    public static let keyAgreementFailed = Self(.keyAgreementFailed, "the key agreement failed")
    /// The master key file does not exist.
    public static let keyFileMissing = Self(.keyFileMissing, "the key file does not exist")
    /// The master key file can be read by group or others.
    public static let keyFileInsecure = Self(.keyFileInsecure, "the key file is readable by others")
    /// The master key file or variable does not hold 32 bytes (raw or base64).
    public static let keyFileInvalid = Self(.keyFileInvalid, "the key does not hold 32 bytes (raw or base64)")
    /// A key file already exists where a new one was to be written.
    public static let keyFileExists = Self(.keyFileExists, "a key file already exists at that path")
    /// Reading or writing a key file failed.
    public static let keyFileIO = Self(.keyFileIO, "reading or writing the key file failed")
    /// libsodium could not hash a password (the memory Argon2id asks for was not there).
    public static let passwordHashFailed = Self(
        .passwordHashFailed,
        "the password could not be hashed (not enough memory for Argon2id)"
    )

    /// The same failure with a more specific detail (a path, an errno text).
    public func with(detail: String) -> Self { Self(kind.code, detail) }
}
