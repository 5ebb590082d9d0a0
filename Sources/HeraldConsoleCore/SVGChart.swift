/// Charts drawn on the server as SVG: the page needs no script to show them, and the console's
/// Content-Security-Policy (no inline style) holds because colours come from classes in the
/// console's stylesheet.
public enum SVGChart {
    /// One series of a chart: a name for the legend and the tooltips, the stylesheet class that
    /// colours it, and one value per bucket.
    public struct Series: Sendable, Hashable {
        public var name: String
        public var cssClass: String
        public var values: [Double]

        public init(name: String, cssClass: String, values: [Double]) {
            self.name = name
            self.cssClass = cssClass
            self.values = values
        }
    }

    /// The size and the words of a chart.
    public struct Frame: Sendable, Hashable {
        /// What the chart shows, read out by screen readers (`aria-label`).
        public var title: String
        /// One label per bucket (a minute, "10:42"); every `labelEvery`-th is drawn.
        public var labels: [String]
        public var labelEvery: Int = 10
        /// The unit of the values, after each number in tooltips ("pushes", "ms").
        public var unit: String
        public var width: Int = 720
        public var height: Int = 180

        public init(title: String, labels: [String], unit: String) {
            self.title = title
            self.labels = labels
            self.unit = unit
        }
    }

    private static let left = 44
    private static let bottom = 22
    private static let top = 8.0

    /// Bars, one per bucket, the series stacked in their order (the first at the bottom).
    public static func stackedBars(_ frame: Frame, _ series: [Series]) -> String {
        let buckets = frame.labels.count
        let totals = (0..<buckets).map { bucket in series.reduce(0) { $0 + value($1, bucket) } }
        let scale = Scale(maximum: totals.max() ?? 0, height: frame.height - bottom - Int(top))
        var svg = open(frame) + axis(frame, scale)
        let step = Double(frame.width - left) / Double(max(buckets, 1))
        for bucket in 0..<buckets {
            var base = 0.0
            let x = Double(left) + Double(bucket) * step
            for line in series {
                let amount = value(line, bucket)
                guard amount > 0 else { continue }
                let y0 = scale.y(base) + top
                let y1 = scale.y(base + amount) + top
                base += amount
                svg += "<rect class=\"\(escape(line.cssClass))\" x=\"\(format(x + 0.5))\" y=\"\(format(y1))\" "
                svg += "width=\"\(format(max(step - 1, 1)))\" height=\"\(format(max(y0 - y1, 0.5)))\">"
                svg += "<title>\(escape(frame.labels[bucket])) \(escape(line.name)): "
                svg += "\(number(amount)) \(escape(frame.unit))</title></rect>"
            }
        }
        return svg + labels(frame, step: step) + "</svg>"
    }

    /// Lines, one per series, over the buckets; a bucket without a value (NaN) breaks the line.
    public static func lines(_ frame: Frame, _ series: [Series]) -> String {
        let buckets = frame.labels.count
        let maximum = series.flatMap(\.values).filter { !$0.isNaN }.max() ?? 0
        let scale = Scale(maximum: maximum, height: frame.height - bottom - Int(top))
        var svg = open(frame) + axis(frame, scale)
        let step = Double(frame.width - left) / Double(max(buckets, 1))
        for line in series {
            var path = ""
            var pen = false
            for bucket in 0..<buckets {
                let amount = bucket < line.values.count ? line.values[bucket] : .nan
                guard !amount.isNaN else {
                    pen = false
                    continue
                }
                let x = Double(left) + (Double(bucket) + 0.5) * step
                path += "\(pen ? "L" : "M")\(format(x)) \(format(scale.y(amount) + top)) "
                pen = true
                svg += "<circle class=\"\(escape(line.cssClass))\" cx=\"\(format(x))\" "
                svg += "cy=\"\(format(scale.y(amount) + top))\" r=\"2\"><title>\(escape(frame.labels[bucket])) "
                svg += "\(escape(line.name)): \(number(amount)) \(escape(frame.unit))</title></circle>"
            }
            if !path.isEmpty {
                svg += "<path class=\"\(escape(line.cssClass)) line\" d=\"\(path.dropLast())\"/>"
            }
        }
        return svg + labels(frame, step: step) + "</svg>"
    }

    /// From values to the chart's pixels: the top of the axis is a round number at or above the
    /// largest value.
    struct Scale {
        let top: Double
        let height: Int

        init(maximum: Double, height: Int) {
            self.height = height
            top = Self.round(maximum)
        }

        /// The pixel row of `value`, 0 at the top.
        func y(_ value: Double) -> Double { Double(height) * (1 - value / top) }

        /// 1, 2 or 5 times a power of ten, at least `value` (and at least 1).
        static func round(_ value: Double) -> Double {
            guard value > 1 else { return 1 }
            var power = 1.0
            while power * 10 <= value { power *= 10 }
            for factor in [1.0, 2, 5, 10] where factor * power >= value { return factor * power }
            return 10 * power
        }
    }

    private static func value(_ series: Series, _ bucket: Int) -> Double {
        guard bucket < series.values.count, !series.values[bucket].isNaN else { return 0 }
        return series.values[bucket]
    }

    private static func open(_ frame: Frame) -> String {
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(frame.width) \(frame.height)\" "
            + "role=\"img\" aria-label=\"\(escape(frame.title))\"><title>\(escape(frame.title))</title>"
    }

    private static func axis(_ frame: Frame, _ scale: Scale) -> String {
        let bottomY = frame.height - bottom
        var svg = "<line class=\"axis\" x1=\"\(left)\" y1=\"\(bottomY)\" x2=\"\(frame.width)\" y2=\"\(bottomY)\"/>"
        svg +=
            "<text class=\"tick\" x=\"\(left - 4)\" y=\"\(bottomY)\" text-anchor=\"end\" dominant-baseline=\"middle\">0</text>"
        // A half line only where it is a whole number: counts have no half pushes.
        let half = scale.top / 2
        for fraction in half.rounded() == half ? [0.5, 1.0] : [1.0] {
            let y = format(scale.y(scale.top * fraction) + top)
            svg += "<line class=\"grid\" x1=\"\(left)\" y1=\"\(y)\" x2=\"\(frame.width)\" y2=\"\(y)\"/>"
            svg += "<text class=\"tick\" x=\"\(left - 4)\" y=\"\(y)\" text-anchor=\"end\" dominant-baseline=\"middle\">"
            svg += "\(number(scale.top * fraction))</text>"
        }
        return svg
    }

    private static func labels(_ frame: Frame, step: Double) -> String {
        var svg = ""
        let every = max(frame.labelEvery, 1)
        let last = frame.labels.count - 1
        // Every `every`-th label, and the last (now), unless it would crowd the one before it.
        for (index, label) in frame.labels.enumerated()
        where index % every == 0 || (index == last && last % every >= every / 2) {
            // The last label ends at the chart's edge instead of running past it.
            let atEnd = index == last
            let x = atEnd ? String(frame.width - 2) : format(Double(left) + (Double(index) + 0.5) * step)
            svg += "<text class=\"tick\" x=\"\(x)\" y=\"\(frame.height - 6)\" "
            svg += "text-anchor=\"\(atEnd ? "end" : "middle")\">\(escape(label))</text>"
        }
        return svg
    }

    /// A value as the chart writes it: whole numbers plain, others with one decimal.
    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : format(value)
    }

    private static func format(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths.rounded() == tenths ? String(Int64(tenths)) : String(tenths)
    }

    private static func escape(_ text: String) -> String { HTMLText.escape(text) }
}

/// Text put into HTML or SVG markup.
public enum HTMLText {
    /// `text` with the five characters that end text or an attribute written as references.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
