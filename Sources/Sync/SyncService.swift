import Database
import Support

/// What sync keeps for a worker process's life: the commit notifications long polls wait
/// on, presence touches, devices' cursor positions and last pushes. Made once by the worker's wiring
/// and handed to `SyncRoutes`.
public final class SyncService: Sendable {
    /// Commit notifications, for long polls.
    package let changes: ChangeHub
    let presence = Presence()
    /// Where devices' cursors stand, written on pulls that name their device.
    let devicePulls = DevicePulls()
    /// When pushing devices' rows were last written here (a minute coarse).
    let devicePushes = DevicePushes()
    /// `Config.poolIdleSeconds`, for `start`.
    let poolIdleSeconds: Double

    public init(config: Config) {
        poolIdleSeconds = config.poolIdleSeconds
        // Half the threads may wait in long polls; the rest always serve ordinary requests.
        changes = ChangeHub(capacity: max(1, config.threads / 2))
    }

    /// The pool's connections warmed for the first pushes (`WarmUp`; before the worker
    /// accepts, bounded, never failing the start), and those it opens later as it opens them;
    /// those a burst opened closed once idle, down to as many as the start warmed (a quiet
    /// worker's: one request at a time uses one, and a second lets the warm-up of a connection
    /// given back cold run); the LISTEN thread for long polls and idle polls answered from
    /// memory, and the presence sweep.
    public func start(conninfo: String, pool: ConnectionPool) {
        WarmUp.writePath(pool)
        WarmUp.connectionsOpenedLater(pool)
        pool.closesIdleConnections(after: poolIdleSeconds, keeping: WarmUp.connections)
        changes.startListening(conninfo: conninfo)
        Presence.startSweeping(pool)
    }
}
