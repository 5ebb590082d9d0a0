import Foundation

/// One lifeline of the sequence diagram: a component, the group it stands in (the servers, or the
/// device it runs on) and the name its header shows under that group's header.
struct TimelineLane: Equatable, Sendable {
    /// The component as the timeline names it (`callkit · pad`).
    let component: String
    /// `servers`, `phone` for the first phone, or the device a second phone's view names (`pad`).
    let group: String
    /// The name under the group's header (`callkit`): the group already says which device.
    let name: String
}

extension Timeline {
    /// The width of the time axis on the left, of one lane, and the room left after the last lane.
    static let axisWidth = 100
    static let laneWidth = 88
    private static let rightMargin = 20
    private static let top = 10
    private static let stepHeight = 28
    private static let seenHeight = 14
    private static let gapHeight = 40
    /// About the width of one character of the 11 px labels, to keep a label inside the drawing.
    private static let characterWidth = 6

    /// The lifelines left to right in groups: the servers first, then the first phone, then each
    /// other device in order of appearance, each phone's lanes in `lifelineOrder` (so a second
    /// device's lanes stand in the same order as the first's).
    static func lanes(_ events: [TimelineEvent]) -> [TimelineLane] {
        var seen: [String] = []
        for event in events {
            for name in [event.from, event.to] where !seen.contains(name) { seen.append(name) }
        }
        let lanes = seen.map { component -> TimelineLane in
            if let split = component.range(of: " · "), phoneComponents.contains(String(component[..<split.lowerBound]))
            {
                let name = String(component[..<split.lowerBound])
                return TimelineLane(component: component, group: String(component[split.upperBound...]), name: name)
            }
            let group = phoneComponents.contains(component) ? "phone" : "servers"
            return TimelineLane(component: component, group: group, name: component)
        }
        var groups = ["servers", "phone"]
        for lane in lanes where !groups.contains(lane.group) { groups.append(lane.group) }
        func rank(_ lane: TimelineLane) -> (Int, Int, Int) {
            (
                groups.firstIndex(of: lane.group) ?? 0, lifelineOrder.firstIndex(of: lane.name) ?? lifelineOrder.count,
                seen.firstIndex(of: lane.component) ?? 0
            )
        }
        return lanes.sorted { rank($0) < rank($1) }
    }

    /// The diagram in a container that scrolls both ways: the lanes' headers (each device's name
    /// over its lanes) stay at the top and the time axis at the left, so that wherever the
    /// diagram is scrolled to, what is in view says which lane and which time it is. Sticky
    /// positioning does not apply inside an SVG, so the headers are HTML and the axis is an SVG of
    /// its own laid over the left edge of the lanes' SVG.
    static func diagram(_ events: [TimelineEvent]) -> String {
        let lanes = lanes(events)
        let rows = rows(events)
        let body = rows.reduce(0) { total, row in
            switch row {
            case .gap: total + gapHeight
            case .step(let event): total + stepHeight + (event.userSees == nil ? 0 : seenHeight)
            }
        }
        let width = axisWidth + max(1, lanes.count) * laneWidth + rightMargin
        let height = top + body + 20
        func x(_ component: String) -> Int {
            axisWidth + laneWidth / 2 + (lanes.firstIndex { $0.component == component } ?? 0) * laneWidth
        }
        var html = "<div class=\"diagram\"><div class=\"sheet\" style=\"width: \(width)px\">\n"
        html += head(lanes)
        html += "<div class=\"body\">\n"
        // The lanes first: the drawing's full width, the axis's strip left empty under the axis.
        html += "<svg class=\"lanes\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
        html += "role=\"img\" aria-label=\"sequence diagram\">\n"
        html += "<defs><marker id=\"arrow\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" orient=\"auto\">"
        html += "<path d=\"M0,0 L8,4 L0,8 z\" fill=\"#0a64d8\"/></marker></defs>\n"
        for (index, lane) in lanes.enumerated() {
            if index > 0, lanes[index - 1].group != lane.group {
                let edge = axisWidth + index * laneWidth
                html += "<line x1=\"\(edge)\" y1=\"0\" x2=\"\(edge)\" y2=\"\(height)\" stroke=\"#e3e3e6\"/>\n"
            }
            let center = x(lane.component)
            html += "<line data-lifeline=\"\(escape(lane.component))\" x1=\"\(center)\" y1=\"0\" x2=\"\(center)\" "
            html += "y2=\"\(height - 10)\" stroke=\"#c8c8cc\" stroke-dasharray=\"4 3\"/>\n"
        }
        var axis = "<svg class=\"axis\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(axisWidth)\" "
        axis += "height=\"\(height)\" role=\"img\" aria-label=\"time axis\">\n"
        axis += "<rect width=\"\(axisWidth)\" height=\"\(height)\" fill=\"#fff\"/>"
        // Its right edge, where the lanes slide under it.
        let edge = Double(axisWidth) - 0.5
        axis += "<line x1=\"\(edge)\" y1=\"0\" x2=\"\(edge)\" y2=\"\(height)\" stroke=\"#e3e3e6\"/>\n"
        // The time axis: a line down the left, one tick per step, a break at each long wait.
        axis += "<g class=\"axis\"><line x1=\"\(axisWidth - 12)\" y1=\"0\" x2=\"\(axisWidth - 12)\" "
        axis += "y2=\"\(height - 10)\" stroke=\"#888\"/></g>\n"
        var y = top
        for row in rows {
            switch row {
            case .gap(let span):
                html +=
                    "<rect class=\"gap\" x=\"\(axisWidth)\" y=\"\(y + 4)\" width=\"\(width - axisWidth - 4)\" height=\"\(gapHeight - 8)\" fill=\"#f7f3e8\"/>\n"
                axis += gap(span, y: y)
                y += gapHeight
            case .step(let event):
                html += arrow(event, y: y + 18, width: width, x: x)
                axis += tick(event, y: y + 18)
                y += stepHeight + (event.userSees == nil ? 0 : seenHeight)
            }
        }
        return html + "</svg>\n" + axis + "</svg>\n</div></div></div>\n"
    }

    /// The headers' rows: a corner over the axis, then each group's name over its lanes, then
    /// each lane's name (a long one wraps at its hyphen rather than being cut).
    private static func head(_ lanes: [TimelineLane]) -> String {
        var html = "<div class=\"head\" style=\"grid-template-columns: \(axisWidth)px "
        html += "repeat(\(max(1, lanes.count)), \(laneWidth)px)\">\n<div class=\"corner\">time</div>\n"
        var start = 0
        while start < lanes.count {
            let group = lanes[start].group
            let count = lanes[start...].prefix { $0.group == group }.count
            html += "<div class=\"device\" data-device=\"\(escape(group))\" style=\"grid-column: span \(count)\">"
            html += "<span>\(escape(group))</span></div>\n"
            start += count
        }
        for lane in lanes {
            html += "<div class=\"lane\" data-lane=\"\(escape(lane.component))\" data-device=\"\(escape(lane.group))\" "
            html += "title=\"\(escape(lane.component))\">\(escape(lane.name))</div>\n"
        }
        return html + "</div>\n"
    }

    /// A step on the time axis: its tick and its time, with the whole step as the tooltip.
    private static func tick(_ event: TimelineEvent, y: Int) -> String {
        var svg = "<g class=\"step\"" + attributes(event) + "><title>\(escape(Timeline.line(event)))</title>"
        svg += "<line x1=\"\(axisWidth - 16)\" y1=\"\(y)\" x2=\"\(axisWidth - 8)\" y2=\"\(y)\" stroke=\"#888\"/>"
        svg += "<text class=\"time\" x=\"\(axisWidth - 20)\" y=\"\(y + 4)\" text-anchor=\"end\">"
        return svg + "\(clockTime(event.elapsedMs))</text></g>\n"
    }

    /// A long wait on the time axis: the axis broken (two short slants across it) and how long.
    private static func gap(_ span: Int64, y: Int) -> String {
        let middle = y + gapHeight / 2
        var svg = "<g class=\"gap\" data-gap-ms=\"\(span)\">"
        svg += "<rect x=\"4\" y=\"\(y + 4)\" width=\"\(axisWidth - 4)\" height=\"\(gapHeight - 8)\" fill=\"#f7f3e8\"/>"
        svg +=
            "<path d=\"M\(axisWidth - 18),\(middle - 2) l12,-6 M\(axisWidth - 18),\(middle + 6) l12,-6\" stroke=\"#7a6420\" stroke-width=\"2\"/>"
        // On two lines, to fit the axis's width.
        svg += "<text class=\"gap\" x=\"8\" y=\"\(middle - 2)\">\(escape(duration(span)))"
        return svg + "<tspan x=\"8\" dy=\"13\">later</tspan></text></g>\n"
    }

    private static func attributes(_ event: TimelineEvent) -> String {
        var html = " data-elapsed-ms=\"\(event.elapsedMs)\" data-step=\"\(escape(event.step))\""
        if let subject = event.subject { html += " data-subject=\"\(escape(subject))\"" }
        if let stage = event.stage { html += " data-stage=\"\(stage.rawValue)\"" }
        return html
    }

    /// A step's arrow, labelled with the step and what travelled, and under it what the user saw.
    private static func arrow(_ event: TimelineEvent, y: Int, width: Int, x: (String) -> Int) -> String {
        var label = event.step
        var facts: [String] = []
        if let type = event.pushType { facts.append(type) }
        if let priority = event.priority { facts.append(priority.description) }
        if let bytes = event.payloadBytes { facts.append("\(bytes) B") }
        if !facts.isEmpty { label += " · " + facts.joined(separator: " ") }
        let from = x(event.from)
        let to = x(event.to)
        // Where a text's middle stands: on an arrow, halfway along it; beside a step a component
        // takes by itself, starting right of the loop. Either way kept right of the axis (which
        // would cover it) and inside the drawing.
        func center(_ text: String) -> Int {
            let half = text.count * characterWidth / 2
            let wanted = from == to ? from + 30 + half : (from + to) / 2
            return max(axisWidth + 4 + half, min(wanted, width - 8 - half))
        }
        var svg = "<g class=\"arrow\"" + attributes(event) + "><title>\(escape(Timeline.line(event)))</title>"
        if from == to {
            svg +=
                "<path d=\"M\(from),\(y - 6) h24 v12 h-22\" fill=\"none\" stroke=\"#0a64d8\" marker-end=\"url(#arrow)\"/>"
        } else {
            svg +=
                "<line x1=\"\(from)\" y1=\"\(y)\" x2=\"\(to)\" y2=\"\(y)\" stroke=\"#0a64d8\" marker-end=\"url(#arrow)\"/>"
        }
        svg += "<text class=\"label\" x=\"\(center(label))\" y=\"\(from == to ? y + 4 : y - 4)\" "
        svg += "text-anchor=\"middle\">\(escape(label))</text>"
        if let seen = event.userSees {
            let text = "“" + shortened(seen) + "”"
            svg +=
                "<text class=\"sees\" x=\"\(center(text))\" y=\"\(y + 15)\" text-anchor=\"middle\">\(escape(text))</text>"
        }
        return svg + "</g>\n"
    }
}
