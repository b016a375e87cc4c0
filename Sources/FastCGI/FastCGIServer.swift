import CFastCGI
import Foundation
import Synchronization

/// A threaded FastCGI server: N threads, each with its own `FCGX_Request` and its own
/// per-thread state (a database connection), accepting on one listening socket.
///
/// SIGTERM: stop accepting, finish the requests in hand, exit. libfcgi's own handler
/// only sets a flag that threads blocked in `accept()` never see, so signals are taken
/// by a dedicated `sigwait` thread which sets that flag, wakes the threads blocked in
/// accept with SIGUSR1 (libfcgi then returns from accept), and waits for the requests in
/// hand. The listening socket itself is left as it is: under socket activation it is
/// systemd's, and it must keep queueing connections for the next worker (a shutdown()
/// of it made it refuse every connection until the socket unit restarted).
public final class FastCGIServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    private let listenFD: Int32
    private let threads: Int
    private let inFlight = Mutex(0)
    private let stopping = Atomic<Bool>(false)
    /// The threads waiting in accept() for a new connection (not on a kept-alive one).
    private let accepting = Mutex<Set<UInt>>([])

    public init(listenFD: Int32, threads: Int) {
        self.listenFD = listenFD
        self.threads = max(1, threads)
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
            let thread = Thread { [self] in self.serve(makeHandler: makeHandler) }
            thread.name = "fcgi-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }

        var received: Int32 = 0
        sigwait(&signals, &received)
        stopping.store(true, ordering: .sequentiallyConsistent)
        FCGX_ShutdownPending()
        // Interrupts accept() (no SA_RESTART), and libfcgi returns since shutdown is pending.
        for thread in accepting.withLock({ Array($0) }) { pthread_kill(pthread_t(thread), SIGUSR1) }
        // Threads parked on nginx's kept-alive connections hold no request: do not wait for them.
        let deadline = Date().addingTimeInterval(drainSeconds)
        while inFlight.withLock({ $0 }) > 0 && Date() < deadline { usleep(10_000) }
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

    private func serve(makeHandler: @Sendable () -> Handler) {
        let handler = makeHandler()
        guard let request = tw_fcgx_request_new(listenFD) else { return }
        let me = UInt(pthread_self())
        while !isStopping {
            // No connection in hand: this call waits in accept(), where shutdown wakes it.
            let waitsInAccept = tw_fcgx_ipc_fd(request) < 0
            if waitsInAccept { accepting.withLock { _ = $0.insert(me) } }
            let accepted = FCGX_Accept_r(request)
            if waitsInAccept { accepting.withLock { _ = $0.remove(me) } }
            guard accepted >= 0 else {
                if isStopping { break }
                usleep(1000)
                continue
            }
            inFlight.withLock { $0 += 1 }
            let large = answer(request, with: handler)
            FCGX_Finish_r(request)
            inFlight.withLock { $0 -= 1 }
            // A large request or response (a full pull, a push with inline photos, a CSV
            // export) leaves megabytes free inside the allocator's arenas, which glibc keeps:
            // give them back now, so that RSS stays near what the threads hold at rest
            // (docs/performance.md, "Worker memory"). Small requests skip it.
            if large { tw_malloc_trim() }
        }
    }

    /// A request or response body from this size on counts as large (see `serve`).
    static let largeBody = 256 * 1024

    /// Answers one request; true when its request or response body was large.
    private func answer(_ raw: UnsafeMutablePointer<FCGX_Request>, with handler: Handler) -> Bool {
        let params = Self.params(of: raw)
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
            // nginx's request ids are hex; any other id is left out rather than escaped.
            let requestID = params["REQUEST_ID"] ?? ""
            let idField = !requestID.isEmpty && requestID.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
                ? #","requestId":"\#(requestID)""# : ""
            response = (params["DOCUMENT_URI"] ?? "").hasPrefix("/api/")
                ? HTTPResponse(status: 500, contentType: "application/json",
                               text: #"{"error":{"code":"internal_error","message":"internal error"\#(idField)}}"# + "\n")
                : HTTPResponse(status: 500, contentType: "text/plain; charset=utf-8", text: "Internal error\n")
        }
        let writer = StreamWriter(stream: tw_fcgx_out(raw))
        writer.write(response.head())
        switch response.body {
        case .bytes(let bytes):
            writer.write(bytes)
            large = large || bytes.count >= Self.largeBody
        case .stream(let produce):
            // The head is out already; a failure now can only cut the body short.
            try? produce(writer)
            large = true
        }
        return large
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

    private static func params(of request: UnsafeMutablePointer<FCGX_Request>) -> [String: String] {
        var params: [String: String] = [:]
        guard var cursor = tw_fcgx_envp(request) else { return params }
        while let entry = cursor.pointee {
            // Split at the first '=' on the C string itself: cheaper than Character indices.
            if let eq = strchr(entry, Int32(UInt8(ascii: "="))) {
                let name = UnsafeRawBufferPointer(start: entry, count: eq - entry)
                params[String(decoding: name, as: UTF8.self)] = String(cString: eq + 1)
            }
            cursor += 1
        }
        return params
    }
}

/// Writes to libfcgi's output stream; `false` once the peer has gone.
final class StreamWriter: BodyWriter {
    private let stream: UnsafeMutablePointer<FCGX_Stream>?
    private var failed = false

    init(stream: UnsafeMutablePointer<FCGX_Stream>?) { self.stream = stream }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        guard !failed, !bytes.isEmpty else { return !failed }
        let written = bytes.withUnsafeBytes {
            FCGX_PutStr($0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count), stream)
        }
        if written < 0 { failed = true }
        return !failed
    }

    @discardableResult
    func flush() -> Bool {
        if !failed && FCGX_FFlush(stream) < 0 { failed = true }
        return !failed
    }
}
