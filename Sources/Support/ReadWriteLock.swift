import Glibc

/// A value many threads read at once and few change: readers share the lock, so none waits
/// for another; a writer has it alone. For state read on every request and written rarely
/// (`AuthCache`: each idle poll of every thread reads it, and behind one `Mutex` 32 threads
/// queued and spun for each other's lookups, docs/performance/round-06.md, "Every change together,
/// sixth round"). glibc's default rwlock lets readers in while others read; a writer gets in
/// as soon as no reader holds it, which on a request path of microsecond reads is at once.
public final class ReadWriteLock<Value: Sendable>: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// `body` reads the value, alongside other readers.
    public func read<T>(_ body: (borrowing Value) throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// `body` changes the value, alone.
    public func write<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }
}
