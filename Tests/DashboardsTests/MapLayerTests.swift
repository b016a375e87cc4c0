import Drawing
import Testing

@testable import Dashboards

/// A boarding on a dashboard's map: a dot of its safety level's colour that links to its
/// report, the id percent-encoded into the path (the SVG escapes it again as an attribute).
@Suite struct MapLayerTests {
    @Test func aBoardingLinksToItsReportInItsSafetyColour() {
        let red = MapLayer.Boarding(id: "r-1", lon: 9.2, lat: -0.5, level: "Red").point
        #expect(red.href == "/boardings/r-1" && red.color == SVG.safetyColor("Red"))
        #expect(red.title == "Boarding r-1 · safety Red")
        let odd = MapLayer.Boarding(id: "a b/c?d#e", lon: 0, lat: 0, level: nil).point
        #expect(odd.href == "/boardings/a%20b%2Fc%3Fd%23e")
        #expect(odd.title == "Boarding a b/c?d#e · safety not recorded" && odd.color == SVG.safetyColor(nil))
    }
}
