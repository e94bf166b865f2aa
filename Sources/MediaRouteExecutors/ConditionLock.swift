#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with two condition variables that wait on `CLOCK_MONOTONIC`:
/// one for threads sleeping until signalled, one for threads sleeping until a
/// deadline, so a signal can choose which kind of sleeper it wakes.
///
/// The executors need a lock a thread can sleep on until work arrives or a
/// deadline passes; `Synchronization.Mutex` has no condition variable. The
/// pthread objects live in heap memory of their own because pthread objects must
/// not move, and a class's stored properties have no address guarantee.
final class ConditionLock: @unchecked Sendable {
    // @unchecked: the pointers are written once in init and freed in deinit;
    // everything else goes through the pthread calls, which are thread-safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// [0]: sleepers without a deadline, [1]: sleepers with one.
    private let conditions: UnsafeMutablePointer<pthread_cond_t>

    /// The sleepers a ``signal(_:)`` wakes one of.
    enum Sleepers {
        /// Threads in `wait(until: nil)`.
        case untimed
        /// Threads in `wait(until:)` with a deadline.
        case timed
    }

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        conditions = .allocate(capacity: 2)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        for index in 0..<2 {
            (conditions + index).initialize(to: pthread_cond_t())
            pthread_cond_init(conditions + index, &attributes)
        }
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        for index in 0..<2 { pthread_cond_destroy(conditions + index) }
        pthread_mutex_destroy(mutex)
        conditions.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes one sleeper of the kind given. Callable without the lock: a sleeper
    /// its owner counted under the lock is already inside `wait`, which released
    /// the lock atomically.
    func signal(_ sleepers: Sleepers) {
        pthread_cond_signal(conditions + (sleepers == .untimed ? 0 : 1))
    }

    /// Sleeps (lock held, released while asleep) until signalled or, with a
    /// deadline, until `CLOCK_MONOTONIC` reaches it. Wakes spuriously at times:
    /// callers re-check their state.
    func wait(until deadline: MonotonicInstant?) {
        guard let deadline else {
            pthread_cond_wait(conditions, mutex)
            return
        }
        var time = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        pthread_cond_timedwait(conditions + 1, mutex, &time)
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
