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
    @discardableResult
    func send(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) throws -> Bool {
        try each { try $0.send(method, path, body: body, headers: headers) }.contains(201)
    }

    /// How many streams listen on a channel now, over every instance.
    func subscribers(of channel: String) throws -> Int {
        try each { try $0.subscribers(of: channel) }.reduce(0, +)
    }

    /// `NchanClient.subscribersAskingEveryWorker`, summed over the instances.
    func subscribersAskingEveryWorker(of channel: String, tries: Int) throws -> Int {
        try each { try $0.subscribersAskingEveryWorker(of: channel, tries: tries) }.reduce(0, +)
    }

    /// `request` on every instance; the answers of those that took it. An instance that is
    /// not running (nothing listens on its socket) holds no streams, so it is skipped: one
    /// stopped instance must not hold back the events and revocations of the others (a
    /// revocation not closed everywhere holds back every carried event). Throws the first
    /// other failure, or, when no instance runs, that.
    private func each<T>(_ request: (NchanClient) throws -> T) throws -> [T] {
        var answers: [T] = [], failure: (any Error)?, notListening: (any Error)?
        for (index, client) in clients.enumerated() {
            do {
                answers.append(try request(client))
                if notRunning.remove(index) != nil { Log.info("events: nginx at \(client.socketPath) answers again") }
            } catch let error as NchanClient.Failure where error.notListening {
                notListening = notListening ?? error
                if notRunning.insert(index).inserted { Log.warning("events: \(error); skipped while it does not run") }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        if answers.isEmpty, let notListening { throw notListening }
        return answers
    }
}
