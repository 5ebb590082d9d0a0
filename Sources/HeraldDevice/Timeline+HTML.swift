extension Timeline {
    /// A self-contained HTML page: an SVG sequence diagram of the flow (one lifeline per
    /// component, one arrow per step) and the table of every step.
    public func html(title: String) -> String {
        Self.html(title: title, events: all)
    }

    /// The same page for several flows side by side.
    public static func html(title: String, flows: [(name: String, events: [TimelineEvent])]) -> String {
        var page = header(title)
        for flow in flows {
            page +=
                "<section><h2>\(escape(flow.name))</h2>\n" + diagram(flow.events) + table(flow.events)
                + "</section>\n"
        }
        return page + "</body></html>\n"
    }

    static func html(title: String, events: [TimelineEvent]) -> String {
        html(title: title, flows: [(title, events)])
    }

    private static func header(_ title: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
        <style>
        body { font: 14px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #1d1d1f; }
        section { display: inline-block; vertical-align: top; margin: 0 24px 24px 0; }
        table { border-collapse: collapse; margin-top: 12px; font-size: 12px; }
        td, th { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; }
        th { background: #f4f4f6; }
        svg text { font: 11px Helvetica, Arial, sans-serif; }
        </style></head><body>
        <h1>\(escape(title))</h1>

        """
    }

    private static func diagram(_ events: [TimelineEvent]) -> String {
        var components: [String] = []
        for event in events {
            for name in [event.from, event.to] where !components.contains(name) { components.append(name) }
        }
        let column = 130
        let rowHeight = 26
        let top = 40
        let width = max(1, components.count) * column + 40
        let height = top + events.count * rowHeight + 30
        func x(_ name: String) -> Int { 20 + column / 2 + (components.firstIndex(of: name) ?? 0) * column }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\">\n"
        svg += "<defs><marker id=\"arrow\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
        svg += "<path d=\"M0,0 L8,4 L0,8 z\" fill=\"#0a64d8\"/></marker></defs>\n"
        for name in components {
            let center = x(name)
            svg +=
                "<rect x=\"\(center - 58)\" y=\"6\" width=\"116\" height=\"22\" rx=\"4\" fill=\"#eef3fb\" stroke=\"#9bb4d8\"/>"
            svg += "<text x=\"\(center)\" y=\"21\" text-anchor=\"middle\">\(escape(name))</text>\n"
            svg +=
                "<line x1=\"\(center)\" y1=\"28\" x2=\"\(center)\" y2=\"\(height - 10)\" stroke=\"#c8c8cc\" stroke-dasharray=\"4 3\"/>\n"
        }
        for (index, event) in events.enumerated() {
            let y = top + index * rowHeight + 12
            var label = event.step
            if let type = event.pushType { label += " · \(type)" }
            if let priority = event.priority { label += " p\(priority)" }
            let from = x(event.from)
            let to = x(event.to)
            if from == to {
                svg +=
                    "<path d=\"M\(from),\(y - 6) h24 v12 h-22\" fill=\"none\" stroke=\"#0a64d8\" marker-end=\"url(#arrow)\"/>"
                svg += "<text x=\"\(from + 30)\" y=\"\(y + 4)\">\(escape(label))</text>\n"
            } else {
                svg +=
                    "<line x1=\"\(from)\" y1=\"\(y)\" x2=\"\(to)\" y2=\"\(y)\" stroke=\"#0a64d8\" marker-end=\"url(#arrow)\"/>"
                svg += "<text x=\"\((from + to) / 2)\" y=\"\(y - 4)\" text-anchor=\"middle\">\(escape(label))</text>\n"
            }
        }
        return svg + "</svg>\n"
    }

    private static func table(_ events: [TimelineEvent]) -> String {
        var html = "<table><tr><th>elapsed</th><th>step</th><th>from → to</th><th>push type</th>"
        html += "<th>priority</th><th>topic</th><th>payload</th><th>detail</th></tr>\n"
        for event in events {
            let seconds = Double(event.elapsedMs) / 1000
            html += "<tr><td>\(String(seconds)) s</td><td>\(escape(event.step))</td>"
            html += "<td>\(escape(arrow(event)))</td><td>\(escape(event.pushType ?? ""))</td>"
            html += "<td>\(event.priority.map(String.init) ?? "")</td><td>\(escape(event.topic ?? ""))</td>"
            html +=
                "<td>\(event.payloadBytes.map { "\($0) B" } ?? "")</td><td>\(escape(event.detail ?? ""))</td></tr>\n"
        }
        return html + "</table>\n"
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
