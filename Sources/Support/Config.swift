import Foundation

/// Settings from the environment (systemd's EnvironmentFile, or the dev stack).
public struct Config: Sendable {
    /// libpq connection string of the worker role.
    public var database: String
    public var threads: Int
    /// Folder with Templates/, Static/, Migrations/ and Data/.
    public var home: String
    public var blobRoot: String
    /// The address people use, e.g. `https://tideway.example.org` (links in invitations).
    public var publicURL: String
    /// Self sign-up (`POST /api/v1/auth/register`); off unless set to `on`.
    public var registration: Bool
    public var accessTokenSeconds = 900
    public var refreshTokenSeconds = 30 * 24 * 3600
    public var sessionSeconds = 12 * 3600
    public var limits = Limits()
    /// A streaming replica for pulls (TIDEWAY_REPLICA_DATABASE, the worker role's conninfo
    /// there); nil: every query goes to `database`.
    public var replicaDatabase: String?
    /// Where every process keeps its metrics file (TIDEWAY_METRICS_DIR; SharedMetrics):
    /// the same folder for the workers, `tideway jobs` and `tideway events` of a host, so
    /// `/metrics` shows them all. nil: each process shows only its own.
    public var metricsDirectory: String?
    /// How long a pull waits for a lagging replica before the primary answers it instead.
    public var replicaWaitSeconds = 0.1
    /// Whether a pull that found nothing new gets its request log line
    /// (TIDEWAY_LOG_IDLE_POLLS=on); off: such polls are only counted
    /// (`tideway_idle_polls_total`, Deploy/README.md, "Logs").
    public var logIdlePolls = false
    /// How long a pooled database connection may lie idle before the pool closes it, down to
    /// the connections a quiet worker keeps (TIDEWAY_POOL_IDLE_SECONDS; 0 or `off`: never,
    /// each stays open for the process's life). Ten minutes, as HikariCP's `idleTimeout` and
    /// pgbouncer's `server_idle_timeout`: far longer than the gaps inside a burst or between
    /// a device's syncs, so a pool reopens a connection at most once per ten minutes for
    /// each one a burst needed (docs/operations.md, "Database connections").
    public var poolIdleSeconds = 600.0

    public struct Limits: Sendable {
        public init() {}

        public var bodyBytes = 16 * 1024 * 1024
        public var documentBytes = 1024 * 1024
        public var changesPerPush = 1000
        public var changesPerPull = 10_000
        public var depth = 32
        public var stringBytes = 256 * 1024
        /// Sign-in backoff (Migrations/0080_login_backoff.sql): failures of one (address,
        /// account) pair before it waits 2^k s after each further one, at most
        /// `loginBackoffCapSeconds`; failures of one account from any address after which
        /// the addresses that failed on it wait too; failures older than
        /// `loginWindowSeconds` are forgotten.
        public var loginFreeFailures = 5
        public var loginFailuresPerAccount = 20
        public var loginBackoffCapSeconds = 900
        public var loginWindowSeconds = 3600
        /// Forgotten-password requests per email and per client address within
        /// `forgotWindowSeconds` (each sends a mail) before 429.
        public var forgotPerEmail = 5
        public var forgotPerAddress = 20
        public var forgotWindowSeconds = 3600
    }

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        database = environment["TIDEWAY_DATABASE"] ?? "dbname=tideway user=tideway_worker"
        threads = Int(environment["TIDEWAY_THREADS"] ?? "") ?? 32
        home = environment["TIDEWAY_HOME"] ?? FileManager.default.currentDirectoryPath
        blobRoot = environment["TIDEWAY_BLOB_ROOT"] ?? (home + "/.state/dev/blobs")
        publicURL = environment["TIDEWAY_PUBLIC_URL"] ?? "https://localhost:8443"
        registration = environment["TIDEWAY_REGISTRATION"] == "on"
        replicaDatabase = environment["TIDEWAY_REPLICA_DATABASE"].flatMap { $0.isEmpty ? nil : $0 }
        metricsDirectory = environment["TIDEWAY_METRICS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        logIdlePolls = environment["TIDEWAY_LOG_IDLE_POLLS"] == "on"
        if let value = environment["TIDEWAY_POOL_IDLE_SECONDS"] {
            poolIdleSeconds = value == "off" ? 0 : Double(value) ?? poolIdleSeconds
        }
        if let value = environment["TIDEWAY_REPLICA_WAIT_MS"].flatMap(Double.init) { replicaWaitSeconds = value / 1000 }
        if let value = environment["TIDEWAY_MAX_BODY_BYTES"].flatMap(Int.init) { limits.bodyBytes = value }
        if let value = environment["TIDEWAY_LOGIN_FREE_FAILURES"].flatMap(Int.init) { limits.loginFreeFailures = value }
        if let value = environment["TIDEWAY_LOGIN_FAILURES_PER_ACCOUNT"].flatMap(Int.init) { limits.loginFailuresPerAccount = value }
        if let value = environment["TIDEWAY_LOGIN_BACKOFF_CAP_SECONDS"].flatMap(Int.init) { limits.loginBackoffCapSeconds = value }
        if let value = environment["TIDEWAY_LOGIN_WINDOW_SECONDS"].flatMap(Int.init) { limits.loginWindowSeconds = value }
    }
}
