/// A flow the console can start (`herald simulate`'s flows).
public struct ConsoleSimulationFlow: Sendable, Hashable {
    /// The flow's name, as `herald simulate <name>` takes it.
    public var name: String
    /// One line on what it plays.
    public var summary: String

    public init(name: String, summary: String) {
        self.name = name
        self.summary = summary
    }
}

/// What plays simulations for the console: `herald serve` and `herald relay` pass the flows of
/// `herald simulate`, each on an in-process stack of its own (sandbox, provider, relay on
/// loopback ports), so a simulation never touches the serving relay's devices or pushes.
public protocol ConsoleSimulator: Sendable {
    /// The flows it plays, in the order the page lists them.
    var flows: [ConsoleSimulationFlow] { get }

    /// Plays `flow`, telling each step as it is recorded; returns the flow's end, or throws when
    /// the flow fails (its steps so far stay told).
    func play(flow: String, step: @escaping @Sendable (SimulationStep) -> Void) async throws -> ConsoleSimulationResult
}

/// How a simulation ended.
public struct ConsoleSimulationResult: Sendable, Hashable {
    /// One line on what happened ("3 push(es) delivered").
    public var summary: String
    /// Every step in causal order: a step reported late (the push network's acceptance, as the
    /// relay recorded it) in its place before what it caused, where the live steps had it last.
    public var steps: [SimulationStep]

    public init(summary: String, steps: [SimulationStep]) {
        self.summary = summary
        self.steps = steps
    }
}
