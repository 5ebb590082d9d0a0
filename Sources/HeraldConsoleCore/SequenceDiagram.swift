/// One step of a simulation as the console shows it: who told whom what, when. Never what the
/// user saw on the phone (the emulated notification's sender and text stay in the simulation).
public struct SimulationStep: Sendable, Hashable, Codable {
    /// Milliseconds since the simulation started, on its own clock.
    public var elapsedMs: Int64
    public var from: String
    public var to: String
    public var step: String
    /// Facts without content: a path, an id, a size.
    public var detail: String?

    public init(elapsedMs: Int64, from: String, to: String, step: String, detail: String? = nil) {
        self.elapsedMs = elapsedMs
        self.from = from
        self.to = to
        self.step = step
        self.detail = detail
    }
}

/// A sequence diagram of simulation steps as SVG: one lane per part, in the order each first
/// appears, and one arrow per step, top to bottom; it grows a row per step, so a page can draw it
/// again as steps come.
public enum SequenceDiagram {
    static let laneWidth = 150
    static let rowHeight = 30
    static let head = 40
    static let margin = 70

    /// The lanes of `steps`: every part named, in order of first appearance.
    public static func lanes(_ steps: [SimulationStep]) -> [String] {
        var lanes: [String] = []
        for step in steps {
            for part in [step.from, step.to] where !lanes.contains(part) { lanes.append(part) }
        }
        return lanes
    }

    /// The diagram of `steps`.
    public static func svg(_ steps: [SimulationStep], title: String) -> String {
        let lanes = lanes(steps)
        let width = margin + max(lanes.count, 1) * laneWidth
        let height = head + (steps.count + 1) * rowHeight
        func x(_ part: String) -> Int { margin + (lanes.firstIndex(of: part) ?? 0) * laneWidth + laneWidth / 2 }
        var svg = "<svg class=\"sequence\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(width) \(height)\" "
        svg += "role=\"img\" aria-label=\"\(HTMLText.escape(title))\"><title>\(HTMLText.escape(title))</title>"
        for lane in lanes {
            svg +=
                "<text class=\"lane\" x=\"\(x(lane))\" y=\"20\" text-anchor=\"middle\">\(HTMLText.escape(lane))</text>"
            svg += "<line class=\"lifeline\" x1=\"\(x(lane))\" y1=\"\(head - 10)\" x2=\"\(x(lane))\" y2=\"\(height)\"/>"
        }
        for (index, step) in steps.enumerated() {
            let y = head + (index + 1) * rowHeight
            let from = x(step.from)
            let to = x(step.to)
            svg += "<text class=\"time\" x=\"4\" y=\"\(y)\">\(seconds(step.elapsedMs))</text>"
            let label = HTMLText.escape(step.step)
            let tip = HTMLText.escape(step.step + (step.detail.map { ": " + $0 } ?? ""))
            if from == to {
                svg += "<path class=\"arrow self\" d=\"M\(from) \(y - 8) h24 v10 h-24\"/>"
                svg += "<text class=\"step\" x=\"\(from + 28)\" y=\"\(y)\"><title>\(tip)</title>\(label)</text>"
            } else {
                svg += "<line class=\"arrow\" x1=\"\(from)\" y1=\"\(y)\" x2=\"\(to)\" y2=\"\(y)\"/>"
                let head = to > from ? to - 6 : to + 6
                svg += "<path class=\"head\" d=\"M\(to) \(y) L\(head) \(y - 4) L\(head) \(y + 4) Z\"/>"
                svg += "<text class=\"step\" x=\"\((from + to) / 2)\" y=\"\(y - 4)\" text-anchor=\"middle\">"
                svg += "<title>\(tip)</title>\(label)</text>"
            }
        }
        return svg + "</svg>"
    }

    /// Elapsed time as the diagram's margin writes it: "12.3 s", "4 min 5 s".
    static func seconds(_ milliseconds: Int64) -> String {
        let tenths = milliseconds / 100
        if tenths < 600 { return "\(tenths / 10).\(tenths % 10) s" }
        return "\(milliseconds / 60_000) min \(milliseconds / 1000 % 60) s"
    }
}
