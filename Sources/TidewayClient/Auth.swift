import Foundation
import TidewayModels

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A login's tokens and who it is.
public struct Tokens: Codable, Sendable, Equatable {
    public var accessToken: String
    public var refreshToken: String
    public var user: AccountUser

    public init(accessToken: String, refreshToken: String, user: AccountUser) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.user = user
    }
}

/// Where tokens are kept between launches: the Keychain on Apple platforms (an app's own
/// implementation), a file only its owner can read on Linux (`FileTokenStore`).
public protocol TokenStore: Sendable {
    func load() throws -> Tokens?
    func save(_ tokens: Tokens) throws
    func clear() throws
}

/// Tokens in a file with mode 0600, replaced atomically (a killed app never leaves half a file).
public struct FileTokenStore: TokenStore {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> Tokens? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try JSONDecoder().decode(Tokens.self, from: data)
    }

    public func save(_ tokens: Tokens) throws {
        let data = try JSONEncoder().encode(tokens)
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw TidewayError.local("cannot write \(temporary): errno \(errno)") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, data.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            throw TidewayError.local("cannot write \(path)")
        }
    }

    public func clear() throws {
        unlink(path)
    }
}

/// Signed requests: the Bearer token on each, and on a 401 one refresh with rotation,
/// however many requests saw the 401 at once (they wait for it and retry with the new token).
final class Session: @unchecked Sendable {
    let http: HTTPTransport
    let tokenStore: any TokenStore
    private let lock = NSLock()
    private let refreshLock = NSLock()
    private var tokens: Tokens?
    /// How many refreshes were sent (tests: one for a burst of 401s).
    private(set) var refreshes = 0

    init(http: HTTPTransport, tokenStore: any TokenStore) throws {
        self.http = http
        self.tokenStore = tokenStore
        self.tokens = try tokenStore.load()
    }

    var current: Tokens? { lock.withLock { tokens } }

    func login(email: String, password: String, device: String?) throws -> Tokens {
        var body: [String: JSONValue] = ["email": .string(email), "password": .string(password)]
        if let device { body["device"] = .string(device) }
        let answer = try http.send("POST", "/api/v1/auth/login", headers: ["Content-Type: application/json"],
                                   body: JSONValue.object(body).encoded())
        guard answer.status == 200 else { throw answer.error }
        let tokens = try Self.tokens(from: answer)
        try tokenStore.save(tokens)
        lock.withLock { self.tokens = tokens }
        return tokens
    }

    private static func tokens(from answer: HTTPResponse) throws -> Tokens {
        let value = try answer.json()
        guard let access = value["accessToken"]?.stringValue, let refresh = value["refreshToken"]?.stringValue,
              let user = value["user"] else { throw TidewayError.network("login answer without tokens") }
        return Tokens(accessToken: access, refreshToken: refresh, user: try user.decoded(as: AccountUser.self))
    }

    /// Refreshes unless someone else already did since `seen` was the access token.
    private func refresh(after seen: String) throws {
        try refreshLock.withLock {
            guard let now = current else { throw TidewayError.signedOut }
            if now.accessToken != seen { return }
            let answer = try http.send("POST", "/api/v1/auth/refresh", headers: ["Content-Type: application/json"],
                                       body: JSONValue.object(["refreshToken": .string(now.refreshToken)]).encoded())
            lock.withLock { refreshes += 1 }
            if answer.status == 401 || answer.status == 400 {
                try? tokenStore.clear()
                lock.withLock { tokens = nil }
                throw TidewayError.signedOut
            }
            guard answer.status == 200 else { throw answer.error }
            var fresh = try Self.tokens(from: answer)
            fresh.user = now.user
            try tokenStore.save(fresh)
            lock.withLock { tokens = fresh }
        }
    }

    /// A request with the Bearer token; one refresh and retry on 401.
    func send(_ method: String, _ path: String, json: JSONValue? = nil, body: Data? = nil,
              contentType: String? = nil, headers extra: [String] = [], timeout: Int = 60,
              stream: ((Data) -> Bool)? = nil, onHeaders: ((Int) -> Void)? = nil,
              shouldStop: (() -> Bool)? = nil, onHeaderLine: ((String) -> Void)? = nil) throws -> HTTPResponse {
        for attempt in 0..<2 {
            guard let tokens = current else { throw TidewayError.signedOut }
            var headers = ["Authorization: Bearer " + tokens.accessToken] + extra
            var payload = body
            if let json {
                headers.append("Content-Type: application/json")
                payload = json.encoded()
            } else if let contentType {
                headers.append("Content-Type: " + contentType)
            }
            let answer = try http.send(method, path, headers: headers, body: payload, timeout: timeout, stream: stream,
                                       onHeaders: onHeaders, shouldStop: shouldStop, onHeaderLine: onHeaderLine)
            if answer.status == 401 && attempt == 0 {
                try refresh(after: tokens.accessToken)
                continue
            }
            return answer
        }
        throw TidewayError.signedOut
    }

    func logout() {
        if let tokens = current {
            _ = try? http.send("POST", "/api/v1/auth/logout", headers: ["Authorization: Bearer " + tokens.accessToken],
                               timeout: 10)
        }
        try? tokenStore.clear()
        lock.withLock { tokens = nil }
    }
}
