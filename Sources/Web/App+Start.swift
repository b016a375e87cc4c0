import Database
import Foundation
import Support

extension App {
    /// Builds the application the worker runs (and in-process tests use): templates parsed,
    /// secrets read. Waits for the database while it is not up yet, so a worker started
    /// before PostgreSQL comes up on its own.
    public static func start(config: Config, waitForDatabase: Double = 60,
                             routes: (inout Router) -> Void) throws -> App {
        let templates = try Templates(directory: config.home + "/Templates")
        let pool = ConnectionPool(conninfo: config.database, capacity: config.threads)
        let deadline = Date().addingTimeInterval(waitForDatabase)
        var secrets: Secrets?
        while secrets == nil {
            do {
                secrets = try pool.withConnection { try Secrets.load(from: $0) }
            } catch let error as DatabaseError where error.kind == .unavailable && Date() < deadline {
                Log.warning("waiting for the database: \(error.detail)")
                usleep(500_000)
            }
        }
        let replica = config.replicaDatabase.map {
            ReplicaReads(conninfo: $0, capacity: config.threads, wait: config.replicaWaitSeconds)
        }
        // Kept down to one: the replica's connections are not warmed, and a quiet worker's
        // pull needs one at a time.
        replica?.pool.closesIdleConnections(after: config.poolIdleSeconds, keeping: 1)
        return App(config: config, database: pool, templates: templates, secrets: secrets!, replica: replica, routes: routes)
    }
}
