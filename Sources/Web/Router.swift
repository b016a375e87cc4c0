import FastCGI

/// Method + path patterns (`/boardings/:id/edit`) to handlers. A path that matches with
/// another method is a 405 with `Allow`; no match at all is a 404. Routes are tried in the
/// order they were added: the first whose pattern binds the path and whose method fits wins.
///
/// Every request pays for the lookup (idle polls and blob downloads included), so the
/// routes are indexed rather than scanned: a path equal to a parameterless pattern finds
/// its candidates in one dictionary lookup, any other path only tries the routes with its
/// segment count and first segment. Each candidate list keeps the order of addition (and
/// holds every route that can bind such a path), so the precedence is the scan's.
public struct Router: Sendable {
    public typealias Handler = @Sendable (RequestContext) throws -> HTTPResponse

    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Substring]
        let handler: Handler
        /// No `:parameter` segment: the pattern binds one path only.
        let isExact: Bool
    }

    /// The routes' segment count and first segment (empty when it is a parameter or absent).
    struct Shape: Hashable {
        let count: Int
        let first: Substring
    }

    private var routes: [Route] = []
    /// Parameterless pattern, spelled as a request path would be (`/a/b`), to the indices
    /// of every route binding it, in order of addition.
    private var exact: [String: [Int]] = [:]
    /// Segment count and literal first segment to the indices of the routes that can bind
    /// such a path (those with a parameter as first segment included), in order of addition.
    private var byShape: [Shape: [Int]] = [:]
    /// Segment count to the routes whose first segment is a parameter: what a path whose
    /// first segment no route spells can still match.
    private var parameterFirst: [Int: [Int]] = [:]

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = pattern.split(separator: "/")
        let route = Route(method: method, pattern: pattern, segments: segments, handler: handler,
                          isExact: !segments.contains { $0.hasPrefix(":") })
        let index = routes.count
        routes.append(route)

        for (path, _) in exact where Self.binds(route.segments, path.split(separator: "/")) {
            exact[path]!.append(index)
        }
        if route.isExact {
            let path = "/" + route.segments.joined(separator: "/")
            if exact[path] == nil {
                exact[path] = routes.indices.filter { Self.binds(routes[$0].segments, route.segments) }
            }
        }

        let count = route.segments.count
        if let first = route.segments.first, !first.hasPrefix(":") {
            let shape = Shape(count: count, first: first)
            byShape[shape, default: parameterFirst[count] ?? []].append(index)
        } else {
            parameterFirst[count, default: []].append(index)
            for shape in byShape.keys where shape.count == count { byShape[shape]!.append(index) }
        }
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
        // Every route listed for an exact path binds it: no need to split the path, unless
        // the route that answers has parameters.
        if let candidates = exact[path] {
            for index in candidates where Self.fits(routes[index].method, method) {
                let route = routes[index]
                let params = route.isExact ? [:] : Self.parameters(route.segments, Self.segments(path))
                return .found(route.handler, params, pattern: route.pattern)
            }
            return .wrongMethod(allowed: candidates.map { routes[$0].method })
        }
        let parts = Self.segments(path)
        let count = parts.count
        var allowed: [String] = []
        for index in byShape[Shape(count: count, first: parts.first ?? "")] ?? parameterFirst[count] ?? [] {
            let route = routes[index]
            guard Self.binds(route.segments, parts) else { continue }
            if Self.fits(route.method, method) {
                return .found(route.handler, Self.parameters(route.segments, parts), pattern: route.pattern)
            }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .none : .wrongMethod(allowed: allowed)
    }

    /// A route's method answers the request's; HEAD is answered by GET.
    private static func fits(_ routeMethod: String, _ method: String) -> Bool {
        routeMethod == method || (method == "HEAD" && routeMethod == "GET")
    }

    /// The path's segments, as `path.split(separator: "/")` gives them. An ASCII path (what
    /// clients send: percent-encoded) is split by its bytes: walking it as Characters was
    /// most of the lookup's cost, and on ASCII the two splits are the same.
    static func segments(_ path: String) -> [Substring] {
        let utf8 = path.utf8
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return path.split(separator: "/") }
        return utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
    }

    /// Whether the pattern binds the path's segments; allocates nothing.
    private static func binds(_ pattern: [Substring], _ parts: [Substring]) -> Bool {
        guard pattern.count == parts.count else { return false }
        for (p, part) in zip(pattern, parts) where !p.hasPrefix(":") && p != part { return false }
        return true
    }

    /// The `:name` segments' values, for a pattern that binds the path.
    private static func parameters(_ pattern: [Substring], _ parts: [Substring]) -> [String: String] {
        var params: [String: String] = [:]
        for (p, part) in zip(pattern, parts) where p.hasPrefix(":") {
            params[String(p.dropFirst())] = String(part)
        }
        return params
    }
}
