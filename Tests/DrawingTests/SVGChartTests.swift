import Foundation
import FoundationXML
import Testing

@testable import Drawing

#if canImport(FoundationXML)
#endif


/// Parses SVG as XML (so any escaping mistake fails) and counts elements by class, and
/// collects the text of `<title>`s.
final class SVGProbe: NSObject, XMLParserDelegate {
    var classes: [String: Int] = [:]
    var titles: [String] = []
    var hrefs: [String] = []
    var root: [String: String] = [:]
    private var inTitle = false, text = ""

    static func parse(_ svg: String) -> SVGProbe? {
        let probe = SVGProbe()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = probe
        return parser.parse() ? probe : nil
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if root.isEmpty { root = attributes.merging(["element": name]) { a, _ in a } }
        for c in (attributes["class"] ?? "").split(separator: " ") { classes[String(c), default: 0] += 1 }
        if let href = attributes["href"] { hrefs.append(href) }
        if name == "title" { inTitle = true; text = "" }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { if inTitle { text += string } }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "title" { inTitle = false; titles.append(text) }
    }
}

@Suite struct SVGChartTests {
    let nasty = "<script>alert(\"x\") & 'y'</script>"

    @Test func barsDrawOneBarPerValueWithAccessibleTitles() throws {
        let values = (1...7).map { ChartValue("2026-01-0\($0)", Double($0 * 3)) }
        let svg = SVG.bars(title: "Boardings per week", values: values, unit: "boardings", categoryAxis: "week")
        let probe = try #require(SVGProbe.parse(svg))
        #expect(probe.root["element"] == "svg")
        #expect(probe.root["role"] == "img")
        #expect(probe.root["aria-label"] == "Boardings per week")
        #expect(probe.classes["bar"] == 7)
        #expect(probe.titles.first == "Boardings per week")
        #expect(probe.titles.contains("2026-01-07: 21 boardings"))
        // The value axis says its unit.
        #expect(svg.contains(">boardings</text>"))
    }

    @Test func tallestBarFillsTheAxisAndZeroBarsAreFlat() throws {
        let svg = SVG.bars(title: "t", values: [ChartValue("a", 0), ChartValue("b", 10)], unit: "u", categoryAxis: "c")
        #expect(svg.contains("height=\"0\""))
        #expect(SVGProbe.parse(svg)?.classes["bar"] == 2)
    }

    @Test func everyKindOfChartEscapesDataText() throws {
        let values = [ChartValue(nasty, 2), ChartValue("ok", 1)]
        let charts = [
            SVG.bars(title: nasty, values: values, unit: nasty, categoryAxis: nasty),
            SVG.horizontalBars(title: nasty, values: values, unit: nasty),
            SVG.line(title: nasty, labels: [nasty, "b"], values: [1, 2], unit: nasty, categoryAxis: nasty),
            SVG.donut(title: nasty, values: values, colors: ["#000", "#111"], unit: nasty),
        ]
        for svg in charts {
            #expect(!svg.contains("<script"))
            let probe = try #require(SVGProbe.parse(svg), "does not parse: \(svg.prefix(200))")
            #expect(probe.root["aria-label"] == nasty)
            #expect(probe.titles.first == nasty)
            #expect(probe.titles.contains { $0.hasPrefix(nasty + ": ") })
        }
    }

    @Test func lineLeavesGapsForMissingValues() throws {
        let svg = SVG.line(title: "rate", labels: ["a", "b", "c", "d"], values: [50, nil, 100, 0], unit: "%",
                           categoryAxis: "month", maxValue: 100)
        let probe = try #require(SVGProbe.parse(svg))
        #expect(probe.classes["point"] == 3)
        // Two runs of the line: a move, then a new move after the gap.
        #expect(svg.components(separatedBy: "M").count - 1 >= 2)
    }

    @Test func donutHasOneSlicePerNonZeroShareAndALegend() throws {
        let values = [ChartValue("Green", 3), ChartValue("Amber", 0), ChartValue("Red", 1)]
        let svg = SVG.donut(title: "Safety", values: values, colors: values.map { SVG.safetyColor($0.label) }, unit: "boardings")
        let probe = try #require(SVGProbe.parse(svg))
        #expect(probe.classes["slice"] == 2)
        #expect(probe.classes["legend"] == 1)
        #expect(probe.titles.contains("Green: 3 boardings (75%)"))
        let single = SVG.donut(title: "S", values: [ChartValue("Green", 5)], colors: ["#009E73"], unit: "b")
        #expect(SVGProbe.parse(single)?.classes["slice"] == 1)
    }

    @Test func mapLinksEachPointToItsReportAndClipsLand() throws {
        let view = MapView(lonMin: 9, lonMax: 10, latMin: -1, latMax: 0)
        let land = [MapArea(name: "land", ring: [(8, -3), (9.5, -3), (9.5, 3), (8, 3)]),
                    MapArea(name: "far away", ring: [(100, 10), (101, 10), (101, 11)])]
        let points = [MapPoint(lon: 9.2, lat: -0.5, color: SVG.safetyColor("Red"), href: "/boardings/r-1", title: "Boarding r-1"),
                      MapPoint(lon: 9.8, lat: -0.2, color: "#000\"><script>", href: "/boardings/a%20b&c", title: nasty),
                      MapPoint(lon: 9.5, lat: -0.4, color: "#009E73", href: nil, title: "no page")]
        let svg = SVG.map(title: "Map", view: view, land: land, areas: [MapArea(name: nasty, ring: [(9, -1), (10, -1), (10, 0)])],
                          points: points, bins: [])
        let probe = try #require(SVGProbe.parse(svg))
        #expect(probe.classes["point"] == 3)
        #expect(probe.classes["mpa"] == 1)
        #expect(probe.hrefs == ["/boardings/r-1", "/boardings/a%20b&c"])
        #expect(probe.titles.contains(nasty) && probe.titles.contains("no page"))
        #expect(probe.titles.contains(nasty + " (protected area)"))
        // The land in view is drawn, clipped to the canvas; the far-away ring is not drawn.
        let landPaths = svg.components(separatedBy: "<g class=\"land\"")[1].components(separatedBy: "</g>")[0]
        #expect(landPaths.components(separatedBy: "<path").count - 1 == 1)
        for number in landPaths.split(whereSeparator: { !"-0123456789.".contains($0) }).compactMap({ Double($0) }) {
            #expect(number >= -5 && number <= 645)
        }
    }

    @Test func mapBinsShowCountsInsteadOfPoints() throws {
        let view = MapView(lonMin: 0, lonMax: 1, latMin: 0, latMax: 1)
        let bins = [MapBin(lon: 0.5, lat: 0.5, counts: ["Green": 600, "Red": 2])]
        let probe = try #require(SVGProbe.parse(SVG.map(title: "M", view: view, land: [], areas: [], points: [], bins: bins)))
        #expect(probe.classes["bin"] == 1)
        #expect(probe.classes["point"] == nil)
        #expect(probe.titles.contains("602 boardings here (600 Green, 2 Red)"))
    }

    @Test func projectionKeepsTheDataInsideTheCanvas() {
        let view = MapView(lonMin: -91.5, lonMax: -89, latMin: -1.5, latMax: 0.8)
        for (lon, lat) in [(-91.5, -1.5), (-89.0, 0.8), (-90.2, -0.3)] {
            #expect((0...view.width).contains(view.x(lon)))
            #expect((0...view.height).contains(view.y(lat)))
        }
    }
}

extension SVGChartTests {
    @Test func countAxesHaveWholeNumberTicks() {
        #expect(SVG.ticks(max: 1, wholeNumbers: true) == [0, 1])
        #expect(SVG.ticks(max: 1).count == 6)
        #expect(SVG.ticks(max: 37, wholeNumbers: true) == [0, 10, 20, 30, 40])
    }
}
