import Foundation
import Testing

@testable import EventPublisher

/// The publisher's requests to several nginx instances (NchanInstances), against fake
/// instances: Unix sockets that answer as nchan's publisher location does.
@Suite struct NchanInstancesTests {
    init() { signal(SIGPIPE, SIG_IGN) }

    /// A publish is written to every instance before any answer is read: the second instance
    /// has its event while the first has not answered yet (before, it waited for the first's
    /// answer, which nginx gives after writing the event to its own streams).
    @Test func everyInstanceHasThePublishBeforeTheFirstAnswers() throws {
        let second = FakeInstance(answers: [201])
        // Answers only once the second instance has the request (or after 8 s, if it never does).
        let first = FakeInstance(answers: [202]) { _ in second.received.wait(timeout: .now() + 8) == .success }
        let instances = NchanInstances(socketPaths: [first.path, second.path])

        let reached = try instances.send("POST", "/_publish/pabc", body: Array(#"{"partition":"agency=A"}"#.utf8), headers: [:])

        #expect(reached)  // the second instance's stream heard it (201)
        #expect(first.sawBeforeAnswering == [true])
        #expect(second.requests.first?.hasPrefix("POST /_publish/pabc HTTP/1.1\r\n") == true)
    }

    /// nginx closed the kept-alive connection after an answer (a reload, its request limit):
    /// the next request is sent again on a new connection, on every instance.
    @Test func aRequestOnAConnectionNginxClosedIsSentAgain() throws {
        let fakes = [FakeInstance(answers: [201, 202], closeAfterEach: true), FakeInstance(answers: [202, 201], closeAfterEach: true)]
        let instances = NchanInstances(socketPaths: fakes.map(\.path))

        #expect(try instances.send("POST", "/_publish/pabc", body: [], headers: [:]))
        #expect(try instances.send("POST", "/_publish/pabc", body: [], headers: [:]))
        for fake in fakes { #expect(fake.requests.count == 2) }
    }

    /// An instance that does not run is skipped; one whose answer is an error is reported
    /// after the others have had the request.
    @Test func aFailingInstanceDoesNotKeepTheEventFromTheOthers() throws {
        let failing = FakeInstance(answers: [500])
        let running = FakeInstance(answers: [201])
        let gone = FileManager.default.temporaryDirectory.appendingPathComponent("nchan-gone-\(UUID().uuidString).sock").path
        let instances = NchanInstances(socketPaths: [gone, failing.path, running.path])

        #expect(throws: NchanClient.Failure.self) { try instances.send("POST", "/_publish/pabc", body: [], headers: [:]) }
        #expect(running.requests.count == 1)
        #expect(failing.requests.count == 1)
    }
}

/// A Unix socket that reads HTTP requests (head and Content-Length body) and answers each
/// with the next status of `answers`, on one connection after the other.
final class FakeInstance: @unchecked Sendable {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("nchan-\(UUID().uuidString).sock").path
    /// Signalled at each request read.
    let received = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var _requests: [String] = []
    private var _sawBeforeAnswering: [Bool] = []
    var requests: [String] { lock.withLock { _requests } }
    /// What `beforeAnswering` returned for each request.
    var sawBeforeAnswering: [Bool] { lock.withLock { _sawBeforeAnswering } }

    init(answers: [Int], closeAfterEach: Bool = false, beforeAnswering: (@Sendable (String) -> Bool)? = nil) {
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        precondition(bound == 0 && listen(listener, 8) == 0, "cannot listen on \(path)")
        Thread.detachNewThread { [self] in
            var remaining = answers[...]
            while !remaining.isEmpty {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                while let status = remaining.first, let request = Self.readRequest(connection) {
                    remaining = remaining.dropFirst()
                    lock.withLock { _requests.append(request) }
                    received.signal()
                    if let beforeAnswering {
                        let saw = beforeAnswering(request)
                        lock.withLock { _sawBeforeAnswering.append(saw) }
                    }
                    let answer = Array("HTTP/1.1 \(status) Answered\r\nContent-Length: 0\r\n\r\n".utf8)
                    _ = answer.withUnsafeBytes { Foundation.write(connection, $0.baseAddress, $0.count) }
                    if closeAfterEach { break }
                }
                close(connection)
            }
            close(listener)
            unlink(path)
        }
    }

    /// One request's head and body, or nil when the connection ends first.
    static func readRequest(_ connection: Int32) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let text = String(bytes: bytes, encoding: .utf8), let end = text.range(of: "\r\n\r\n") {
                let length = text[..<end.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count >= text.utf8.distance(from: text.startIndex, to: end.upperBound) + length { return text }
            }
            let n = chunk.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            bytes += chunk[0..<n]
        }
    }
}
