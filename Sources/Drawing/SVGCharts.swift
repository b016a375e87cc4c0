import Foundation

/// Server-drawn charts: small pure functions from numbers to SVG text. Every piece of text
/// that comes from data is escaped here, so templates may insert the result with `{{{svg}}}`.
/// Each chart has a `<title>` and an aria-label, axes that say their unit, and marks with a
/// class (`bar`, `point`, `slice`) and their own `<title>` that tests can count.
public enum SVG {
    /// Okabe–Ito: told apart with the common colour-vision deficiencies.
    public static let palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]

    /// Safety levels as the original apps name them, in the palette's colours.
    public static func safetyColor(_ level: String?) -> String {
        switch level {
        case "Green": "#009E73"
        case "Amber": "#E69F00"
        case "Red": "#D55E00"
        default: "#8c8c8c"
        }
    }

    /// Text and attribute escaping for XML.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters are not allowed in XML 1.0.
                if c.value < 0x20 && c != "\n" && c != "\t" { out += " " } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }

    /// Coordinates with one decimal: short, and exact enough on screen.
    static func n(_ value: Double) -> String {
        let r = (value * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(format: "%.1f", r)
    }

    /// Numbers as people read them: integers without decimals, others with one or two.
    public static func number(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int(value)) }
        return abs(value) >= 100 ? String(format: "%.0f", value) : String(format: "%.1f", value)
    }

    static func open(_ title: String, width: Int, height: Int, cssClass: String) -> String {
        let t = escape(title)
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart \(cssClass)\" viewBox=\"0 0 \(width) \(height)\" "
            + "role=\"img\" aria-label=\"\(t)\" preserveAspectRatio=\"xMidYMid meet\"><title>\(t)</title>"
    }

    /// Round axis maximum and tick step (1, 2 or 5 times a power of ten) for 0...max.
    /// Counts get whole-number ticks (no "0.2 boardings").
    static func ticks(max: Double, count: Int = 5, wholeNumbers: Bool = false) -> [Double] {
        let top = max > 0 ? max : 1
        let raw = wholeNumbers ? Swift.max(top / Double(count), 1) : top / Double(count)
        let power = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= raw } ?? raw
        return (0...Int((top / step).rounded(.up))).map { Double($0) * step }
    }
}

/// One labelled value of a chart.
public struct ChartValue: Sendable, Equatable {
    public let label: String
    public let value: Double
    public init(_ label: String, _ value: Double) {
        self.label = label
        self.value = value
    }
}

extension SVG {
    /// Vertical bars (one per value, in order) with a value axis in `unit`.
    public static func bars(title: String, values: [ChartValue], unit: String, categoryAxis: String,
                            width: Int = 640, height: Int = 260, color: String = palette[0]) -> String {
        let left = 48.0, right = 12.0, top = 12.0, bottom = 44.0
        let plotW = Double(width) - left - right, plotH = Double(height) - top - bottom
        let ticks = ticks(max: values.map(\.value).max() ?? 0, wholeNumbers: values.allSatisfy { $0.value == $0.value.rounded() })
        let top_ = ticks.last!
        var s = open(title, width: width, height: height, cssClass: "bars")
        s += axisY(ticks: ticks, left: left, top: top, plotW: plotW, plotH: plotH, unit: unit)
        let slot = plotW / Double(max(values.count, 1))
        let barW = max(slot * 0.8, 1)
        let labelEvery = max(1, Int((Double(values.count) / (plotW / 56)).rounded(.up)))
        for (i, v) in values.enumerated() {
            let h = plotH * v.value / top_
            let x = left + Double(i) * slot + (slot - barW) / 2
            s += "<rect class=\"bar\" x=\"\(n(x))\" y=\"\(n(top + plotH - h))\" width=\"\(n(barW))\" height=\"\(n(h))\" fill=\"\(color)\">"
                + "<title>\(escape(v.label)): \(escape(number(v.value))) \(escape(unit))</title></rect>"
            if i % labelEvery == 0 {
                s += "<text x=\"\(n(left + Double(i) * slot + slot / 2))\" y=\"\(n(top + plotH + 14))\" text-anchor=\"middle\" class=\"tick\">\(escape(short(v.label)))</text>"
            }
        }
        s += "<text x=\"\(n(left + plotW / 2))\" y=\"\(height - 6)\" text-anchor=\"middle\" class=\"axis-label\">\(escape(categoryAxis))</text>"
        return s + "</svg>"
    }

    /// Horizontal bars, for long labels (violation codes, species): one row per value.
    public static func horizontalBars(title: String, values: [ChartValue], unit: String,
                                      width: Int = 640, color: String = palette[0]) -> String {
        let rowH = 26.0, left = 170.0, right = 70.0, top = 8.0, bottom = 30.0
        let height = Int(top + bottom + rowH * Double(max(values.count, 1)))
        let plotW = Double(width) - left - right
        let top_ = max(values.map(\.value).max() ?? 0, 1e-9)
        var s = open(title, width: width, height: height, cssClass: "hbars")
        for (i, v) in values.enumerated() {
            let y = top + Double(i) * rowH
            let w = plotW * v.value / top_
            s += "<text x=\"\(n(left - 6))\" y=\"\(n(y + rowH / 2 + 4))\" text-anchor=\"end\" class=\"tick\">\(escape(short(v.label, 24)))</text>"
            s += "<rect class=\"bar\" x=\"\(n(left))\" y=\"\(n(y + 3))\" width=\"\(n(w))\" height=\"\(n(rowH - 6))\" fill=\"\(color)\">"
                + "<title>\(escape(v.label)): \(escape(number(v.value))) \(escape(unit))</title></rect>"
            s += "<text x=\"\(n(left + w + 4))\" y=\"\(n(y + rowH / 2 + 4))\" class=\"value\">\(escape(number(v.value)))</text>"
        }
        s += "<line x1=\"\(n(left))\" y1=\"\(n(top))\" x2=\"\(n(left))\" y2=\"\(n(Double(height) - bottom))\" class=\"axis\"/>"
        s += "<text x=\"\(n(left + plotW / 2))\" y=\"\(height - 8)\" text-anchor=\"middle\" class=\"axis-label\">\(escape(unit))</text>"
        return s + "</svg>"
    }

    /// A line over categories; `nil` values leave a gap (no point).
    public static func line(title: String, labels: [String], values: [Double?], unit: String, categoryAxis: String,
                            maxValue: Double? = nil, width: Int = 640, height: Int = 260, color: String = palette[0]) -> String {
        let left = 48.0, right = 12.0, top = 12.0, bottom = 44.0
        let plotW = Double(width) - left - right, plotH = Double(height) - top - bottom
        let ticks = ticks(max: maxValue ?? (values.compactMap { $0 }.max() ?? 0))
        let top_ = ticks.last!
        var s = open(title, width: width, height: height, cssClass: "line")
        s += axisY(ticks: ticks, left: left, top: top, plotW: plotW, plotH: plotH, unit: unit)
        let slot = plotW / Double(max(labels.count, 1))
        func x(_ i: Int) -> Double { left + Double(i) * slot + slot / 2 }
        func y(_ v: Double) -> Double { top + plotH - plotH * v / top_ }
        var path = "", pen = false
        for (i, v) in values.enumerated() {
            guard let v else { pen = false; continue }
            path += (pen ? "L" : "M") + n(x(i)) + " " + n(y(v))
            pen = true
        }
        if !path.isEmpty { s += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>" }
        let labelEvery = max(1, Int((Double(labels.count) / (plotW / 56)).rounded(.up)))
        for (i, label) in labels.enumerated() {
            if let v = values[i] {
                s += "<circle class=\"point\" cx=\"\(n(x(i)))\" cy=\"\(n(y(v)))\" r=\"4\" fill=\"\(color)\">"
                    + "<title>\(escape(label)): \(escape(number(v))) \(escape(unit))</title></circle>"
            }
            if i % labelEvery == 0 {
                s += "<text x=\"\(n(x(i)))\" y=\"\(n(top + plotH + 14))\" text-anchor=\"middle\" class=\"tick\">\(escape(short(label)))</text>"
            }
        }
        s += "<text x=\"\(n(left + plotW / 2))\" y=\"\(height - 6)\" text-anchor=\"middle\" class=\"axis-label\">\(escape(categoryAxis))</text>"
        return s + "</svg>"
    }

    /// A donut of shares with its legend; `colors` parallel to `values`.
    public static func donut(title: String, values: [ChartValue], colors: [String], unit: String,
                             width: Int = 360, height: Int = 220) -> String {
        let total = values.reduce(0) { $0 + max($1.value, 0) }
        let cx = 110.0, cy = Double(height) / 2, r = 90.0, inner = 52.0
        var s = open(title, width: width, height: height, cssClass: "donut")
        var angle = -Double.pi / 2
        for (i, v) in values.enumerated() where v.value > 0 && total > 0 {
            let share = v.value / total
            let label = "<title>\(escape(v.label)): \(escape(number(v.value))) \(escape(unit)) (\(String(format: "%.0f", share * 100))%)</title>"
            if share >= 0.9999 {
                // One slice: a ring (an arc cannot start and end at the same point).
                s += "<circle class=\"slice\" cx=\"\(n(cx))\" cy=\"\(n(cy))\" r=\"\(n((r + inner) / 2))\" fill=\"none\" stroke=\"\(colors[i])\" stroke-width=\"\(n(r - inner))\">\(label)</circle>"
                continue
            }
            let end = angle + share * 2 * .pi
            let large = share > 0.5 ? 1 : 0
            func p(_ radius: Double, _ a: Double) -> String { n(cx + radius * cos(a)) + " " + n(cy + radius * sin(a)) }
            s += "<path class=\"slice\" fill=\"\(colors[i])\" d=\"M\(p(r, angle))A\(n(r)) \(n(r)) 0 \(large) 1 \(p(r, end))"
                + "L\(p(inner, end))A\(n(inner)) \(n(inner)) 0 \(large) 0 \(p(inner, angle))Z\">\(label)</path>"
            angle = end
        }
        s += "<text x=\"\(n(cx))\" y=\"\(n(cy + 5))\" text-anchor=\"middle\" class=\"total\">\(escape(number(total)))</text>"
        s += legend(values.enumerated().map { ($0.element.label + " · " + number($0.element.value), colors[$0.offset]) }, x: 226, y: 30)
        return s + "</svg>"
    }

    /// Swatches and labels, one per line.
    static func legend(_ entries: [(String, String)], x: Double, y: Double) -> String {
        var s = "<g class=\"legend\">"
        for (i, (label, color)) in entries.enumerated() {
            let top = y + Double(i) * 22
            s += "<rect x=\"\(n(x))\" y=\"\(n(top))\" width=\"14\" height=\"14\" fill=\"\(color)\"/>"
                + "<text x=\"\(n(x + 20))\" y=\"\(n(top + 12))\">\(escape(label))</text>"
        }
        return s + "</g>"
    }

    static func axisY(ticks: [Double], left: Double, top: Double, plotW: Double, plotH: Double, unit: String) -> String {
        let top_ = ticks.last!
        var s = ""
        for t in ticks {
            let y = top + plotH - plotH * t / top_
            s += "<line x1=\"\(n(left))\" y1=\"\(n(y))\" x2=\"\(n(left + plotW))\" y2=\"\(n(y))\" class=\"grid\"/>"
                + "<text x=\"\(n(left - 6))\" y=\"\(n(y + 4))\" text-anchor=\"end\" class=\"tick\">\(escape(number(t)))</text>"
        }
        s += "<line x1=\"\(n(left))\" y1=\"\(n(top))\" x2=\"\(n(left))\" y2=\"\(n(top + plotH))\" class=\"axis\"/>"
        s += "<text transform=\"translate(12 \(n(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\" class=\"axis-label\">\(escape(unit))</text>"
        return s
    }

    static func short(_ text: String, _ limit: Int = 10) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }
}
