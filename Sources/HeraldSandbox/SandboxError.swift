import HeraldDomain
public import HeraldHTTPSupport
public import Hummingbird

/// Why the sandbox refused a control request (registering an app, a service account, a device,
/// a fault...).
public struct SandboxError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case unknownApp
        case unknownDevice
        case unknownToken
        case unknownKey
        case invalidKey
        case invalidServiceAccount
        case invalidRequest
        case appUninstalled
        case registryFile
    }

    /// The kind and the words; equality and hashing look at the kind only.
    private let kind: ErrorKind<Code>
    /// A sentence for the person who sent the request.
    public var message: String { kind.text }

    private init(_ code: Code, _ message: String) { kind = ErrorKind(code, message) }

    public var description: String { message }

    public static func unknownApp(_ bundleID: String) -> Self {
        Self(.unknownApp, "no app with bundle id '\(bundleID)' is registered; register it first (POST /sandbox/apps)")
    }
    public static func unknownDevice(_ deviceID: String) -> Self {
        Self(.unknownDevice, "no device with id '\(deviceID)'")
    }
    public static func unknownToken(_ token: String) -> Self {
        Self(.unknownToken, "no device token '\(token)' was issued by this sandbox")
    }
    public static func unknownKey(_ keyID: String) -> Self {
        Self(.unknownKey, "no provider key with id '\(keyID)'")
    }
    public static func invalidKey(_ detail: String) -> Self {
        Self(.invalidKey, "the provider key is invalid: \(detail)")
    }
    public static func invalidServiceAccount(_ detail: String) -> Self {
        Self(.invalidServiceAccount, "the service account is invalid: \(detail)")
    }
    public static func appUninstalled(_ deviceID: String) -> Self {
        Self(.appUninstalled, "the app was uninstalled from device '\(deviceID)'")
    }
    /// The device registry's file (`SandboxConfiguration.registryFile`) cannot be read or written.
    public static func registryFile(_ detail: String) -> Self {
        Self(.registryFile, detail)
    }
    public static func invalidRequest(_ detail: String) -> Self {
        Self(.invalidRequest, detail)
    }

    /// Matching helpers for tests: compare with `SandboxError.unknownDevice("")`.
    public var isUnknownDevice: Bool { kind.code == .unknownDevice }
}

/// A refusal is the control API's answer, `{"error": message}` (docs/sandbox.md), which
/// `JSONErrorMiddleware` writes when a route throws it.
extension SandboxError: JSONResponseError {
    /// The HTTP status the control API answers with.
    public var status: HTTPResponse.Status {
        switch kind.code {
        case .unknownDevice, .unknownToken, .unknownKey: .notFound
        case .unknownApp, .invalidKey, .invalidServiceAccount, .invalidRequest: .badRequest
        case .appUninstalled: .gone
        case .registryFile: .internalServerError
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        ControlErrorBody.answer(status, message)
    }
}

/// The control API's error shape, `{"error": message}` (docs/sandbox.md).
enum ControlErrorBody {
    /// Hummingbird's refusals say what Hummingbird said; a failure says only `internal error`.
    static let style = JSONErrorStyle(
        refusal: { status, message, _ in answer(status, message ?? status.reasonPhrase) },
        internalError: { answer(.internalServerError, "internal error") }
    )

    /// `{"error": message}` with `status`.
    static func answer(_ status: HTTPResponse.Status, _ message: String) -> Response {
        (try? JSONResponse.make(status, ["error": message]))
            ?? JSONResponse.text(status, #"{"error":"internal error"}"#)
    }
}
