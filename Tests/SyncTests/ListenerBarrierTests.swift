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

    /// A listening connection a poll can read itself: `drive` answers the Syncs sent so far
    /// (after `hold` lets it), as a read of the connection would.
    final class DrivableWire: ListenerLink, @unchecked Sendable {
        private let lock = NSLock()
        private var sentCount = 0, answeredCount = 0, drives = 0
        private(set) var watching: [Bool] = []
        weak var barrier: ListenerBarrier?
        let hold = DispatchSemaphore(value: 0)
        let holding: Bool
        init(holding: Bool = false) { self.holding = holding }
        var sent: Int { lock.withLock { sentCount } }
        var driven: Int { lock.withLock { drives } }
        var watched: [Bool] { lock.withLock { watching } }
        func send() { lock.withLock { sentCount += 1 } }
        var drivable: Bool { true }
        func listenerWatches(_ on: Bool) { lock.withLock { watching.append(on) } }
        func drive(timeout: TimeInterval) -> Bool {
            lock.withLock { drives += 1 }
            if holding { hold.wait() }
            let due = lock.withLock { () -> Int in
                defer { answeredCount = sentCount }
                return sentCount - answeredCount
            }
            for _ in 0..<due { barrier?.answered() }
            return true
        }
    }

    /// The poll that sends the round trip reads its answer itself, with the listener's watch
    /// paused meanwhile and restarted after: nobody else has to answer it.
    @Test func thePollThatSendsReadsItsAnswer() {
        let barrier = ListenerBarrier()
        let wire = DrivableWire()
        wire.barrier = barrier
        barrier.connected(wire)
        #expect(barrier.await(timeout: 5))
        #expect(wire.sent == 1 && wire.driven == 1)
        #expect(wire.watched == [false, true])
    }

    /// While a poll reads the connection the listener thread may not; while the listener
    /// reads, a poll sends its round trip and waits for the listener to read the answer.
    @Test func theListenerAndAPollNeverReadAtOnce() {
        let barrier = ListenerBarrier()
        let wire = DrivableWire(holding: true)
        wire.barrier = barrier
        barrier.connected(wire)
        let driver = Waiter(barrier)
        while wire.driven == 0 { usleep(1000) }
        #expect(!barrier.listenerMayRead(), "the listener reads while a poll does")
        // A poll that comes now waits for the next round trip, sent when this one is answered.
        let second = Waiter(barrier)
        usleep(50_000)
        wire.hold.signal()
        driver.done.wait()
        #expect(driver.passed == true)
        #expect(wire.watched == [false, true])
        // The second poll's round trip was sent by the answer; the listener reads it.
        #expect(second.done.wait(timeout: .now() + 0.2) == .timedOut)
        #expect(wire.sent == 2)
        #expect(barrier.listenerMayRead())
        barrier.answered()
        var watchedAgain = false
        barrier.listenerDone { watchedAgain = true }
        second.done.wait()
        #expect(second.passed == true && watchedAgain)
        // The listener reading: a poll sends but does not read.
        #expect(barrier.listenerMayRead())
        let third = Waiter(barrier)
        while wire.sent < 3 { usleep(1000) }
        usleep(50_000)
        #expect(wire.driven == 1)
        barrier.answered()
        barrier.listenerDone {}
        third.done.wait()
        #expect(third.passed == true && wire.driven == 1)
    }

    /// A ticket taken as a poll arrives sends its round trip at once; the answer read while
    /// the poll did its own work lets it through when it asks, and a change notified before
    /// the take is covered: the Sync went out after it.
    @Test func aTicketTakenEarlyIsLetThroughByTheRoundTripSentAtItsTake() {
        let barrier = ListenerBarrier()
        let wire = DrivableWire()
        wire.barrier = barrier
        barrier.connected(wire)
        guard let ticket = barrier.take() else { Issue.record("no ticket with a listener"); return }
        #expect(wire.sent == 1, "the round trip goes at the take, not at the wait")
        #expect(wire.watched == [false], "the poll that sent it reads it: the listener's watch paused")
        #expect(barrier.finish(ticket, timeout: 5))
        #expect(wire.sent == 1 && wire.driven == 1)
        #expect(wire.watched == [false, true])
    }

    /// A ticket never waited for is given back: the listener reads again (its watch restarted)
    /// and the round trip's answer lets nobody through; a ticket taken after it is covered by
    /// a round trip of its own, never by the given-back one's.
    @Test func aTicketGivenBackHandsTheConnectionToTheListener() {
        let barrier = ListenerBarrier()
        let wire = DrivableWire()
        wire.barrier = barrier
        barrier.connected(wire)
        guard let given = barrier.take() else { Issue.record("no ticket with a listener"); return }
        barrier.release(given)
        #expect(wire.watched == [false, true])
        #expect(barrier.listenerMayRead(), "the listener reads the answer of a ticket given back")
        // A poll arriving while the given-back round trip is in flight waits for the next.
        let later = Waiter(barrier)
        while wire.sent < 1 { usleep(1000) }
        usleep(50_000)
        #expect(later.done.wait(timeout: .now() + 0.1) == .timedOut)
        barrier.answered()  // the given-back ticket's answer: sends the next round trip
        barrier.listenerDone {}
        #expect(later.done.wait(timeout: .now() + 0.1) == .timedOut, "let through by a Sync sent before it came")
        #expect(wire.sent == 2)
        #expect(barrier.listenerMayRead())
        barrier.answered()
        barrier.listenerDone {}
        later.done.wait()
        #expect(later.passed == true)
        // Given back twice, or after it was waited for: nothing more happens.
        barrier.release(given)
        #expect(wire.sent == 2)
    }

    /// A ticket taken while another's round trip is in flight is given back: no round trip
    /// is sent for nobody when that answer comes in.
    @Test func aWaitingTicketGivenBackSendsNothingMore() {
        let barrier = ListenerBarrier()
        let wire = Self.connected(barrier)
        let first = Waiter(barrier)
        wire.await(1)
        guard let second = barrier.take() else { Issue.record("no ticket with a listener"); return }
        barrier.release(second)
        barrier.answered()
        first.done.wait()
        #expect(first.passed == true)
        #expect(wire.sent == 1)
    }
}
