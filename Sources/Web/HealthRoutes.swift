import FastCGI

/// `/healthz` for load balancers and the supervisor; `/metrics` for Prometheus.
package enum HealthRoutes {
    package static func register(_ router: inout Router) {
        router.get("/healthz", healthz)
        router.get("/api/v1/healthz", healthz)
        router.get("/metrics", metrics)
    }

    static func healthz(_ context: RequestContext) throws -> HTTPResponse {
        do {
            _ = try context.app.database.withConnection { try $0.execute("select 1") }
        } catch {
            throw AppError(.unavailable, "the database is unreachable")
        }
        return HTTPResponse(status: 200, contentType: "text/plain", text: "ok\n", headers: [("Cache-Control", "no-store")])
    }

    /// Only from the machine itself, or for a global admin's token.
    static func metrics(_ context: RequestContext) throws -> HTTPResponse {
        let address = context.request.remoteAddress
        let loopback = address == "::1" || address.hasPrefix("127.")
        if !loopback {
            let caller = try context.asAPICaller(readOnly: true) { _, caller in caller }
            guard caller.isGlobalAdmin else { throw AppError.forbidden("metrics are for global admins") }
        }
        return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4", text: Metrics.prometheusText(levels: Metrics.databaseLevels(context.app.database)),
                            headers: [("Cache-Control", "no-store")])
    }
}
