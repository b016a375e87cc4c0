import CLibPQ
import Foundation

/// A thread's wait for input on a connection's socket that another thread can switch off
/// and on without waking it (epoll, one-shot). The listening connection's thread sleeps in
/// `wait`; a thread that reads the connection itself for a while (a poll waiting for its own
/// round trip, `ListenerBarrier`) calls `pause` first, so that the answer wakes only that
/// thread, and `resume` when it is done: input that arrived meanwhile then wakes the
/// sleeper at once. A `poll` cannot be told to stop watching once a thread sleeps in it.
///
/// One-shot: each input wakes `wait` once; the sleeper calls `resume` after reading it.
/// A hang-up or error wakes it even while paused (the kernel always reports those).
public final class SocketWatch: @unchecked Sendable {
    private let epoll: Int32
    private let socket: Int32

    /// Watching from the start. Nil if the kernel refuses (no epoll instance left).
    public init?(socket: Int32) {
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return nil }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLONESHOT.rawValue
        event.data.fd = socket
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) == 0 else {
            close(epoll)
            return nil
        }
        self.epoll = epoll
        self.socket = socket
    }

    deinit { close(epoll) }

    /// Sleeps until input arrives while watching (or the socket fails), or `milliseconds`.
    public func wait(milliseconds: Int32) {
        var event = epoll_event()
        _ = epoll_wait(epoll, &event, 1, milliseconds)
    }

    /// Input no longer wakes `wait` (a sleeper stays asleep).
    public func pause() { watch(EPOLLONESHOT.rawValue) }

    /// Input wakes `wait` again: at once, if some is waiting unread.
    public func resume() { watch(EPOLLIN.rawValue | EPOLLONESHOT.rawValue) }

    private func watch(_ events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = socket
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event)
    }
}
