import Foundation
import TidewayJSON

/// HTTP/1.1 to nginx's publisher endpoint on a unix socket (no TCP port, so nothing but
/// this machine's processes with access to the run folder can publish). One kept-alive
/// connection, reopened when nginx closes it.
final class NchanClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// Nothing listens on the socket (no such file, or refused): that nginx is not running.
        var notListening = false
    }

    let socketPath: String
    private var fd: Int32 = -1
    /// Where each read(2) lands, kept for the client's life.
    private var chunk = [UInt8](repeating: 0, count: 4096)

    init(socketPath: String) { self.socketPath = socketPath }

    deinit { if fd >= 0 { close(fd) } }

    /// A request as written to the socket, kept until its answer is read: sent again on a new
    /// connection when nginx had closed the kept-alive one.
    struct Request {
        let method: String
        let path: String
        let bytes: [UInt8]

        init(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) {
            self.method = method
            self.path = path
            // The head and the body in one buffer, one write.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(160 + path.utf8.count + body.count)
            for part in [method, " ", path, " HTTP/1.1\r\nHost: tideway-events\r\nContent-Length: ", String(body.count), "\r\n"] {
                bytes += part.utf8
            }
            for (name, value) in headers {
                bytes += name.utf8
                bytes += ": ".utf8
                bytes += value.utf8
                bytes += "\r\n".utf8
            }
            bytes += "\r\n".utf8
            bytes += body
            self.bytes = bytes
        }
    }

    /// Writes `request`, on a new connection when the kept-alive one is gone. Its answer is
    /// read by `answer(to:)`, so that the caller can write to other instances meanwhile.
    func write(_ request: Request) throws {
        do {
            try writeOnce(request)
        } catch let error as Failure where error.notListening {
            throw error
        } catch {
            reset()  // nginx closed the kept-alive connection (reload, timeout): once more on a new one
            do {
                try writeOnce(request)
            } catch {
                reset()  // not half a request left on it for the next
                throw error
            }
        }
    }

    /// Reads the answer to `request`, written last by `write`. Returns its status: to a
    /// publish, 201 when a stream of the channel received it, 202 when nchan only kept it (for
    /// Last-Event-ID resumes) because no stream listened.
    func answer(to request: Request) throws -> Int {
        let status = try response(to: request).status
        // 201/202 published, 200/404 deleted or already gone.
        guard (200..<300).contains(status) || (request.method == "DELETE" && status == 404) else {
            throw Failure(description: "nchan answered \(status) to \(request.method) \(request.path)")
        }
        return status
    }

    /// How many streams listen on a channel now (0 when nchan has no such channel).
    func subscribers(of channel: String) throws -> Int {
        let (status, body) = try exchange("GET", "/_publish/" + channel, body: [], headers: ["Accept": "text/json"])
        if status == 404 { return 0 }
        guard status == 200, let count = (try? JSON(parsing: body))?["subscribers"]?.intValue, count >= 0 else {
            throw Failure(description: "nchan answered \(status) to GET /_publish/\(channel)")
        }
        return Int(count)
    }

    /// The highest count of `tries` answers, each on a new connection. nginx's worker
    /// processes disagree about a channel's subscribers (measured: for a live stream, 32 to
    /// 48 of 80 answers on new connections said 0 and stayed so for seconds; which worker
    /// accepts the connection decides), and a kept-alive connection keeps asking the same
    /// worker, so one reading can never tell "gone" from "held by another worker".
    func subscribersAskingEveryWorker(of channel: String, tries: Int) throws -> Int {
        var highest = 0
        for _ in 0..<max(1, tries) {
            reset()
            highest = max(highest, try subscribers(of: channel))
        }
        reset()
        return highest
    }

    private func exchange(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) throws -> (status: Int, body: [UInt8]) {
        let request = Request(method, path, body: body, headers: headers)
        try write(request)
        return try response(to: request)
    }

    /// The answer to `request`, written last; when the connection fails first (nginx closed
    /// it after the write), `request` once more on a new one.
    private func response(to request: Request) throws -> (status: Int, body: [UInt8]) {
        do {
            return try readResponse()
        } catch {
            reset()
            do {
                try writeOnce(request)
                return try readResponse()
            } catch {
                reset()  // no answer arriving late on it, read as the next request's
                throw error
            }
        }
    }

    private func writeOnce(_ request: Request) throws {
        if fd < 0 { try open() }
        try writeAll(request.bytes)
    }

    private func open() throws {
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(s)
            throw Failure(description: "socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard ok == 0 else {
            let error = errno
            close(s)
            throw Failure(description: "connect \(socketPath): errno \(error)", notListening: error == ENOENT || error == ECONNREFUSED)
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        fd = s
    }

    private func reset() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: "write: errno \(errno)") }
            offset += n
        }
    }

    /// Reads the status line, the headers and a Content-Length body (nchan's answers are
    /// small). On bytes: Foundation's trimming and a copied array per searched position were
    /// a sixth of the publisher's CPU per event (docs/performance/round-06.md, "The event publisher's
    /// CPU per event").
    private func readResponse() throws -> (status: Int, body: [UInt8]) {
        var buffer: [UInt8] = []
        var headEnd: Int?
        while headEnd == nil {
            let searched = max(0, buffer.count - 3)
            try fill(&buffer)
            headEnd = Self.blankLine(in: buffer, from: searched)
        }
        let head = Self.ResponseHead(buffer[..<headEnd!])
        let bodyStart = headEnd! + 4
        while buffer.count < bodyStart + head.contentLength { try fill(&buffer) }
        let body = Array(buffer[bodyStart..<(bodyStart + head.contentLength)])
        if head.closes { reset() }
        return (head.status, body)
    }

    /// Appends what one read(2) returns to `buffer`.
    private func fill(_ buffer: inout [UInt8]) throws {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { return }
        guard n > 0 else { throw Failure(description: "connection closed") }
        buffer += chunk[0..<n]
    }

    /// Where the head's closing CR LF CR LF starts, looking from `start` on.
    static func blankLine(in bytes: [UInt8], from start: Int) -> Int? {
        var i = start
        while i + 3 < bytes.count {
            if bytes[i] == 13, bytes[i + 1] == 10, bytes[i + 2] == 13, bytes[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// What the publisher needs of an answer's head: the status, Content-Length (0 when
    /// absent or unreadable) and whether nginx closes the connection after it.
    struct ResponseHead {
        var status = 0
        var contentLength = 0
        var closes = false

        init(_ head: ArraySlice<UInt8>) {
            var lines = head.split(separator: 10, omittingEmptySubsequences: true).map { line in
                line.last == 13 ? line.dropLast() : line
            }[...]
            // "HTTP/1.1 201 Created"
            if let statusLine = lines.popFirst(), let space = statusLine.firstIndex(of: 32) {
                status = Self.number(statusLine[(space + 1)...].prefix { $0 != 32 }) ?? 0
            }
            for line in lines {
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
                let name = line[..<colon], value = Self.trimmed(line[(colon + 1)...])
                if Self.equalsIgnoringCase(name, "content-length") {
                    contentLength = Self.number(value) ?? 0
                } else if Self.equalsIgnoringCase(name, "connection") {
                    closes = Self.equalsIgnoringCase(value, "close")
                }
            }
        }

        static func number(_ digits: ArraySlice<UInt8>) -> Int? {
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        }

        static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
            let blank: (UInt8) -> Bool = { $0 == 32 || $0 == 9 }
            guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else {
                return bytes[bytes.endIndex...]
            }
            return bytes[first...last]
        }

        /// ASCII case-insensitive comparison with a lower-case `word`.
        static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ word: String) -> Bool {
            bytes.count == word.utf8.count && zip(bytes, word.utf8).allSatisfy { ($0 | 0x20) == $1 }
        }
    }
}
