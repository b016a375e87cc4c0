import Support

/// Every nginx instance's publisher, as one. Several single-worker nginx instances may share
/// the public ports (SO_REUSEPORT, Deploy/render-nginx.sh NGINX_INSTANCES), each holding its
/// own streams in its own nchan: an event is published in each, a revoked login's channel
/// deleted in each, and a channel's streams are the sum of theirs. With one socket this is
/// that one client.
final class NchanInstances {
    let clients: [NchanClient]
    /// The instances found not running at their last request (logged when that changes).
    private var notRunning: Set<Int> = []

    init(socketPaths: [String]) {
        precondition(!socketPaths.isEmpty, "at least one publisher socket")
        clients = socketPaths.map { NchanClient(socketPath: $0) }
    }

    /// Sends to every instance, even after one failed (its streams miss this event; the
    /// others' need not), then throws the first failure: a delete that failed anywhere is
    /// not handled, and is sent again to all (a channel already gone answers 404).
    /// Returns whether a stream on any instance received it (a publish answered 201).
    /// The request is written to every instance before any answer is read, so the instances
    /// publish at once: a stream on the second no longer waits for the first's answer, which
    /// comes after the first has written the event to its own streams (~0.3–0.8 ms a
    /// publish; docs/performance/round-14.md, "A write's event, stage by stage"), nor for
    /// an instance that does not answer at all.
    @discardableResult
    func send(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) throws -> Bool {
        let request = NchanClient.Request(method, path, body: body, headers: headers)
        let written = attempt(clients.indices) { try $0.write(request) }
        // Every answer written for is read, even after a failed write: it must not be left
        // for the next request on that connection.
        let answered = attempt(written.answers.map(\.index)) { try $0.answer(to: request) }
        if let failure = written.failure ?? answered.failure { throw failure }
        return answered.answers.contains { $0.answer == 201 }
    }

    /// How many streams listen on a channel now, over every instance.
    func subscribers(of channel: String) throws -> Int {
        try each { try $0.subscribers(of: channel) }.reduce(0, +)
    }

    /// `NchanClient.subscribersAskingEveryWorker`, summed over the instances.
    func subscribersAskingEveryWorker(of channel: String, tries: Int) throws -> Int {
        try each { try $0.subscribersAskingEveryWorker(of: channel, tries: tries) }.reduce(0, +)
    }

    /// `request` on every instance, one after the other; the answers of those that took it.
    private func each<T>(_ request: (NchanClient) throws -> T) throws -> [T] {
        let result = attempt(clients.indices, request)
        if let failure = result.failure { throw failure }
        return result.answers.map(\.answer)
    }

    /// `request` on each instance of `indices`: the answers of those that took it, with their
    /// index, and the first failure. An instance that is not running (nothing listens on its
    /// socket) holds no streams, so it is skipped: one stopped instance must not hold back the
    /// events and revocations of the others (a revocation not closed everywhere holds back
    /// every carried event). The failure is the first other one, or, when no instance runs,
    /// that.
    private func attempt<T>(_ indices: some Sequence<Int>, _ request: (NchanClient) throws -> T)
        -> (answers: [(index: Int, answer: T)], failure: (any Error)?) {
        var answers: [(index: Int, answer: T)] = [], failure: (any Error)?, notListening: (any Error)?
        for index in indices {
            let client = clients[index]
            do {
                answers.append((index, try request(client)))
                if notRunning.remove(index) != nil { Log.info("events: nginx at \(client.socketPath) answers again") }
            } catch let error as NchanClient.Failure where error.notListening {
                notListening = notListening ?? error
                if notRunning.insert(index).inserted { Log.warning("events: \(error); skipped while it does not run") }
            } catch {
                failure = failure ?? error
            }
        }
        return (answers, failure ?? (answers.isEmpty ? notListening : nil))
    }
}
