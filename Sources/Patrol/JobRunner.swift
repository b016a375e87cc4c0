import Blobs
import CoreMetrics
import Database
import Foundation
import Support
import TidewayJSON
import Web

/// Runs the durable job queue (app.jobs, migration 0021): `tideway jobs`.
///
/// A job is taken in two steps. First a short transaction counts the attempt and moves
/// the job's `run_after` out by the backoff (2, 4, 8 … s, at most 10 min), and commits:
/// attempts are counted even when the runner dies. Then the work runs in one transaction
/// that holds the job's row lock (`FOR UPDATE SKIP LOCKED`, so two runners never do the
/// same job), marks it done and commits with the work, or not at all. A runner killed
/// mid-job leaves the job pending; it runs again once its backoff has passed.
public final class JobRunner {
    let connection: Connection
    let config: Config
    let store: BlobStore
    /// Fault injection for the crash test: sleep this long inside the job's transaction,
    /// after the blob is written and before the commit.
    public var pauseBeforeCommit: Double = 0
    public static let maxAttempts = 10

    public init(connection: Connection, config: Config) {
        self.connection = connection
        self.config = config
        self.store = BlobStore(root: config.blobRoot)
    }

    struct Job {
        let id: Int64
        let kind: String
        let partition: String
        let ref: String
        let attempts: Int
    }

    /// A failure that retrying cannot fix: the job is marked failed at once.
    struct Permanent: Error, CustomStringConvertible {
        let description: String
    }

    /// How long a report change may wait for the dashboards' summaries, and a new job for
    /// the runner: it takes the jobs due and folds every `foldEvery` seconds (plus the
    /// turn's own time).
    public static let foldEvery = 0.5

    /// Runs the jobs due and folds the summaries every half second (each only when
    /// `workPending` says there is something to do), sweeping unreferenced blobs every
    /// `sweepEvery` seconds. Never returns.
    ///
    /// The runner does not LISTEN for new jobs: PostgreSQL 15 signals every listening
    /// backend of the database at every commit that notifies, whatever the channel, so its
    /// listening backend was woken by every write of every client, to find nothing for it
    /// (docs/performance/round-07.md, "Listeners woken per commit"). A job now starts at the runner's
    /// next turn, within `foldEvery` of its commit, instead of at once: a photo's offload is
    /// never waited for (the push is answered and the inline photo synced before it).
    public func runForever(sweepEvery: TimeInterval) throws -> Never {
        Log.info("jobs: running (blob root \(store.root))")
        var lastSweep = Date.distantPast
        while true {
            do {
                let work = try workPending()
                if work.jobsDue { _ = try runDue() }
                if work.foldDue { try foldSummaries() }
                if Date().timeIntervalSince(lastSweep) >= sweepEvery {
                    lastSweep = Date()
                    let result = try BlobSweep.run(connection: connection, store: store)
                    if result.removed > 0 { Log.info("jobs: sweep removed \(result.removed) unreferenced blobs") }
                    try forgetFinishedJobs()
                }
            } catch let error as DatabaseError where error.kind == .unavailable {
                // The supervisor (systemd, supervise.sh) starts a fresh process with a fresh connection.
                Log.error("jobs: database unavailable: \(error.detail)")
                exit(1)
            }
            Thread.sleep(forTimeInterval: Self.foldEvery)
        }
    }

    /// Whether a job is due and whether any summary is behind, in one statement outside a
    /// transaction: a turn with nothing to do is that statement alone, not the claim's and
    /// the fold's two transactions of four statements each (~1 ms of its backend's CPU every
    /// half second; docs/performance/round-12.md, "The summary fold after a mass deletion").
    func workPending() throws -> (jobsDue: Bool, foldDue: Bool) {
        let row = try connection.execute("select jobs_due, fold_due from app.job_runner_work()").first
        return (row?.bool("jobs_due") ?? true, row?.bool("fold_due") ?? true)
    }

    /// Folds the report changes of every agency not yet in the dashboards' daily summaries
    /// (Migrations/0087: taken off the write path, folded in batches here); answers how many
    /// reports changed what they count. A fold that loses a race (a deadlock cannot happen:
    /// partitions are folded in order) is simply tried again at the next turn.
    @discardableResult
    public func foldSummaries() throws -> Int {
        do {
            // Not waiting for the disk: a fold moves the summaries and their watermark in one
            // transaction, so a crash that loses it loses both, and the next fold does the
            // same work again. Its WAL goes to disk with the next durable commit (a write's),
            // so a fold no longer adds a flush of its own beside the writers' every turn.
            return try connection.transaction(opening: ["set local synchronous_commit = off"]) { tx in
                try tx.query("select app.fold_boarding_summaries() as folded").first?.int("folded") ?? 0
            }
        } catch let error as DatabaseError where error.kind != .unavailable {
            Log.warning("jobs: folding the dashboard summaries failed: \(error)")
            return 0
        }
    }

    /// Runs every job due now; answers how many were taken.
    @discardableResult
    public func runDue() throws -> Int {
        var taken = 0
        while let job = try claim() {
            taken += 1
            do {
                try perform(job)
                Counter(label: "tideway_jobs_run_total", dimensions: [("outcome", "done")]).increment()
            } catch let error as DatabaseError where error.kind == .unavailable {
                throw error
            } catch {
                let permanent = error is Permanent || job.attempts >= Self.maxAttempts
                Log.warning("jobs: job \(job.id) (\(job.kind) \(job.ref)) attempt \(job.attempts) failed: \(error)"
                            + (permanent ? "; giving up" : ""))
                Counter(label: "tideway_jobs_run_total", dimensions: [("outcome", permanent ? "failed" : "retry")]).increment()
                try connection.transaction(opening: ["select app.as_job_runner()"]) { tx in
                    _ = try tx.query("""
                        update app.jobs set last_error = \(String(describing: error).prefix(1000).description),
                               state = case when \(permanent) then 'failed' else state end,
                               finished_at = case when \(permanent) then now() end
                         where id = \(job.id) and state = 'pending'
                        """)
                }
            }
        }
        return taken
    }

    /// Step one: count the attempt and push the next try out by the backoff.
    func claim() throws -> Job? {
        try connection.transaction(opening: ["select app.as_job_runner()"]) { tx in
            let row = try tx.query("""
                update app.jobs set attempts = attempts + 1,
                       run_after = now() + make_interval(secs => least(600, power(2, attempts + 1)))
                 where id = (select id from app.due_jobs order by run_after, id limit 1 for update skip locked)
                returning id, kind, partition, ref, attempts
                """).first
            guard let row, let id = row.int64("id") else { return nil }
            return Job(id: id, kind: row["kind"] ?? "", partition: row["partition"] ?? "", ref: row["ref"] ?? "",
                       attempts: row.int("attempts") ?? 1)
        }
    }

    /// Step two: the work and the job's completion, in one transaction.
    func perform(_ job: Job) throws {
        try connection.transaction(opening: ["select app.as_job_runner()"]) { tx in
            let locked = try tx.query("select id from app.jobs where id = \(job.id) and state = 'pending' for update skip locked")
            guard !locked.isEmpty else { return }  // done meanwhile, or another runner has it
            _ = try tx.query("update app.jobs set state = 'done', finished_at = now(), last_error = null where id = \(job.id)")
            switch job.kind {
            case "offload_photo": try PhotoOffload(runner: self).run(job, in: tx)
            default: throw Permanent(description: "unknown job kind \(job.kind)")
            }
            if pauseBeforeCommit > 0 {
                Log.info("jobs: job \(job.id) pausing \(pauseBeforeCommit) s before commit (fault injection)")
                Thread.sleep(forTimeInterval: pauseBeforeCommit)
            }
        }
    }

    /// Done jobs older than a week go; failed ones stay until someone looks.
    public func forgetFinishedJobs() throws {
        try connection.transaction(opening: ["select app.as_job_runner()"]) { tx in
            _ = try tx.query("delete from app.jobs where state = 'done' and finished_at < now() - interval '7 days'")
        }
    }
}

/// Effect 8: a photo's inline `picture` moves to the blob store; `pictureURL` points at it,
/// `picture` goes, `thumbNail` stays (or is made when missing). The document change goes
/// through the write path as the server acting in the photo's partition (app.job_claims),
/// so clients see it in an ordinary pull.
struct PhotoOffload {
    let runner: JobRunner

    func run(_ job: JobRunner.Job, in tx: Transaction) throws {
        _ = try tx.query("select app.job_claims(\(job.id))")
        guard let text = try tx.query("""
            select doc::text as doc from sync.photos where id = \(job.ref) and partition = \(job.partition) and not deleted for update
            """).first?["doc"] else { return }  // deleted meanwhile: nothing to move
        let doc = try JSON(parsing: text, limits: .storedDocuments(documentBytes: runner.config.limits.documentBytes))
        guard let picture = doc["picture"]?.stringValue else { return }  // already moved
        guard let bytes = Crypto.base64Decode(picture), let type = ImageType.sniff(bytes) else {
            throw JobRunner.Permanent(description: "the inline picture is not a JPEG, PNG or WebP image")
        }
        let (sha, upload) = try runner.store.store(bytes, limit: BlobRoutes.maxBytes)
        defer { upload.discard() }
        var extra: JSONObject = [:]
        if doc["thumbNail"]?.stringValue?.isEmpty ?? true {
            do {
                let thumb = try Thumbnailer.jpeg(from: bytes, workFolder: runner.store.root + "/tmp")
                extra["thumbNail"] = .string(Data(thumb).base64EncodedString())
            } catch {
                Log.warning("jobs: no thumbnail for photo \(job.ref): \(error)")
            }
        }
        _ = try tx.query("select app.lock_blob(\(sha))")
        try runner.store.place(upload, sha: sha)
        let agency = String(job.partition.dropFirst("agency=".count))
        Counter(label: "tideway_blob_bytes_stored_total").increment(by: bytes.count)
        try BlobRoutes.attach(photoID: job.ref, partition: job.partition, sha: sha, type: type, bytes: bytes.count,
                              caller: CallerInfo(serviceFor: agency), limits: runner.config.limits, in: tx, extra: extra)
    }
}

/// Removes blob files that no photo names any more (and temp files of crashed uploads).
public enum BlobSweep {
    public struct Result: Sendable {
        public var removed = 0
        public var kept = 0
        public var temps = 0
    }

    public static func run(connection: Connection, store: BlobStore, tempAge: TimeInterval = 3600) throws -> Result {
        var result = Result()
        for sha in store.allBlobs() {
            // Under the blob's lock: an upload naming it either committed before (kept) or
            // places its file again after. Nothing goes while a backup runs (0085_backup.sql).
            let removed = try connection.transaction { tx -> Bool in
                let (_, removable) = try tx.run(Statement.effect("select app.lock_blob(\(sha))"),
                                                Statement.value("select app.blob_removable(\(sha)) as removable", "removable", as: Bool.self))
                guard removable == true else { return false }
                return store.remove(sha: sha)
            }
            if removed { result.removed += 1 } else { result.kept += 1 }
        }
        result.temps = store.removeStaleTemps(olderThan: tempAge)
        return result
    }
}
