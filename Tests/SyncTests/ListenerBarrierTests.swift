import Foundation
import Testing

@testable import Sync

/// The listener's round trips on behalf of polls: a poll is let through only by a round
/// trip whose Sync was sent after it took its ticket; one round trip is in flight at a time.
/// (The waiting poll is a thread of its own: it blocks.)
@Suite struct ListenerBarrierTests {
    final class Waiter: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var passed: Bool?
        init(_ barrier: ListenerBarrier, timeout: TimeInterval = 10) {
            Thread { [self] in
                passed = barrier.await(timeout: timeout)
                done.signal()
            }.start()
        }
    }

    /// The Syncs sent on the (pretend) listening connection.
    final class Wire: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var sent: Int { lock.withLock { count } }
        func send() { lock.withLock { count += 1 } }

        /// Waits until `n` Syncs were sent.
        func await(_ n: Int) {
            while sent < n { usleep(1000) }
        }
    }

    static func connected(_ barrier: ListenerBarrier) -> Wire {
        let wire = Wire()
        barrier.connected { wire.send() }
        return wire
    }

    @Test func noListenerNoBarrier() {
        let barrier = ListenerBarrier()
        #expect(!barrier.await(timeout: 0.05))
    }

    @Test func aPollSendsTheRoundTripAndItsAnswerLetsItThrough() {
        let barrier = ListenerBarrier()
        let wire = Self.connected(barrier)
        let waiter = Waiter(barrier)
        wire.await(1)
        #expect(waiter.done.wait(timeout: .now() + 0.2) == .timedOut, "let through before the answer")
        barrier.answered()
        waiter.done.wait()
        #expect(waiter.passed == true)
        #expect(wire.sent == 1)
    }

    @Test func aPollArrivingDuringARoundTripWaitsForTheNext() {
        let barrier = ListenerBarrier()
        let wire = Self.connected(barrier)
        let first = Waiter(barrier)
        wire.await(1)
        let second = Waiter(barrier)
        let third = Waiter(barrier)
        usleep(100_000)
        #expect(wire.sent == 1, "a second round trip while one is in flight")
        barrier.answered()
        first.done.wait()
        #expect(first.passed == true)
        #expect(second.done.wait(timeout: .now() + 0.2) == .timedOut, "let through by a round trip sent before it came")
        // The answer sent the next round trip at once, one for both.
        wire.await(2)
        barrier.answered()
        second.done.wait()
        third.done.wait()
        #expect(second.passed == true && third.passed == true)
        #expect(wire.sent == 2)
    }

    /// A poll that gave up waiting is no longer among the tickets; a poll after it is let
    /// through only by a round trip sent after it came, not by the answer still due.
    @Test func aPollThatTimedOutFailsAndLeaves() {
        let barrier = ListenerBarrier()
        let wire = Self.connected(barrier)
        #expect(!barrier.await(timeout: 0.05))
        #expect(wire.sent == 1)
        let later = Waiter(barrier)
        usleep(50_000)
        barrier.answered()  // the answer to the round trip sent for the poll that left
        #expect(later.done.wait(timeout: .now() + 0.2) == .timedOut)
        wire.await(2)
        barrier.answered()
        later.done.wait()
        #expect(later.passed == true)
        // Nobody waits: no round trip is sent, and a stray answer lets nothing through.
        barrier.answered()
        #expect(wire.sent == 2)
    }

    @Test func losingTheListenerFailsTheWaitingPolls() {
        let barrier = ListenerBarrier()
        let wire = Self.connected(barrier)
        let waiter = Waiter(barrier)
        wire.await(1)
        barrier.lost()
        waiter.done.wait()
        #expect(waiter.passed == false)
        #expect(!barrier.await(timeout: 0.05))
    }

    /// After a reconnection the round trip in flight on the old connection is forgotten: the
    /// first poll sends one on the new connection.
    @Test func aNewConnectionStartsWithNoRoundTripInFlight() {
        let barrier = ListenerBarrier()
        let old = Self.connected(barrier)
        let lost = Waiter(barrier)
        old.await(1)
        barrier.lost()
        lost.done.wait()
        let wire = Self.connected(barrier)
        let waiter = Waiter(barrier)
        wire.await(1)
        barrier.answered()
        waiter.done.wait()
        #expect(waiter.passed == true)
        #expect(old.sent == 1)
    }
}
