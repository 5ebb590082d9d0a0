import HeraldConsoleCore
import HeraldRelayHTTP
import Hummingbird
import NIOCore

extension Console {
    struct FlowRow {
        var name: String
        var summary: String
        var mayStart: Bool
        var csrf: String
    }

    func addSimulations(to group: RouterGroup<RelayRequestContext>) {
        page(group, "simulations") { _, _, signedIn in
            let flows = (configuration.simulator?.flows ?? []).map {
                FlowRow(
                    name: $0.name,
                    summary: $0.summary,
                    mayStart: signedIn.role.may(.startSimulation),
                    csrf: signedIn.csrf
                )
            }
            let runs = simulations.runs.map {
                ["id": $0.id, "flow": $0.flow, "by": $0.by, "state": $0.state.rawValue, "steps": "\($0.steps.count)"]
            }
            let view: [String: Any] = ["available": configuration.simulator != nil, "flows": flows, "runs": runs]
            return render("Simulations", "simulations", view, signedIn, current: "/console/simulations")
        }
        form(group, "simulations", .startSimulation) { request, _, signedIn in
            struct StartForm: Decodable {
                var csrf: String
                var flow: String
            }
            let form = try await ConsoleHTTP.form(StartForm.self, request, limit: configuration.maximumFormBytes)
            try check(form.csrf, signedIn)
            let id = try simulations.start(flow: form.flow, by: signedIn.name)
            await relay.keys.audit(actor: signedIn.actor, action: "simulation.started", target: form.flow, app: nil)
            return ConsoleHTTP.redirect("/console/simulations/" + id)
        }
        page(group, "simulations/:id") { _, context, signedIn in
            let id = try context.parameters.require("id")
            guard let run = simulations.run(id: id) else { throw ConsoleError.notFound("there is no run \(id)") }
            let running = run.state == .waiting || run.state == .running
            return render(
                "Simulation: \(run.flow)",
                "simulation",
                runView(run),
                signedIn,
                current: "/console/simulations",
                refresh: running ? 2 : nil
            )
        }
        data(group, "simulations/:id/events") { _, context, _ in
            let id = try context.parameters.require("id")
            guard simulations.run(id: id) != nil else { throw ConsoleError.notFound("there is no run \(id)") }
            let simulations = self.simulations
            return ConsoleHTTP.eventStream { writer in
                var told: (steps: Int, state: SimulationRuns.RunState)? = nil
                // Woken by each change of the run (a step, its state); a burst of steps sends
                // the diagram once.
                for await _ in simulations.changes(of: id) {
                    guard let run = simulations.run(id: id) else { break }
                    if told?.steps != run.steps.count || told?.state != run.state {
                        told = (run.steps.count, run.state)
                        try await writer.write(ByteBuffer(string: Self.event("diagram", Self.diagram(run))))
                        try await writer.write(ByteBuffer(string: Self.event("state", run.state.rawValue)))
                        try await writer.write(ByteBuffer(string: Self.event("line", Self.stateLine(run))))
                    }
                    if run.state == .finished || run.state == .failed {
                        try await writer.write(ByteBuffer(string: Self.event("end", run.state.rawValue)))
                        break
                    }
                }
            }
        }
    }

    private func runView(_ run: SimulationRuns.Run) -> [String: Any] {
        [
            "id": run.id, "flow": run.flow, "state": run.state.rawValue, "line": Self.stateLine(run),
            "diagram": Self.diagram(run),
        ]
    }

    static func diagram(_ run: SimulationRuns.Run) -> String {
        SequenceDiagram.svg(run.steps, title: "Sequence diagram of the \(run.flow) simulation")
    }

    /// The run's state in words, as the page's status line says it.
    static func stateLine(_ run: SimulationRuns.Run) -> String {
        "\(run.steps.count) steps" + (run.summary.map { ". " + $0 } ?? "")
    }

    /// A server-sent event: each line of `data` its own `data:` line.
    static func event(_ name: String, _ data: String) -> String {
        "event: \(name)\n"
            + data.split(separator: "\n", omittingEmptySubsequences: false).map { "data: \($0)\n" }
            .joined() + "\n"
    }
}
