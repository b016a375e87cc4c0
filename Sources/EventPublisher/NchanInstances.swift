/// Every nginx instance's publisher, as one. Several single-worker nginx instances may share
/// the public ports (SO_REUSEPORT, Deploy/render-nginx.sh NGINX_INSTANCES), each holding its
/// own streams in its own nchan: an event is published in each, a revoked login's channel
/// deleted in each, and a channel's streams are the sum of theirs. With one socket this is
/// that one client.
final class NchanInstances {
    let clients: [NchanClient]

    init(socketPaths: [String]) {
        precondition(!socketPaths.isEmpty, "at least one publisher socket")
        clients = socketPaths.map { NchanClient(socketPath: $0) }
    }

    /// The list `TIDEWAY_EVENTS_SOCKET` holds: paths separated by ":" (as in PATH).
    static func socketPaths(_ list: String) -> [String] {
        list.split(separator: ":").map(String.init)
    }

    /// Sends to every instance, even after one failed (its streams miss this event; the
    /// others' need not), then throws the first failure: a delete that failed anywhere is
    /// not handled, and is sent again to all (a channel already gone answers 404).
    func send(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) throws {
        var failure: (any Error)?
        for client in clients {
            do {
                try client.send(method, path, body: body, headers: headers)
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// How many streams listen on a channel now, over every instance.
    func subscribers(of channel: String) throws -> Int {
        try clients.reduce(0) { $0 + (try $1.subscribers(of: channel)) }
    }

    /// `NchanClient.subscribersAskingEveryWorker`, summed over the instances.
    func subscribersAskingEveryWorker(of channel: String, tries: Int) throws -> Int {
        try clients.reduce(0) { $0 + (try $1.subscribersAskingEveryWorker(of: channel, tries: tries)) }
    }
}
