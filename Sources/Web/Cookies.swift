import FastCGI
import Foundation

/// Reading the Cookie header and writing Set-Cookie with the flags every cookie of ours has.
package enum Cookies {
    package static func parse(_ header: String?) -> [String: String] {
        var cookies: [String: String] = [:]
        for part in (header ?? "").split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = pair[0].trimmingCharacters(in: .whitespaces)
            if cookies[name] == nil { cookies[name] = pair[1].trimmingCharacters(in: .whitespaces) }
        }
        return cookies
    }

    /// HttpOnly, Secure and SameSite=Lax: not readable by scripts, never sent over plain
    /// HTTP, and not sent on cross-site form posts.
    package static func set(_ name: String, _ value: String, maxAge: Int?) -> (String, String) {
        var cookie = "\(name)=\(value); Path=/; HttpOnly; Secure; SameSite=Lax"
        if let maxAge { cookie += "; Max-Age=\(maxAge)" }
        return ("Set-Cookie", cookie)
    }

    package static func clear(_ name: String) -> (String, String) {
        ("Set-Cookie", "\(name)=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0")
    }
}

