public import HeraldDomain

/// What an operator does in the console, each checked against the operator's role.
public enum ConsoleAction: String, Sendable, Hashable, CaseIterable {
    /// Reads any page: the overview, the live stream, search, a push's road, devices, calls.
    case view
    /// Deactivates a device (its tokens, keys and credential are deleted; its app must
    /// activate it again).
    case deactivateDevice = "deactivate_device"
    /// Starts a simulation (an in-process stack of its own: it never touches the serving relay's
    /// devices, but it spends the node's CPU).
    case startSimulation = "start_simulation"
}

extension OperatorRole {
    /// Whether an operator of this role may take `action`: a viewer only looks, an operator also
    /// acts. The rules are this table, so a new action is refused to viewers until it is listed.
    public func may(_ action: ConsoleAction) -> Bool {
        switch (self, action) {
        case (_, .view): true
        case (.operator, .deactivateDevice), (.operator, .startSimulation): true
        case (.viewer, .deactivateDevice), (.viewer, .startSimulation): false
        }
    }
}
