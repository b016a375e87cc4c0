import Foundation
import Support
import TidewayJSON

/// Inline photo pictures (domain.md: `picture`, base64, moved to the blob store by the
/// server) are longer than the JSON parser's usual string limit (256 KiB). A push body is
/// therefore parsed with strings up to the document limit (1 MiB), and this puts every
/// string except a photo's top-level `picture` back under the usual limit. The 1 MiB
/// document limit then bounds inline pictures (about 750 KB of image); larger photos go
/// through `PUT /api/v1/blobs/<photoId>`.
enum InlinePictures {
    /// A string longer than a whole document (`documentLimit`) makes its change `too_large`
    /// (the push body is parsed with strings up to the body limit, so that one such change
    /// does not fail the others); any other string above `limit` is `invalid`.
    static func checkStrings(of change: JSON, limit: Int, documentLimit: Int) throws(ChangeRejection) {
        let isPhoto = change["collection"]?.stringValue == "photos"
        var path: [String] = []
        try check(change, limit: limit, documentLimit: documentLimit, path: &path) { path in
            isPhoto && (path == "/doc/picture" || path == "/patch/picture")
        }
    }

    /// Whether a body of `bodyBytes` may hold a string or key that `checkStrings` refuses: no
    /// string or key decodes to more bytes than its text has, so one no longer than both
    /// limits holds none. A push of 25 reports (~57 KB) is far under the usual 256 KiB, and
    /// the walk was 4% of the worker's CPU per document (docs/performance/round-13.md, "The worker's
    /// CPU per push, thirteenth round").
    static func mayRefuse(bodyBytes: Int, limit: Int, documentLimit: Int) -> Bool {
        bodyBytes > min(limit, documentLimit)
    }

    /// `path`: the keys and indices down to `value`, made into a JSON Pointer only for a
    /// string or key over a limit. Made for every key instead (two Foundation replacements
    /// and a concatenation each), it was a fifth of the worker's CPU per push of one report
    /// (docs/performance/round-04.md, "The acknowledged write's timeline").
    private static func check(_ value: JSON, limit: Int, documentLimit: Int, path: inout [String],
                              allowed: (String) -> Bool) throws(ChangeRejection) {
        switch value {
        case .string(let text):
            let bytes = text.utf8.count
            if bytes > documentLimit {
                throw ChangeRejection(code: .tooLarge, message: "a string longer than the document limit (\(documentLimit) bytes)",
                                      path: pointer(path))
            }
            if bytes > limit && !allowed(pointer(path)) {
                throw .invalid("a string longer than \(limit) bytes", path: pointer(path))
            }
        case .array(let items):
            for (index, item) in items.enumerated() {
                path.append(String(index))
                defer { path.removeLast() }
                try check(item, limit: limit, documentLimit: documentLimit, path: &path, allowed: allowed)
            }
        case .object(let fields):
            for (key, item) in fields {
                if key.utf8.count > documentLimit {
                    throw ChangeRejection(code: .tooLarge, message: "a key longer than the document limit", path: pointer(path))
                }
                if key.utf8.count > limit { throw .invalid("a key longer than \(limit) bytes", path: pointer(path)) }
                path.append(key)
                defer { path.removeLast() }
                try check(item, limit: limit, documentLimit: documentLimit, path: &path, allowed: allowed)
            }
        default:
            break
        }
    }

    /// The JSON Pointer (RFC 6901) of `path`.
    static func pointer(_ path: [String]) -> String {
        JSONPointer(path).description
    }
}

extension JSONLimits {
    /// For documents read back from the database: checked when written, and a photo's
    /// inline picture may be as long as the whole document.
    package static func storedDocuments(documentBytes: Int = Config.Limits().documentBytes) -> JSONLimits {
        var limits = JSONLimits()
        limits.maxStringBytes = max(limits.maxStringBytes, documentBytes)
        return limits
    }
}
