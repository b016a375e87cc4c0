import Foundation
import Mustache
import Support

/// Every template of `Templates/`, loaded and parsed once at start-up: a template that
/// does not parse stops the worker from starting rather than failing a page later.
/// Mustache escapes `{{value}}` for HTML (quotes included); `{{{raw}}}` is used only for
/// markup the server itself made (SVG charts).
public struct Templates: Sendable {
    private let library: MustacheLibrary
    public let names: [String]

    public init(directory: String) throws {
        var library = MustacheLibrary()
        var names: [String] = []
        let files = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".mustache") }.sorted()
        for file in files {
            let name = String(file.dropLast(".mustache".count))
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            do {
                try library.register(text, named: name)
            } catch {
                throw TemplateError(message: "template \(file) does not parse: \(error)")
            }
            names.append(name)
        }
        guard !names.isEmpty else { throw TemplateError(message: "no templates in \(directory)") }
        self.library = library
        self.names = names
    }

    public func render(_ name: String, _ view: Any) -> String {
        guard let text = library.render(view, withTemplate: name) else {
            Log.error("no template named \(name)")
            return ""
        }
        return text
    }

    public struct TemplateError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
