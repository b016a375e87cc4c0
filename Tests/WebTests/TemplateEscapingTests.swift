import Foundation
import Mustache
import Testing

@testable import Web

/// Every template of `Templates/`, rendered with a hostile value in every variable it
/// names, at every depth of its sections: nothing a user typed comes out as markup.
/// (`{{{raw}}}` is for markup the server made itself, SVG charts and maps; it gets SVG here.)
@Suite struct TemplateEscapingTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Templates").path
    static let hostile = #"<script>alert(1)</script>" onmouseover="alert(2)' x='javascript:alert(3)"#

    /// The names the templates use: as sections (`{{#x}}`), as values (`{{x}}`), and as the
    /// objects of dotted names (`{{chrome.title}}`: `chrome`).
    struct Names {
        var sections: Set<String> = []
        var values: Set<String> = []
        var objects: Set<String> = []

        init(folder: String) throws {
            let tag = try Regex(#"\{\{\{?\s*([#^/&]?)\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}?\}\}"#)
            for file in try FileManager.default.subpathsOfDirectory(atPath: folder) where file.hasSuffix(".mustache") {
                let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
                for match in text.matches(of: tag) {
                    let sigil = match.output[1].substring.map(String.init) ?? ""
                    let parts = (match.output[2].substring.map(String.init) ?? "").split(separator: ".").map(String.init)
                    objects.formUnion(parts.dropLast())
                    guard let last = parts.last else { continue }
                    if sigil == "#" || sigil == "^" { sections.insert(last) } else if sigil != "/" { values.insert(last) }
                }
            }
        }
    }

    /// Answers every name: raw names get server markup; a name used only as a section a list
    /// of one more level of the same (to `depth`); an object name the same, as an object;
    /// everything else the hostile text (which is also truthy for a section around it).
    final class HostileView: MustacheParent {
        let depth: Int
        let names: Names
        static let raw: Set<String> = ["svg", "map"]
        init(depth: Int, names: Names) { self.depth = depth; self.names = names }
        func child(named name: String) -> Any? {
            if Self.raw.contains(name) { return "<svg></svg>" }
            if depth > 0 && names.objects.contains(name) { return HostileView(depth: depth - 1, names: names) }
            if depth > 0 && names.sections.contains(name) && !names.values.contains(name) {
                return [HostileView(depth: depth - 1, names: names)]
            }
            return TemplateEscapingTests.hostile
        }
    }

    @Test func everyTemplateEscapesEveryValue() throws {
        let templates = try Templates(directory: Self.folder)
        let files = try FileManager.default.subpathsOfDirectory(atPath: Self.folder).filter { $0.hasSuffix(".mustache") }
        #expect(templates.names.count == files.count && files.count >= 28)
        let names = try Names(folder: Self.folder)
        for name in templates.names {
            for depth in [4, 1] {
                let html = templates.render(name, HostileView(depth: depth, names: names))
                #expect(!html.contains("<script>alert(1)"), "\(name): a value came out as markup")
                #expect(!html.contains(#"" onmouseover"#), "\(name): a value broke out of an attribute")
                #expect(!html.contains(#"' x='"#), "\(name): a value broke out of a single-quoted attribute")
                #expect(!html.contains(#"href="javascript"#) && !html.contains(#"src="javascript"#),
                        "\(name): a value became a script URL")
            }
        }
    }

    @Test func theHostileValueReallyReachesTheTemplates() throws {
        // The test above could pass by rendering nothing: every template that shows a value
        // shows the hostile one, escaped. (`dashboards/definitions` is fixed text.)
        let templates = try Templates(directory: Self.folder)
        let names = try Names(folder: Self.folder)
        let silent = templates.names.filter {
            !templates.render($0, HostileView(depth: 4, names: names)).contains("&lt;script&gt;alert(1)&lt;/script&gt;")
        }
        #expect(silent == ["dashboards/definitions"])
    }
}
