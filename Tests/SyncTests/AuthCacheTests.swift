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
