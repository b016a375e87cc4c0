import FastCGI

/// Method + path patterns (`/boardings/:id/edit`) to handlers. A path that matches with
/// another method is a 405 with `Allow`; no match at all is a 404.
public struct Router: Sendable {
    public typealias Handler = @Sendable (RequestContext) throws -> HTTPResponse

    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Substring]
        let handler: Handler
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, segments: pattern.split(separator: "/"), handler: handler))
    }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { add("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { add("POST", pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping Handler) { add("PUT", pattern, handler) }

    public enum Match {
        /// The handler, the path's parameters, and the route's pattern (for the request log).
        case found(Handler, [String: String], pattern: String)
        case wrongMethod(allowed: [String])
        case none
    }

    public func match(method: String, path: String) -> Match {
        let parts = path.split(separator: "/")
        var allowed: [String] = []
        for route in routes {
            guard let params = Self.bind(route.segments, to: parts) else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(route.handler, params, pattern: route.pattern)
            }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .none : .wrongMethod(allowed: allowed)
    }

    private static func bind(_ pattern: [Substring], to parts: [Substring]) -> [String: String]? {
        guard pattern.count == parts.count else { return nil }
        var params: [String: String] = [:]
        for (p, part) in zip(pattern, parts) {
            if p.hasPrefix(":") {
                params[String(p.dropFirst())] = String(part)
            } else if p != part {
                return nil
            }
        }
        return params
    }
}
