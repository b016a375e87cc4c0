import FastCGI
import Support
import TidewayJSON
import Web

/// `POST /api/v1/auth/login|refresh|logout`, as in the sync protocol.
package enum AuthRoutes {
    package static func register(_ router: inout Router) {
        router.post("/api/v1/auth/login", login)
        router.post("/api/v1/auth/refresh", refresh)
        router.post("/api/v1/auth/logout", logout)
    }

    static func login(_ context: RequestContext) throws -> HTTPResponse {
        let body = try context.jsonObject(allowing: ["email", "password", "device"])
        guard let email = body["email"]?.stringValue, let password = body["password"]?.stringValue else {
            throw AppError.badRequest("email and password are required strings")
        }
        if let device = body["device"], device.stringValue == nil, device != .null {
            throw AppError.badRequest("device must be a string")
        }
        return try login(context, email: email, password: password, device: body["device"]?.stringValue ?? "")
    }

    /// Signs in and answers a fresh token pair (login and sign-up).
    package static func login(_ context: RequestContext, email: String, password: String, device: String) throws -> HTTPResponse {
        let config = context.app.config
        let access = Crypto.newToken()
        let refresh = Crypto.newToken()
        let caller = try SignIn.signIn(
            context: context, email: email, password: password, kind: "api", device: String(device.prefix(200)),
            tokens: [(access, .access, config.accessTokenSeconds), (refresh, .refresh, config.refreshTokenSeconds)])
        return tokenPair(access: access, refresh: refresh, caller: caller, config: config)
    }

    static func refresh(_ context: RequestContext) throws -> HTTPResponse {
        let body = try context.jsonObject(allowing: ["refreshToken"])
        guard let old = body["refreshToken"]?.stringValue else { throw AppError.badRequest("refreshToken is required") }
        let config = context.app.config
        let access = Crypto.newToken()
        let refresh = Crypto.newToken()
        // The reuse case must commit its revocation, so the outcome is read and judged after.
        let outcome = try context.anonymous { tx in
            try tx.query("""
                select outcome from app.rotate_refresh(\(Tokens.hash(old)), \(Tokens.hash(access)), \(config.accessTokenSeconds), \
                \(Tokens.hash(refresh)), \(config.refreshTokenSeconds))
                """).first?["outcome"]
        }
        guard outcome == "ok" else {
            throw AppError(.unauthenticated, outcome == "reused" ? "refresh token already used; signed out everywhere" : "invalid refresh token")
        }
        let caller = try context.asCaller(token: access, readOnly: true) { _, caller in caller }
        return tokenPair(access: access, refresh: refresh, caller: caller, config: config)
    }

    static func logout(_ context: RequestContext) throws -> HTTPResponse {
        try context.asAPICaller { tx, _ in _ = try tx.query("select app.close_login()") }
        return HTTPResponse(status: 204)
    }

    static func tokenPair(access: String, refresh: String, caller: CallerInfo, config: Config) -> HTTPResponse {
        let body: JSON = [
            "accessToken": .string(access), "refreshToken": .string(refresh),
            "expiresIn": .int(Int64(config.accessTokenSeconds)), "user": caller.json,
        ]
        return .json(body, headers: [("Cache-Control", "no-store")])
    }
}
