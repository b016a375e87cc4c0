import Foundation
import Testing

@testable import Sync

/// What a worker remembers of tokens for idle polls answered from memory (`AuthCache`):
/// only what an idle check showed, only while the listener is live, and nothing a fill read
/// before an invalidation.
@Suite struct AuthCacheTests {
    let token: [UInt8] = Array(repeating: 7, count: 32)
    let other: [UInt8] = Array(repeating: 8, count: 32)

    func live() -> AuthCache {
        let cache = AuthCache()
        cache.setLive(true)
        return cache
    }

    @Test func onlyTheTokenAndPartitionsAnIdleCheckShowed() {
        let cache = live()
        cache.fill(token, readable: ["agency=Gabon", "user=1"], seconds: 60, asked: AuthCache.now(), since: cache.generation)
        #expect(cache.allows(token, ["agency=Gabon"]))
        #expect(cache.allows(token, ["agency=Gabon", "user=1"]))
        #expect(!cache.allows(token, ["agency=Gabon", "agency=WildAid"]), "one partition never checked")
        #expect(!cache.allows(other, ["agency=Gabon"]), "another token")
    }

    @Test func anExpiredTokenIsNotAllowed() {
        let cache = live()
        let asked = AuthCache.now()
        cache.fill(token, readable: ["agency=Gabon"], seconds: 1, asked: asked, since: cache.generation)
        #expect(cache.allows(token, ["agency=Gabon"], now: asked + 999_000_000))
        #expect(!cache.allows(token, ["agency=Gabon"], now: asked + 1_000_000_000))
        cache.fill(other, readable: ["agency=Gabon"], seconds: 0, asked: asked, since: cache.generation)
        #expect(!cache.allows(other, ["agency=Gabon"], now: asked))
    }

    @Test func anInvalidationForgetsAndDropsFillsThatBeganBefore() {
        let cache = live()
        let before = cache.generation
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: before)
        cache.invalidate()
        #expect(!cache.allows(token, ["agency=Gabon"]))
        // A statement that read the old state, answered after the notification: not kept.
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: before)
        #expect(!cache.allows(token, ["agency=Gabon"]))
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: cache.generation)
        #expect(cache.allows(token, ["agency=Gabon"]))
    }

    @Test func nothingWithoutTheListenerNorFromBeforeItConnected() {
        let cache = AuthCache()
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: cache.generation)
        #expect(!cache.allows(token, ["agency=Gabon"]), "never live")
        let before = cache.generation
        cache.setLive(true)
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: before)
        #expect(!cache.allows(token, ["agency=Gabon"]), "read before LISTEN: a notification may have been missed")
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: cache.generation)
        #expect(cache.allows(token, ["agency=Gabon"]))
        cache.setLive(false)
        #expect(!cache.allows(token, ["agency=Gabon"]))
        cache.setLive(true)
        #expect(!cache.allows(token, ["agency=Gabon"]), "forgotten when the connection was lost")
    }

    @Test func theCallerOnlyOfADownloadsFillAndOnlyForItsPartition() {
        let cache = live()
        cache.fill(token, readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: cache.generation)
        #expect(cache.caller(token, reading: "agency=Gabon") == nil, "an idle check does not say whose token it is")
        cache.fill(token, readable: ["agency=WildAid"], seconds: 60, asked: AuthCache.now(), since: cache.generation,
                   user: "u1")
        #expect(cache.caller(token, reading: "agency=WildAid") == "u1")
        #expect(cache.caller(token, reading: "agency=Gabon") == "u1")
        #expect(cache.caller(token, reading: "agency=Other") == nil, "a partition never seen readable")
        #expect(cache.caller(other, reading: "agency=WildAid") == nil)
        cache.invalidate()
        #expect(cache.caller(token, reading: "agency=WildAid") == nil)
    }

    @Test func aFullCacheStartsAgain() {
        let cache = AuthCache(capacity: 2)
        cache.setLive(true)
        for n in 0..<3 {
            cache.fill([UInt8(n)], readable: ["agency=Gabon"], seconds: 60, asked: AuthCache.now(), since: cache.generation)
        }
        #expect(!cache.allows([0], ["agency=Gabon"]))
        #expect(cache.allows([2], ["agency=Gabon"]))
    }
}

/// The listener's round trips on behalf of polls: a poll is let through only by a round
/// trip whose tickets it was among. (The waiting poll is a thread of its own: it blocks.)
@Suite struct ListenerBarrierTests {
    final class Waiter: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var passed: Bool?
        init(_ barrier: ListenerBarrier) {
            Thread { [self] in
                passed = barrier.await(timeout: 10)
                done.signal()
            }.start()
        }
    }

    /// The tickets a round trip sent now would cover, once a poll past `after` waits.
    static func ticket(_ barrier: ListenerBarrier, after: UInt64 = 0) -> UInt64 {
        while true {
            if let ticket = barrier.pending(), ticket > after { return ticket }
            usleep(1000)
        }
    }

    @Test func noListenerNoBarrier() {
        let barrier = ListenerBarrier()
        #expect(!barrier.await(timeout: 0.05))
    }

    @Test func aRoundTripLetsThroughThePollsWaitingWhenItWasSent() {
        let barrier = ListenerBarrier()
        barrier.connected()
        #expect(barrier.pending() == nil)
        let waiter = Waiter(barrier)
        let ticket = Self.ticket(barrier)
        barrier.completed(ticket)
        waiter.done.wait()
        #expect(waiter.passed == true)
        #expect(barrier.pending() == nil)
    }

    @Test func aPollArrivingDuringARoundTripWaitsForTheNext() {
        let barrier = ListenerBarrier()
        barrier.connected()
        let first = Waiter(barrier)
        let sent = Self.ticket(barrier)  // the round trip is sent now
        let second = Waiter(barrier)
        let next = Self.ticket(barrier, after: sent)
        barrier.completed(sent)
        first.done.wait()
        #expect(first.passed == true)
        #expect(second.done.wait(timeout: .now() + 0.2) == .timedOut, "let through by a round trip sent before it came")
        barrier.completed(next)
        second.done.wait()
        #expect(second.passed == true)
    }

    /// A poll that gave up waiting is no longer among the tickets (no round trip is made for
    /// it); a poll after it is let through by a round trip of its own.
    @Test func aPollThatTimedOutFailsAndLeaves() {
        let barrier = ListenerBarrier()
        barrier.connected()
        #expect(!barrier.await(timeout: 0.05))
        #expect(barrier.pending() == nil)
        let later = Waiter(barrier)
        let sent = Self.ticket(barrier)
        barrier.completed(sent)
        later.done.wait()
        #expect(later.passed == true)
        #expect(barrier.pending() == nil)
    }

    @Test func losingTheListenerFailsTheWaitingPolls() {
        let barrier = ListenerBarrier()
        barrier.connected()
        let waiter = Waiter(barrier)
        _ = Self.ticket(barrier)
        barrier.lost()
        waiter.done.wait()
        #expect(waiter.passed == false)
    }
}
