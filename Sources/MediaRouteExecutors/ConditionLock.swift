#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with one condition variable that waits on `CLOCK_MONOTONIC`.
///
/// The executors need a lock a thread can sleep on until work arrives or a
/// deadline passes; `Synchronization.Mutex` has no condition variable. The
/// pthread objects live in heap memory of their own because pthread objects must
/// not move, and a class's stored properties have no address guarantee.
final class ConditionLock: @unchecked Sendable {
    // @unchecked: the two pointers are written once in init and freed in deinit;
    // everything else goes through the pthread calls, which are thread-safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes one waiter; call with the lock held.
    func signal() { pthread_cond_signal(condition) }

    /// Sleeps (lock held, released while asleep) until signalled or, with a
    /// deadline, until `CLOCK_MONOTONIC` reaches it. Wakes spuriously at times:
    /// callers re-check their state.
    func wait(until deadline: MonotonicInstant?) {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return
        }
        var time = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex, &time)
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock the condition variables wait on.
struct MonotonicInstant: Comparable, Sendable {
    var nanoseconds: UInt64

    static var now: MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
    }

    /// Now plus `delay` (a negative delay is now).
    static func after(_ delay: Duration) -> MonotonicInstant {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return MonotonicInstant(nanoseconds: now.nanoseconds &+ UInt64(clamping: max(0, nanoseconds)))
    }

    static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
