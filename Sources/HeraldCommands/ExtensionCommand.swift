import ArgumentParser
import Foundation
import HeraldDevice

/// `herald extension`: the Notification Service Extension test harness.
struct ExtensionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extension",
        abstract: "Open captured pushes with a device's app-group store, as the extension would.",
        subcommands: [Decrypt.self, Test.self]
    )

    /// What one captured push turned into.
    struct Outcome: Codable {
        var pushType: String
        var notification: DisplayedNotification?
        var call: String?
        var opened: Bool
        var diagnostic: String?

        enum CodingKeys: String, CodingKey {
            case pushType = "push_type"
            case notification, call, opened, diagnostic
        }
    }

    /// A captured push: an APNs body with its push type, or an FCM data message's data.
    enum Capture {
        case apns(payload: String, pushType: String)
        case fcm(data: [String: String])
    }

    /// Reads a capture: an inspection record of either network (or an inspection API's answer,
    /// whose newest record is taken), a device-connection notification or FCM message, or a bare
    /// APNs body (taken as an alert).
    static func capture(_ data: Data) throws -> Capture {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ValidationError("the input is not a JSON object")
        }
        // The inspection API's whole answer: take its newest record.
        let inspected = (object["records"] as? [[String: Any]])?.last
        let record =
            inspected ?? (object["notification"] as? [String: Any]) ?? (object["message"] as? [String: Any]) ?? object
        if let fields = record["data"] as? [String: Any] {
            // An FCM data message: string values only, as FCM delivers them.
            return .fcm(data: fields.compactMapValues { $0 as? String })
        }
        if let payload = record["payload"] as? String {
            return .apns(payload: payload, pushType: record["push_type"] as? String ?? "alert")
        }
        return .apns(payload: String(decoding: data, as: UTF8.self), pushType: "alert")
    }

    static func open(_ data: Data, store: AppGroupStore, budget: Duration) async throws -> Outcome {
        let payload: String
        let pushType: String
        switch try capture(data) {
        case .fcm(let fields):
            return openFCM(fields, store: store)
        case .apns(let body, let type):
            payload = body
            pushType = type
        }
        if pushType == "voip" {
            guard let call = PushKitEmulator.openCall(payload, store: store) else {
                return Outcome(
                    pushType: pushType,
                    notification: nil,
                    call: nil,
                    opened: false,
                    diagnostic: "the call content did not open with this store's keys"
                )
            }
            return Outcome(
                pushType: pushType,
                notification: nil,
                call: "Incoming \(call.media.rawValue) call from \(call.callerName) (\(call.callID))",
                opened: true,
                diagnostic: nil
            )
        }
        if EmulatedPhone.isCallback(payload: payload) {
            let result = NotificationServiceEmulator(store: store, budget: budget, rememberedPushes: 0)
                .receiveCallback(payload: payload, pushType: pushType)
            return callbackOutcome(result, pushType: pushType)
        }
        // The harness opens a capture as often as asked: it remembers no shown pushes.
        let result = await NotificationServiceEmulator(store: store, budget: budget, rememberedPushes: 0).receive(
            payload: payload,
            pushType: pushType
        )
        return Outcome(
            pushType: pushType,
            notification: result.notification,
            call: nil,
            opened: result.opened,
            diagnostic: result.diagnostic
        )
    }

    /// A callback push's dialog (title and text; the actions' labels go on the category's
    /// buttons), or why it did not open.
    static func callbackOutcome(_ result: CallbackPushResult, pushType: String) -> Outcome {
        var shown = result.notification
        if let content = result.callback {
            shown?.body += " [" + content.dialog.actions.map(\.label).joined(separator: " | ") + "]"
        }
        return Outcome(
            pushType: pushType,
            notification: shown,
            call: nil,
            opened: result.callback != nil,
            diagnostic: result.diagnostic
        )
    }

    /// What the Android app's messaging service makes of a data message.
    static func openFCM(_ data: [String: String], store: AppGroupStore) -> Outcome {
        let service = FirebaseMessagingServiceEmulator(store: store, rememberedPushes: 0)
        if data["kind"] == "callback" {
            return callbackOutcome(service.onCallbackReceived(data), pushType: "fcm")
        }
        switch service.onMessageReceived(data) {
        case .notification(let shown, let opened, let diagnostic, _):
            return Outcome(pushType: "fcm", notification: shown, call: nil, opened: opened, diagnostic: diagnostic)
        case .call(let callID, let callerName, let video, let diagnostic):
            return Outcome(
                pushType: "fcm",
                notification: nil,
                call: "Incoming \(video ? "video" : "audio") call from \(callerName) (\(callID))",
                opened: diagnostic == nil,
                diagnostic: diagnostic
            )
        case .ignored(let why):
            return Outcome(pushType: "fcm", notification: nil, call: nil, opened: false, diagnostic: why)
        case .duplicate(let pushID):
            return Outcome(
                pushType: "fcm",
                notification: nil,
                call: nil,
                opened: false,
                diagnostic: "push \(pushID) was already shown"
            )
        }
    }

    static func openStore(_ directory: String) throws -> AppGroupStore {
        guard FileManager.default.fileExists(atPath: directory + "/registration.json") else {
            throw ValidationError("\(directory) is not an app-group store (no registration.json)")
        }
        return try AppGroupStore(directory: directory)
    }

    struct Decrypt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "decrypt",
            abstract: "Open one captured push and print what the user would see.",
            discussion: """
                The input is a record from the sandbox's inspection API (GET /sandbox/inspection \
                or GET /sandbox/fcm/inspection; given the whole answer, the newest record), a \
                notification or FCM message from the device connection, or a bare APNs JSON body. Exits 0 when \
                the push opened (or carries no content by policy), 1 when it cannot be opened \
                (unknown key id, tampered, wrong device), 64 for input that is not a push.
                """
        )

        @Option(help: "The device's app-group store (the directory `herald device` keeps).")
        var store: String

        @Argument(help: "The captured push: a file, or - for standard input.")
        var input: String = "-"

        @Flag(help: "Print JSON instead of text.")
        var json = false

        @Option(name: .customLong("budget-ms"), help: "The extension's time budget, in milliseconds.")
        var budgetMs: Int = 30_000

        func run() async throws {
            let store = try ExtensionCommand.openStore(store)
            let data: Data
            if input == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let contents = FileManager.default.contents(atPath: input) else {
                    throw ValidationError("cannot read \(input)")
                }
                data = contents
            }
            let outcome = try await ExtensionCommand.open(data, store: store, budget: .milliseconds(budgetMs))
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(outcome), as: UTF8.self))
            } else if let call = outcome.call {
                print(call)
            } else if let notification = outcome.notification {
                print(EmulatedPhone.describe(notification))
                if notification.fetchOnTap, let id = notification.messageID {
                    print("(a tap fetches message \(id) from the relay)")
                }
            } else {
                print("(nothing shown: a push without an alert)")
            }
            let opened = outcome.opened || (outcome.diagnostic == nil && outcome.notification != nil)
            if !opened {
                FileHandle.standardError.write(Data("herald: \(outcome.diagnostic ?? "the push did not open")\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Run a folder of captured pushes against expected results.",
            discussion: """
                DIR holds an app-group store in DIR/store (or --store) and, for each case, \
                NAME.json (a captured push) and NAME.expected.json: {"title": …, "body": …} for \
                what the user must see, {"call": …} for a VoIP push, or {"error": "<words of the \
                diagnostic>"} for a push that must not open. Prints one line per case; exits 1 if \
                any case fails.
                """
        )

        @Argument(help: "The folder of cases.")
        var directory: String

        @Option(help: "The app-group store; DIR/store by default.")
        var store: String?

        func run() async throws {
            let store = try ExtensionCommand.openStore(store ?? directory + "/store")
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                .filter { $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json") }.sorted()
            guard !names.isEmpty else { throw ValidationError("\(directory) has no cases (NAME.json)") }
            var failures = 0
            for name in names {
                let base = String(name.dropLast(".json".count))
                let expectedPath = directory + "/" + base + ".expected.json"
                guard let data = FileManager.default.contents(atPath: directory + "/" + name),
                    let expectedData = FileManager.default.contents(atPath: expectedPath),
                    let expected = try? JSONSerialization.jsonObject(with: expectedData) as? [String: String]
                else {
                    print("FAIL \(base): missing or unreadable \(base).expected.json")
                    failures += 1
                    continue
                }
                let outcome: ExtensionCommand.Outcome
                do {
                    outcome = try await ExtensionCommand.open(data, store: store, budget: .seconds(30))
                } catch {
                    print("FAIL \(base): \(error)")
                    failures += 1
                    continue
                }
                let problem = Self.check(outcome, against: expected)
                if let problem {
                    failures += 1
                    print("FAIL \(base): \(problem)")
                } else {
                    print("ok   \(base)")
                }
            }
            print("\(names.count - failures) of \(names.count) cases passed")
            if failures > 0 { throw ExitCode(1) }
        }

        static func check(_ outcome: ExtensionCommand.Outcome, against expected: [String: String]) -> String? {
            if let error = expected["error"] {
                guard !outcome.opened else { return "opened, but was expected to fail (\(error))" }
                guard let diagnostic = outcome.diagnostic, diagnostic.contains(error) else {
                    return "expected a diagnostic containing '\(error)', got '\(outcome.diagnostic ?? "none")'"
                }
                return nil
            }
            if let call = expected["call"] {
                return outcome.call?.contains(call) == true
                    ? nil : "expected a call '\(call)', got '\(outcome.call ?? "none")'"
            }
            let title = outcome.notification?.title
            let body = outcome.notification?.body
            if let want = expected["title"], want != title { return "title '\(title ?? "none")', expected '\(want)'" }
            if let want = expected["body"], want != body { return "body '\(body ?? "none")', expected '\(want)'" }
            return nil
        }
    }
}
