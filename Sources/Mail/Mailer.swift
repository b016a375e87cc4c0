import Dispatch
import Support
import Synchronization

/// Sends mail through the configured relay: at once (an admin waits to see the outcome) or
/// later on one background queue (the forgotten-password form, whose answer must not
/// wait for, or be timed by, the relay). Messages hold one-time links, so they live in
/// memory only: never in the database, and never in the log.
public final class Mailer: Sendable {
    public let settings: MailSettings
    private let relay: SMTPRelay
    private let queue = DispatchQueue(label: "tideway.mail")
    private let waiting = Mutex(0)
    /// A relay that hangs holds each message up to its timeout; beyond this many waiting,
    /// new ones are dropped (and logged) rather than piling up in memory.
    static let maxWaiting = 100

    public init(settings: MailSettings) {
        self.settings = settings
        relay = SMTPRelay(settings: settings)
    }

    /// nil when the relay took the message; otherwise why not.
    public func send(_ message: MailMessage) -> String? {
        relay.send(message)
    }

    /// Queues the message and returns at once; `what` says in the log what was sent, e.g.
    /// "reset link for user <id>" (never the address or the link).
    public func sendLater(_ message: MailMessage, what: String, requestID: String) {
        let accepted = waiting.withLock { count -> Bool in
            guard count < Self.maxWaiting else { return false }
            count += 1
            return true
        }
        guard accepted else {
            Log.warning("mail queue full, dropped: \(what)", requestID: requestID)
            return
        }
        queue.async { [self] in
            let failure = relay.send(message)
            waiting.withLock { $0 -= 1 }
            if let failure {
                Log.warning("mail not sent, \(what): \(failure)", requestID: requestID)
            } else {
                Log.info("mail sent: \(what)", requestID: requestID)
            }
        }
    }
}
