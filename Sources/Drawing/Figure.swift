/// A drawn chart or map as a page shows it (Templates/dashboards/chart.mustache): the SVG,
/// and the table of the same numbers for those who cannot see it.
package struct Figure {
    package struct Row {
        let cells: [String]
        package init(cells: [String]) { self.cells = cells }
    }

    let id: String
    let heading: String
    let svg: String
    let columns: [String]
    let rows: [Row]
    let empty: Bool
    let emptyText: String

    package init(id: String, heading: String, svg: String, columns: [String], rows: [Row], empty: Bool,
                 emptyText: String = "No boardings in this range.") {
        self.id = id
        self.heading = heading
        self.svg = svg
        self.columns = columns
        self.rows = rows
        self.empty = empty
        self.emptyText = emptyText
    }
}
