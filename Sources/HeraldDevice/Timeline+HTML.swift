import Foundation

extension Timeline {
    /// A self-contained HTML page (inline CSS and SVG, nothing fetched, no script): a sequence
    /// diagram of the flow in causal order, with a time axis on the left that shows each step's
    /// time and every long wait as a labelled gap, one lifeline per component under the name of
    /// the device it runs on (or "servers"), one arrow per step labelled with what travelled and
    /// what the user saw; then the table of every step. A diagram wider or taller than the window
    /// scrolls in its own box, its lanes' headers and its time axis staying in view.
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

    /// The components in the order their lifelines stand within their group (the servers, then
    /// each device's), servers on the left and the user on the right; one the list does not know
    /// stands after these in its group, in order of appearance.
    static let lifelineOrder = [
        "backend", "relay", "apns", "fcm", "push-service", "sdk", "app", "nse", "fcm-service", "service-worker",
        "pushkit", "callkit", "call-screen", "call-notification", "notification-center", "notification", "user",
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
        /* The diagram scrolls in its own box, so that its headers stick to the box's top and its axis to the box's left. */
        .diagram { overflow: auto; width: fit-content; max-width: 100%; max-height: calc(100vh - 48px); border: 1px solid #ddd; border-radius: 4px; }
        .head { position: sticky; top: 0; z-index: 2; display: grid; background: #fff; border-bottom: 1px solid #e3e3e6; font: 11px/1.2 Helvetica, Arial, sans-serif; }
        .head .corner { grid-row: span 2; position: sticky; left: 0; z-index: 1; display: flex; align-items: flex-end; padding: 0 0 8px 8px; background: #fff; color: #555; }
        .head .device { margin: 6px 3px 2px; padding-bottom: 2px; border-bottom: 2px solid #9bb4d8; font-weight: 600; white-space: nowrap; }
        .head .device span { position: sticky; left: \(axisWidth + 6)px; }
        .head .lane { align-self: end; margin: 2px 3px 6px; padding: 2px; text-align: center; overflow-wrap: anywhere; background: #eef3fb; border: 1px solid #9bb4d8; border-radius: 4px; }
        /* Sticky does not apply inside an SVG: the axis is an SVG of its own, laid over the lanes' left edge. */
        .body { display: grid; }
        .body > svg { grid-area: 1 / 1; }
        svg.axis { position: sticky; left: 0; z-index: 1; }
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
    enum Row {
        case gap(Int64)
        case step(TimelineEvent)
    }

    static func rows(_ events: [TimelineEvent]) -> [Row] {
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
    static func shortened(_ text: String, limit: Int = 90) -> String {
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
