import Foundation
import TidewayJSON

/// HTTP/1.1 to nginx's publisher endpoint on a unix socket (no TCP port, so nothing but
/// this machine's processes with access to the run folder can publish). One kept-alive
/// connection, reopened when nginx closes it.
final class NchanClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let socketPath: String
    private var fd: Int32 = -1

    init(socketPath: String) { self.socketPath = socketPath }

    deinit { if fd >= 0 { close(fd) } }

    /// Sends one request and reads its answer; retries once on a fresh connection.
    func send(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) throws {
        let status = try exchange(method, path, body: body, headers: headers).status
        // 201/202 published, 200/404 deleted or already gone.
        guard (200..<300).contains(status) || (method == "DELETE" && status == 404) else {
            throw Failure(description: "nchan answered \(status) to \(method) \(path)")
        }
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
        do {
            return try exchangeOnce(method, path, body: body, headers: headers)
        } catch {
            reset()  // nginx closed the kept-alive connection (reload, timeout): once more on a new one
            return try exchangeOnce(method, path, body: body, headers: headers)
        }
    }

    private func exchangeOnce(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) throws -> (status: Int, body: [UInt8]) {
        if fd < 0 { try open() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: tideway-events\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        try writeAll(request)
        return try readResponse()
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
            close(s)
            throw Failure(description: "connect \(socketPath): errno \(errno)")
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

    /// Reads the status line, the headers and a Content-Length body (nchan's answers are small).
    private func readResponse() throws -> (status: Int, body: [UInt8]) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        func fill() throws {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { return }
            guard n > 0 else { throw Failure(description: "connection closed") }
            buffer += chunk[0..<n]
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            try fill()
            if buffer.count >= 4 {
                headEnd = (0...(buffer.count - 4)).first { Array(buffer[$0..<($0 + 4)]) == separator }
            }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let length = lines.dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first ?? 0
        while buffer.count < headEnd! + 4 + length { try fill() }
        let body = Array(buffer[(headEnd! + 4)..<(headEnd! + 4 + length)])
        if lines.contains(where: { $0.lowercased().hasPrefix("connection: close") }) { reset() }
        return (status, body)
    }
}
