import Foundation
import HeraldConsole
import HeraldConsoleCore
import HeraldCrypto
import HeraldSandbox
import HeraldStore

extension HeraldServer {
    /// The console's configuration for this node, when `console.enabled` (or sandbox mode's
    /// default) turns it on.
    func console(sandbox: Sandbox?) -> ConsoleConfiguration? {
        guard configuration.console.isOn(sandboxMode: sandbox != nil) else { return nil }
        var console = configuration.console.configuration()
        console.simulator = consoleSimulator
        if let sandbox { console.sandbox = SandboxConsoleRecords(core: sandbox.core) }
        return console
    }

    /// The file sandbox mode's first operator's password is kept in.
    static let firstOperatorFile = "console-admin.password"
    /// The name of sandbox mode's first operator.
    static let firstOperator = "admin"

    /// Sandbox mode's first operator, so that `make run`'s console can be signed in to: `admin`
    /// (role operator) with a random password in `keys/console-admin.password`, made when no
    /// operator exists (configured or stored). Answers the banner's hint; nil when operators
    /// exist already and none was made here.
    static func firstOperator(
        store: any HeraldStore,
        configuration: HeraldConfiguration,
        now: Int64
    ) async throws -> String? {
        let path = (configuration.keysDirectory as NSString).appendingPathComponent(firstOperatorFile)
        let hint = "sign in as \(firstOperator), password in \(path)"
        guard configuration.console.operators.isEmpty else { return nil }
        if let stored = try await store.operatorAccount(name: firstOperator) {
            // Made by an earlier start: the hint holds while the file does.
            return FileManager.default.fileExists(atPath: path) && stored.role == .operator ? hint : nil
        }
        guard try await store.operators().isEmpty else { return nil }
        let password: String
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
            let line = text.split(whereSeparator: \.isNewline).first, line.count >= 12
        {
            password = String(line)
        } else {
            password = PasswordHash.generatedPassword()
            try SecretFile.write(Array((password + "\n").utf8), to: path, overwrite: true)
        }
        let record = OperatorRecord(
            name: firstOperator,
            role: .operator,
            passwordHash: try PasswordHash.hash(password),
            createdAt: now
        )
        try await store.apply(.saveOperator(record, audit: nil))
        return hint
    }
}

/// What the in-process sandbox's push networks received for a push: APNs requests by the push's
/// `apns-id`, FCM and Push Kit messages by the `push_id` in their data. Web Push bodies are
/// encrypted for the browser, so a push there is not found by its id.
struct SandboxConsoleRecords: ConsoleSandboxRecords {
    let core: SandboxCore

    func received(pushID: String, apnsID: String?) async -> [SandboxReceipt] {
        var receipts: [SandboxReceipt] = []
        if let apnsID {
            for record in core.inspection() where record.apnsID.lowercased() == apnsID.lowercased() {
                var facts = [
                    "apns-push-type \(record.pushType ?? "")", "apns-priority \(record.priority ?? "")",
                    "apns-topic \(record.topic ?? "")", "body \(record.payload.utf8.count) bytes",
                ]
                if let expiration = record.expiration { facts.append("apns-expiration \(expiration)") }
                if record.collapseID != nil { facts.append("apns-collapse-id set") }
                receipts.append(
                    SandboxReceipt(
                        at: record.receivedAt,
                        network: "APNs (\(record.environment.rawValue))",
                        status: record.status,
                        reason: record.reason,
                        facts: facts,
                        device: record.delivery.map(Self.delivery)
                    )
                )
            }
        }
        for record in core.fcmInspection() where record.kind == .send && record.data?["push_id"] == pushID {
            let bytes = (record.data ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            receipts.append(
                SandboxReceipt(
                    at: record.receivedAt,
                    network: "FCM",
                    status: record.status,
                    reason: record.errorCode,
                    facts: [
                        "priority \(record.priority ?? "")", "data \(record.data?.count ?? 0) fields, \(bytes) bytes",
                    ],
                    device: record.delivery.map(Self.delivery)
                )
            )
        }
        for record in core.hmsInspection() where record.kind == .send && Self.names(pushID, record.data) {
            receipts.append(
                SandboxReceipt(
                    at: record.receivedAt,
                    network: "Push Kit",
                    status: record.status,
                    reason: record.code,
                    facts: ["urgency \(record.urgency ?? "")", "data \(record.data?.utf8.count ?? 0) bytes"]
                )
            )
        }
        return receipts.sorted { $0.at < $1.at }
    }

    /// Whether a Push Kit message's data (JSON text) carries `pushID` as its `push_id`.
    private static func names(_ pushID: String, _ data: String?) -> Bool {
        guard let data, let object = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
        else { return false }
        return object["push_id"] as? String == pushID
    }

    private static func delivery(_ delivery: String) -> String {
        switch delivery {
        case "delivered": "handed to the connected emulated device"
        case "stored": "stored for the device until it connects"
        default: delivery
        }
    }
}
