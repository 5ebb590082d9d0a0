import Foundation

extension Timeline {
    /// A self-contained HTML page (inline CSS and SVG, nothing fetched): a sequence diagram of the
    /// flow in causal order, with a time axis on the left that shows each step's time and every
    /// long wait as a labelled gap, one lifeline per component, one arrow per step labelled with
    /// what travelled and what the user saw; then the table of every step.
    ///
    /// - Parameter clock: a sentence on the clock the times were taken on (say, that it is
    ///   simulated), shown under the title.
    public func html(title: String, clock: String? = nil) -> String {
        Self.html(title: title, clock: clock, events: all)
    }

    static func html(title: String, clock: String?, events: [TimelineEvent]) -> String {
        var page = header(title)
        page += "<p class=\"summary\">" + escape(summary(events))
        if let clock { page += " " + escape(clock) }
        page += "</p>\n"
        page += diagram(events) + table(events)
        return page + "</body></html>\n"
    }

    /// A wait between two steps at least this long is drawn as a labelled gap on the time axis.
    static let gapThresholdMs: Int64 = 1000

    /// The components in the order their lifelines stand, servers on the left and the user on the
    /// right; one the list does not know stands after these, in order of appearance.
    static let lifelineOrder = [
        "backend", "relay", "apns", "fcm", "sdk", "app", "nse", "fcm-service", "pushkit", "callkit",
        "call-screen", "notification-center", "user",
    ]

    private static func summary(_ events: [TimelineEvent]) -> String {
        let span = (events.last?.elapsedMs ?? 0) - (events.first?.elapsedMs ?? 0)
        let delivered = events.filter { $0.stage == .delivered && $0.pushType != nil }.count
        return "\(events.count) steps, \(delivered) push(es) delivered, over \(duration(span))."
    }

    private static func header(_ title: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
        <style>
        body { font: 14px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #1d1d1f; }
        h1 { font-size: 22px; margin: 0 0 4px; }
        .summary { color: #555; margin: 0 0 12px; }
        table { border-collapse: collapse; margin-top: 16px; font-size: 12px; }
        td, th { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
        th { background: #f4f4f6; }
        td.time { font-variant-numeric: tabular-nums; white-space: nowrap; }
        td.none { color: #aaa; }
        td.sees { font-style: italic; }
        tr.gap td { background: #f7f3e8; color: #7a6420; font-style: italic; }
        svg text { font: 11px Helvetica, Arial, sans-serif; }
        svg text.label { paint-order: stroke; stroke: #fff; stroke-width: 3px; }
        svg text.sees { font-style: italic; fill: #6b3d00; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
        svg text.time { fill: #555; font-variant-numeric: tabular-nums; }
        svg text.gap { fill: #7a6420; font-style: italic; }
        </style></head><body>
        <h1>\(escape(title))</h1>

        """
    }

    /// Where each step and each gap stands, top to bottom.
    private enum Row {
        case gap(Int64)
        case step(TimelineEvent)
    }

    private static func rows(_ events: [TimelineEvent]) -> [Row] {
        var rows: [Row] = []
        var previous: Int64?
        for event in events {
            if let previous, event.elapsedMs - previous >= gapThresholdMs {
                rows.append(.gap(event.elapsedMs - previous))
            }
            rows.append(.step(event))
            previous = event.elapsedMs
        }
        return rows
    }

    private static func diagram(_ events: [TimelineEvent]) -> String {
        var components = lifelineOrder.filter { name in events.contains { $0.from == name || $0.to == name } }
        for event in events {
            for name in [event.from, event.to] where !components.contains(name) { components.append(name) }
        }
        let axis = 110
        let column = 150
        let top = 44
        let stepHeight = 28
        let seenHeight = 14
        let gapHeight = 40
        let rows = rows(events)
        let body = rows.reduce(0) { total, row in
            switch row {
            case .gap: total + gapHeight
            case .step(let event): total + stepHeight + (event.userSees == nil ? 0 : seenHeight)
            }
        }
        let width = axis + max(1, components.count) * column + 20
        let height = top + body + 20
        func x(_ name: String) -> Int { axis + column / 2 + (components.firstIndex(of: name) ?? 0) * column }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
        svg += "role=\"img\" aria-label=\"sequence diagram\">\n"
        svg += "<defs><marker id=\"arrow\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
        svg += "<path d=\"M0,0 L8,4 L0,8 z\" fill=\"#0a64d8\"/></marker></defs>\n"
        // The time axis: a line down the left, one tick per step, a break at each long wait.
        svg += "<g class=\"axis\"><text class=\"time\" x=\"8\" y=\"21\">time</text>"
        svg += "<line x1=\"\(axis - 12)\" y1=\"30\" x2=\"\(axis - 12)\" y2=\"\(height - 10)\" stroke=\"#888\"/></g>\n"
        for name in components {
            let center = x(name)
            svg +=
                "<rect x=\"\(center - 66)\" y=\"6\" width=\"132\" height=\"22\" rx=\"4\" fill=\"#eef3fb\" stroke=\"#9bb4d8\"/>"
            svg += "<text x=\"\(center)\" y=\"21\" text-anchor=\"middle\">\(escape(name))</text>\n"
            svg +=
                "<line x1=\"\(center)\" y1=\"28\" x2=\"\(center)\" y2=\"\(height - 10)\" stroke=\"#c8c8cc\" stroke-dasharray=\"4 3\"/>\n"
        }
        var y = top
        for row in rows {
            switch row {
            case .gap(let span):
                let middle = y + gapHeight / 2
                svg += "<g class=\"gap\" data-gap-ms=\"\(span)\">"
                svg +=
                    "<rect x=\"4\" y=\"\(y + 4)\" width=\"\(width - 8)\" height=\"\(gapHeight - 8)\" fill=\"#f7f3e8\"/>"
                // The axis broken: two short slants across it.
                svg +=
                    "<path d=\"M\(axis - 18),\(middle - 2) l12,-6 M\(axis - 18),\(middle + 6) l12,-6\" stroke=\"#7a6420\" stroke-width=\"2\"/>"
                svg +=
                    "<text class=\"gap\" x=\"\(axis + 8)\" y=\"\(middle + 4)\">\(escape(duration(span))) later</text></g>\n"
                y += gapHeight
            case .step(let event):
                svg += step(event, y: y, axis: axis, width: width, x: x)
                y += stepHeight + (event.userSees == nil ? 0 : seenHeight)
            }
        }
        return svg + "</svg>\n"
    }

    private static func step(
        _ event: TimelineEvent,
        y top: Int,
        axis: Int,
        width: Int,
        x: (String) -> Int
    ) -> String {
        let y = top + 18
        var label = event.step
        var facts: [String] = []
        if let type = event.pushType { facts.append(type) }
        if let priority = event.priority { facts.append(priority.description) }
        if let bytes = event.payloadBytes { facts.append("\(bytes) B") }
        if !facts.isEmpty { label += " · " + facts.joined(separator: " ") }
        var svg = "<g class=\"step\" data-elapsed-ms=\"\(event.elapsedMs)\" data-step=\"\(escape(event.step))\""
        if let subject = event.subject { svg += " data-subject=\"\(escape(subject))\"" }
        if let stage = event.stage { svg += " data-stage=\"\(stage.rawValue)\"" }
        svg += "><title>\(escape(Timeline.line(event)))</title>"
        svg += "<line x1=\"\(axis - 16)\" y1=\"\(y)\" x2=\"\(axis - 8)\" y2=\"\(y)\" stroke=\"#888\"/>"
        svg +=
            "<text class=\"time\" x=\"\(axis - 20)\" y=\"\(y + 4)\" text-anchor=\"end\">\(clockTime(event.elapsedMs))</text>"
        let from = x(event.from)
        let to = x(event.to)
        let seenX: Int
        if from == to {
            svg +=
                "<path d=\"M\(from),\(y - 6) h24 v12 h-22\" fill=\"none\" stroke=\"#0a64d8\" marker-end=\"url(#arrow)\"/>"
            svg += "<text class=\"label\" x=\"\(from + 30)\" y=\"\(y + 4)\">\(escape(label))</text>"
            seenX = from + 30
        } else {
            svg +=
                "<line x1=\"\(from)\" y1=\"\(y)\" x2=\"\(to)\" y2=\"\(y)\" stroke=\"#0a64d8\" marker-end=\"url(#arrow)\"/>"
            svg +=
                "<text class=\"label\" x=\"\((from + to) / 2)\" y=\"\(y - 4)\" text-anchor=\"middle\">\(escape(label))</text>"
            seenX = (from + to) / 2
        }
        if let seen = event.userSees {
            // Under the arrow, kept inside the drawing: an arrow to the rightmost lifeline has
            // less room on its right than the text needs (about 6 px a character).
            let text = "“" + shortened(seen) + "”"
            let half = text.count * 6 / 2
            let center = min(from == to ? seenX + half : seenX, width - 8 - half)
            svg +=
                "<text class=\"sees\" x=\"\(center)\" y=\"\(y + 15)\" text-anchor=\"middle\">\(escape(text))</text>"
        }
        return svg + "</g>\n"
    }

    private static func table(_ events: [TimelineEvent]) -> String {
        var html = "<table><thead><tr><th>time</th><th>from → to</th><th>step</th>"
        html += "<th>push (type, priority, topic, size)</th><th>the user sees</th><th>detail</th></tr></thead><tbody>\n"
        // A cell with nothing to say says so, rather than staying blank.
        func cell(_ text: String?, _ kind: String = "") -> String {
            guard let text, !text.isEmpty else { return "<td class=\"none\">—</td>" }
            return "<td\(kind.isEmpty ? "" : " class=\"\(kind)\"")>\(escape(text))</td>"
        }
        for row in rows(events) {
            switch row {
            case .gap(let span):
                html += "<tr class=\"gap\"><td colspan=\"6\">\(escape(duration(span))) later</td></tr>\n"
            case .step(let event):
                var push: [String] = []
                if let type = event.pushType { push.append(type) }
                if let priority = event.priority { push.append("priority \(priority.value)") }
                if let topic = event.topic { push.append(topic) }
                if let bytes = event.payloadBytes { push.append("\(bytes) B") }
                var detail = event.detail ?? ""
                if let reported = event.reportedMs, reported != event.elapsedMs {
                    detail += (detail.isEmpty ? "" : "; ") + "\(event.from) recorded it at \(clockTime(reported))"
                }
                html += "<tr>" + cell(clockTime(event.elapsedMs), "time") + cell(arrow(event)) + cell(event.step)
                html += cell(push.joined(separator: ", ")) + cell(event.userSees, "sees") + cell(detail) + "</tr>\n"
            }
        }
        return html + "</tbody></table>\n"
    }

    /// `m:ss.mmm` since the flow began (negative for a clock that reported a time before it).
    static func clockTime(_ ms: Int64) -> String {
        let sign = ms < 0 ? "-" : ""
        let value = abs(ms)
        let minutes = value / 60_000
        let seconds = (value % 60_000) / 1000
        let millis = value % 1000
        return sign + "\(minutes):" + (seconds < 10 ? "0" : "") + "\(seconds)."
            + String(repeating: "0", count: 3 - String(millis).count) + "\(millis)"
    }

    /// `4 min 0.2 s`, `1.2 s`, `35 ms`.
    static func duration(_ ms: Int64) -> String {
        if ms < 1000 { return "\(ms) ms" }
        let minutes = ms / 60_000
        let seconds = String(format: "%.1f s", Double(ms % 60_000) / 1000)
        return minutes == 0 ? seconds : "\(minutes) min \(seconds)"
    }

    /// What the user saw, cut to fit an arrow (the whole text is in the step's tooltip and the table).
    private static func shortened(_ text: String, limit: Int = 90) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
