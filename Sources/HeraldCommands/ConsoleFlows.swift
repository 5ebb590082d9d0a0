import ArgumentParser
import HeraldConsoleCore
import HeraldDevice
import HeraldDomain
import HeraldRelay

/// `herald simulate`'s flows for the console: each plays on an in-process stack of its own (the
/// serving relay's devices and pushes are never touched), its steps told as they happen without
/// what the emulated user saw (the sender and text of the notification).
struct ConsoleFlows: ConsoleSimulator {
    private struct Flow: Sendable {
        var summary: ConsoleSimulationFlow
        var platform: DevicePlatform
        var body: Simulation.Flow
    }

    /// The flows, each described by its command's own abstract (one text for both).
    private static let table: [Flow] = [
        flow("messaging", SimulateCommand.Messaging.configuration, .ios, Simulation.messaging),
        flow("android", SimulateCommand.Android.configuration, .android, Simulation.messaging),
        flow("web", SimulateCommand.Web.configuration, .web, Simulation.messaging),
        flow("telephony", SimulateCommand.Telephony.configuration, .ios, Simulation.telephony),
        flow("callback", SimulateCommand.Callback.configuration, .ios, Simulation.callback),
        flow("dual-channel", SimulateCommand.DualChannel.configuration, .ios, Simulation.dualChannel),
        flow("gms-chat", SimulateCommand.GMSChat.configuration, .ios, Simulation.gmsChat),
    ]

    private static func flow(
        _ name: String,
        _ command: CommandConfiguration,
        _ platform: DevicePlatform,
        _ body: @escaping Simulation.Flow
    ) -> Flow {
        Flow(
            summary: ConsoleSimulationFlow(name: name, summary: command.abstract),
            platform: platform,
            body: body
        )
    }

    var flows: [ConsoleSimulationFlow] { Self.table.map(\.summary) }

    func play(
        flow name: String,
        step: @escaping @Sendable (SimulationStep) -> Void
    ) async throws -> ConsoleSimulationResult {
        guard let flow = Self.table.first(where: { $0.summary.name == name }) else {
            return ConsoleSimulationResult(summary: "no flow named \(name)", steps: [])
        }
        let options = try SimulateCommand.Options.parse(["--quiet"])
        let timeline = try await Simulation.run(
            options: options,
            flow: name,
            platform: flow.platform,
            observer: { step(Self.step($0)) },
            flow.body
        )
        let events = timeline.all
        let pushes = events.filter { $0.step == "push delivered" || $0.step == "data message delivered" }
        return ConsoleSimulationResult(summary: "\(pushes.count) push(es) delivered", steps: events.map(Self.step))
    }

    /// A timeline event as the console shows it: never what the user saw (`userSees`).
    static func step(_ event: TimelineEvent) -> SimulationStep {
        SimulationStep(
            elapsedMs: event.elapsedMs,
            from: event.from,
            to: event.to,
            step: event.step,
            detail: event.detail
        )
    }
}
