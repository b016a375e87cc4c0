import Foundation
import Testing

@testable import Support

@Suite struct ReadWriteLockTests {
    /// Writers exclude each other and every reader: 8 threads adding to both halves of a
    /// pair under `write`, 8 reading it under `read`, lose no addition and never see the
    /// halves differ (a lock that let a reader in during a write, or two writers together,
    /// fails one or the other).
    @Test func writersAloneReadersTogether() {
        struct Pair: Sendable { var a = 0, b = 0 }
        let lock = ReadWriteLock(Pair())
        let torn = ReadWriteLock(0)
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            for _ in 0..<20_000 {
                if index % 2 == 0 {
                    lock.write { pair in
                        pair.a += 1
                        pair.b += 1
                    }
                } else if lock.read({ $0.a != $0.b }) {
                    torn.write { $0 += 1 }
                }
            }
        }
        #expect(lock.read { $0.a } == 8 * 20_000)
        #expect(lock.read { $0.b } == 8 * 20_000)
        #expect(torn.read { $0 } == 0)
    }
}
