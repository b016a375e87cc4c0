import CFastCGI
import Foundation
import Synchronization

/// A threaded FastCGI server: N threads, each with its own `FCGX_Request` and its own
/// per-thread state (a database connection), accepting on one listening socket.
///
/// SIGTERM (`systemctl restart`, the dev supervisor, a rolling upgrade) fails no request
/// (docs/operations.md, "Restarts"); signals are taken by a dedicated `sigwait` thread:
/// 1. A socket the worker bound itself (TIDEWAY_SOCKET) is unlinked first, so nginx's next
///    connect fails at once and goes to another worker (`fastcgi_next_upstream error`,
///    nothing sent yet, so a POST too); the connections already queued are served until
///    the queue is empty. Under socket activation the socket is systemd's and is left as
///    it is: it keeps queueing for the next worker (a shutdown() of it made it refuse
///    every connection until the socket unit restarted).
/// 2. libfcgi's shutdown flag is set (it accepts nothing more) and the threads blocked in
///    accept() are woken: by shutdown() of our own socket, or by SIGUSR1 under socket
///    activation.
/// 3. nginx's kept-alive connections (`fastcgi_keep_conn`) are never cut from this side,
///    which would race a request nginx is sending on them: each thread keeps answering
///    requests on its connection until nginx closes it, which the upstream's
///    `keepalive_timeout` (idle) and `keepalive_time` (age) bound to a few seconds
///    (Deploy/nginx). The process ends when every thread has, or after `drainSeconds`.
public final class FastCGIServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    private let listenFD: Int32
    private let threads: Int
    /// The socket's path when the worker bound it itself (not under socket activation).
    private let ownedPath: String?
    /// A unix socket (see `serve`: closing a connection first is safe there, not over TCP).
    private let unixSocket: Bool
    // Counted and recorded without a lock: every request of every thread passes here, and
    // two mutexes taken twice per request were a twentieth of an idle poll's worker CPU,
    // spinning under 32 threads (docs/performance/round-06.md, "Every change together, sixth round").
    private let inFlight = Atomic<Int>(0)
    private let serving = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// The threads inside FCGX_Accept_r, with their request (whose ipcFd < 0 says the
    /// thread is in, or on its way to, accept() rather than reading a kept-alive connection).
    /// Per serving thread: its pthread and, while it waits in FCGX_Accept_r, its request
    /// (0 otherwise), so that stopping can wake those with no connection in hand.
    private let slots: [Slot]
    private final class Slot: Sendable {
        let thread = Atomic<UInt>(0)
        let accepting = Atomic<UInt>(0)
    }

    public init(listenFD: Int32, threads: Int, ownedPath: String? = nil) {
        self.listenFD = listenFD
        self.threads = max(1, threads)
        self.slots = (0..<max(1, threads)).map { _ in Slot() }
        self.ownedPath = ownedPath
        self.unixSocket = Self.isUnixSocket(listenFD)
    }

    static func isUnixSocket(_ fd: Int32) -> Bool {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return named == 0 && address.ss_family == sa_family_t(AF_UNIX)
    }

    /// Runs until SIGTERM or SIGINT; returns after the requests in hand are answered
    /// (or `drainSeconds` passed). `makeHandler` runs once on each thread so the
    /// handler can own thread-local state.
    public func run(drainSeconds: Double = 10, makeHandler: @escaping @Sendable () -> Handler) {
        signal(SIGPIPE, SIG_IGN)
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        // Blocked here, inherited by every thread started below, taken by sigwait.
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        FCGX_Init()
        // SIGUSR1 wakes a thread blocked in accept() at shutdown: a handler that does nothing,
        // installed without SA_RESTART so that accept() returns EINTR.
        var wake = sigaction()
        wake.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&wake.sa_mask)
        wake.sa_flags = 0
        sigaction(SIGUSR1, &wake, nil)

        for index in 0..<threads {
            let slot = slots[index]
            let thread = Thread { [self] in self.serve(in: slot, makeHandler: makeHandler) }
            thread.name = "fcgi-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }

        var received: Int32 = 0
        sigwait(&signals, &received)
        let deadline = Date().addingTimeInterval(drainSeconds)
        if let ownedPath {
            unlinkIfOurs(ownedPath)
            // Nothing new can arrive now: serve what is queued (a thread in accept takes it).
            var queued = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            while poll(&queued, 1, 0) > 0 && Date() < deadline { usleep(2_000) }
            // The last one taken may still be in libfcgi's check that it sent something.
            usleep(50_000)
        }
        stopping.store(true, ordering: .sequentiallyConsistent)
        FCGX_ShutdownPending()
        if ownedPath != nil {
            // Our own socket: shutdown() wakes every accept() on it (EINVAL), no signal needed.
            shutdown(listenFD, Int32(SHUT_RDWR))
        }
        // Until every thread has left: wake those in accept() (SIGUSR1, no SA_RESTART: EINTR,
        // and libfcgi returns since shutdown is pending), never one reading a kept-alive
        // connection (its read would fail and cut the connection).
        while serving.load(ordering: .acquiring) > 0 && Date() < deadline {
            if ownedPath == nil {
                for slot in slots {
                    let request = slot.accepting.load(ordering: .acquiring)
                    guard request != 0, tw_fcgx_ipc_fd(UnsafeMutablePointer(bitPattern: request)) < 0 else { continue }
                    pthread_kill(pthread_t(slot.thread.load(ordering: .acquiring)), SIGUSR1)
                }
            }
            usleep(10_000)
        }
        let left = inFlight.load(ordering: .acquiring)
        if left > 0 { Self.logError("stopping with \(left) requests unanswered after \(drainSeconds) s", requestID: "") }
    }

    /// Unlinks the socket path only if it is still this socket (not a successor's).
    private func unlinkIfOurs(_ path: String) {
        var named = stat(), bound = stat()
        guard stat(path, &named) == 0, fstat(listenFD, &bound) == 0,
              named.st_ino == bound.st_ino, named.st_dev == bound.st_dev else { return }
        unlink(path)
    }

    public var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts later, so
    /// that only `run`'s sigwait takes them. Call it first thing in `main`: a thread started
    /// before `run` (a pool's, a sweeper's) would otherwise take a SIGTERM that comes early,
    /// and the worker would never stop.
    public static func blockStopSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    private func serve(in slot: Slot, makeHandler: @Sendable () -> Handler) {
        serving.add(1, ordering: .acquiringAndReleasing)
        defer { serving.subtract(1, ordering: .acquiringAndReleasing) }
        let handler = makeHandler()
        guard let request = tw_fcgx_request_new(listenFD) else { return }
        slot.thread.store(UInt(pthread_self()), ordering: .releasing)
        while true {
            // Stopping: a thread with no connection in hand leaves; one with a kept-alive
            // connection waits on it for nginx's next request or its close (then libfcgi,
            // shutdown pending, returns instead of accepting).
            if isStopping && tw_fcgx_ipc_fd(request) < 0 { break }
            Self.awaitNextRequest(on: tw_fcgx_ipc_fd(request))
            slot.accepting.store(UInt(bitPattern: request), ordering: .releasing)
            let accepted = FCGX_Accept_r(request)
            slot.accepting.store(0, ordering: .releasing)
            guard accepted >= 0 else {
                if isStopping { break }
                usleep(1000)
                continue
            }
            inFlight.add(1, ordering: .acquiringAndReleasing)
            let (large, redirected) = answer(request, with: handler)
            let closeFirst = redirected && unixSocket
            // nginx never keeps a connection after an X-Accel-Redirect answer (a photo
            // download, an event stream): it acts on the headers and closes it before reading
            // FCGI_END_REQUEST, the only place its FastCGI module marks a connection reusable
            // (ngx_http_upstream_process_headers, 1.22 to 1.31). Waiting for the next request
            // on it would only wake this thread for that close, then libfcgi's lingering close
            // (shutdown, poll, read): close it ourselves after the answer. A unix socket keeps
            // what was written for nginx to read after our close, even with bytes of nginx's
            // left unread here (a TCP connection would be reset and could lose the answer:
            // there the lingering close stays). docs/performance/round-06.md, "Blobs, sixth round".
            if closeFirst { tw_fcgx_close_when_finished(request) }
            FCGX_Finish_r(request)
            if closeFirst { tw_fcgx_undetach(request) }
            inFlight.subtract(1, ordering: .acquiringAndReleasing)
            // A large request or response (a full pull, a push with inline photos, a CSV
            // export) leaves megabytes free inside the allocator's arenas, which glibc keeps:
            // give them back now, so that RSS stays near what the threads hold at rest
            // (docs/performance/method.md, "Worker memory"). Small requests skip it.
            if large { tw_malloc_trim() }
        }
    }

    /// Waits in `poll` until nginx's next request (or its close) is readable on a kept-alive
    /// connection, before libfcgi's blocking `read` of it. A thread asleep in `read` of a
    /// unix socket is woken each time nginx takes our previous answer off it (the kernel's
    /// write-space wake-up wakes every sleeper on the socket, and `read` then finds nothing
    /// and sleeps again); `poll` asks for input only, and the kernel skips it for that
    /// wake-up. One wake-up less per request, for one system call more (docs/performance/round-08.md,
    /// "Idle polls without a log line"). Interrupted (a signal), libfcgi's `read` waits as
    /// before. `fd` < 0: no connection in hand, accept() comes next.
    static func awaitNextRequest(on fd: Int32) {
        guard fd >= 0 else { return }
        var next = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&next, 1, -1)
    }

    /// A request or response body from this size on counts as large (see `serve`).
    static let largeBody = 256 * 1024

    /// Answers one request: whether its request or response body was large, and whether the
    /// answer was an X-Accel-Redirect (after which nginx closes the connection).
    private func answer(_ raw: UnsafeMutablePointer<FCGX_Request>, with handler: Handler) -> (large: Bool, redirected: Bool) {
        let params = RequestFields(entries: tw_fcgx_envp(raw))
        let input = tw_fcgx_in(raw)
        let length = params["CONTENT_LENGTH"].flatMap { Int($0) }
        var large = (length ?? 0) >= Self.largeBody
        let body = RequestBody(declaredLength: length) { buffer in
            Int(FCGX_GetStr(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), input))
        }
        let request = HTTPRequest(params: params, body: body)
        var response = handler(request)
        if let problem = response.unsafeHeader() {
            // Never sent: a 500 in its place, and a line in the log (without the value).
            Self.logError("refused to send a response: \(problem)", requestID: params["REQUEST_ID"] ?? "")
            response = Self.internalError(params)
        }
        switch response.body {
        case .bytes(let bytes):
            let writer = StreamWriter(stream: tw_fcgx_out(raw), head: nil)
            writer.write(response.head())
            writer.write(bytes)
            large = large || bytes.count >= Self.largeBody
        case .stream(let produce):
            // The head goes out with the body's first bytes.
            let writer = StreamWriter(stream: tw_fcgx_out(raw), head: response.head())
            do {
                try produce(writer)
            } catch where writer.isCommitted {
                // The head is out: the body can only be cut short. Closing the connection
                // instead of ending the request makes nginx drop the client's connection
                // without the end of the chunked body, so that no client takes what it got
                // for the whole answer (Web's App logs the error).
                shutdown(tw_fcgx_ipc_fd(raw), Int32(SHUT_RDWR))
            } catch {
                // A producer that failed before its first byte and gave no other answer.
                Self.logError("streamed answer failed before its first byte: \(error)", requestID: params["REQUEST_ID"] ?? "")
                writer.answerInstead(Self.internalError(params))
            }
            // A producer that wrote nothing still answers: its head, with an empty body.
            writer.flush()
            large = large || writer.bodyBytes >= Self.largeBody
        }
        return (large, response.headers.contains { Self.isRedirect($0.0) })
    }

    /// `X-Accel-Redirect`, in any case (compared without allocating for other names).
    static func isRedirect(_ name: String) -> Bool {
        name.utf8.count == 16 && name.lowercased() == "x-accel-redirect"
    }

    /// The answer in place of one that cannot be sent: the contract's JSON error on /api/.
    private static func internalError(_ params: RequestFields) -> HTTPResponse {
        // nginx's request ids are hex; any other id is left out rather than escaped.
        let requestID = params["REQUEST_ID"] ?? ""
        let idField = !requestID.isEmpty && requestID.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            ? #","requestId":"\#(requestID)""# : ""
        return (params["DOCUMENT_URI"] ?? "").hasPrefix("/api/")
            ? HTTPResponse(status: 500, contentType: "application/json",
                           text: #"{"error":{"code":"internal_error","message":"internal error"\#(idField)}}"# + "\n")
            : HTTPResponse(status: 500, contentType: "text/plain; charset=utf-8", text: "Internal error\n")
    }

    /// At most `count` glibc malloc arenas, unless MALLOC_ARENA_MAX says otherwise. glibc
    /// makes up to 8 per core, one per thread that finds the others locked: with 32 threads
    /// each keeps the high-water mark of whatever its threads once held. Call it first in
    /// `main`, before threads start (an arena once made stays).
    public static func limitAllocatorArenas(to count: Int32 = 2) {
        guard getenv("MALLOC_ARENA_MAX") == nil else { return }
        tw_malloc_arena_max(count)
    }

    /// One line on standard error, in the format of the product's log.
    static func logError(_ message: String, requestID: String) {
        let rid = requestID.isEmpty ? "" : " request=\(requestID)"
        let line = "\(Date().formatted(.iso8601)) error\(rid) \(message)\n"
        line.utf8CString.withUnsafeBufferPointer { buffer in
            _ = Foundation.write(2, buffer.baseAddress, buffer.count - 1)
        }
    }
}

/// Writes to libfcgi's output stream; `false` once the peer has gone. `head`: sent before
/// the first bytes (see `BodyWriter`).
final class StreamWriter: BodyWriter {
    private let stream: UnsafeMutablePointer<FCGX_Stream>?
    private var failed = false
    private var head: [UInt8]?
    /// Body bytes written so far (a streamed pull of 100 changes is small: no `malloc_trim`).
    private(set) var bodyBytes = 0

    init(stream: UnsafeMutablePointer<FCGX_Stream>?, head: [UInt8]?) {
        self.stream = stream
        self.head = head
    }

    var isCommitted: Bool { head == nil }

    func answerInstead(_ response: HTTPResponse) {
        precondition(!isCommitted, "the head has gone out")
        head = response.head()
        if case .bytes(let body) = response.body { write(body) }
    }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return !failed }
        if let head {
            self.head = nil
            put(head)
        }
        put(bytes)
        bodyBytes += bytes.count
        return !failed
    }

    private func put(_ bytes: [UInt8]) {
        guard !failed, !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes {
            FCGX_PutStr($0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count), stream)
        }
        if written < 0 { failed = true }
    }

    @discardableResult
    func flush() -> Bool {
        if let head {
            self.head = nil
            put(head)
        }
        if !failed && FCGX_FFlush(stream) < 0 { failed = true }
        return !failed
    }
}
