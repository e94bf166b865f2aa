public import CEpoll
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The one thread of the process that waits for file descriptors, timers and work.
///
/// Everything MediaRoute watches outside swift-nio (the D-Bus connections, rtnetlink,
/// nl80211, udev, the clock socket) registers here instead of running a `poll(2)` loop
/// on a thread of its own: one `epoll_wait` sleeps for all of them, so an idle daemon
/// has one sleeping thread and no wake-ups. Handlers, timers and submitted work run on
/// that thread, one at a time, and must not block; the reactor is also a
/// `TaskExecutor`, so a task that consumes what a handler delivers can run there too,
/// with no thread hand-off per event.
///
/// `shared` is started on first use and lives as long as the process.
public final class IOReactor: TaskExecutor, Sendable {
    /// The process's reactor.
    public static let shared = IOReactor(name: "mediaroute-io")

    /// A scheduled timer. A struct, not a tuple: the table's code is then specialised (a
    /// tuple-valued dictionary went through generic value witnesses on every tick).
    private struct PendingTimer {
        var deadline: ContinuousClock.Instant
        var fire: @Sendable () -> Void
    }

    private struct State {
        var watches: [UInt64: @Sendable (IOEvents) -> Void] = [:]
        var timers: [UInt64: PendingTimer] = [:]
        /// The tokens of the timers due, kept between passes (no allocation per tick).
        var due: [UInt64] = []
        var jobs: [UnownedJob] = []
        var work: [@Sendable () -> Void] = []
        var nextToken: UInt64 = 1
        var sleeping = false
    }

    private let epoll: Int32
    private let wakeFD: Int32
    private let state = Mutex(State())
    /// The reactor thread's id, set once it runs (0 before).
    private let threadID = Atomic<UInt>(0)

    /// A reactor of its own, with its own thread (tests; the process uses ``shared``).
    public init(name: String) {
        epoll = mr_epoll_create()
        wakeFD = mr_event_fd()
        precondition(epoll >= 0 && wakeFD >= 0, "cannot create the I/O reactor (errno \(errno))")
        _ = mr_epoll_control(epoll, mr_epoll_add, wakeFD, mr_epoll_in, 0)
        let start = Unmanaged.passRetained(ReactorStart(reactor: self, name: name)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let start = Unmanaged<ReactorStart>.fromOpaque(context!).takeRetainedValue()
            mr_name_reactor_thread(start.name)
            start.reactor.run()
            return nil
        }, start)
        precondition(created == 0, "cannot start the I/O reactor thread")
        pthread_detach(thread)
    }

    /// Whether the caller runs on the reactor's thread.
    public var isCurrent: Bool { threadID.load(ordering: .acquiring) == UInt(pthread_self()) }

    // MARK: File descriptors

    /// Calls `handler` on the reactor thread whenever `fd` is ready for one of `events`
    /// (level-triggered: until the handler has read or written what there was).
    /// Errors and hang-ups are always reported. The caller keeps owning `fd`: cancel the
    /// watch before closing it (``IOWatch/cancel(then:)`` can close it on the reactor thread).
    public func watch(
        _ fd: Int32, for events: IOEvents, _ handler: @escaping @Sendable (IOEvents) -> Void
    ) throws(IOReactorError) -> IOWatch {
        let token = state.withLock { state in
            defer { state.nextToken += 1 }
            state.watches[state.nextToken] = handler
            return state.nextToken
        }
        guard mr_epoll_control(epoll, mr_epoll_add, fd, events.epollMask, token) == 0 else {
            let code = errno
            state.withLock { _ = $0.watches.removeValue(forKey: token) }
            throw IOReactorError(errno: code, "cannot watch descriptor \(fd)")
        }
        return IOWatch(reactor: self, fd: fd, token: token)
    }

    func modify(_ fd: Int32, token: UInt64, to events: IOEvents) {
        guard state.withLock({ $0.watches[token] != nil }) else { return }
        _ = mr_epoll_control(epoll, mr_epoll_modify, fd, events.epollMask, token)
    }

    /// Removes the watch: called on the reactor thread, the handler is not called again.
    func remove(_ fd: Int32, token: UInt64) -> Bool {
        guard state.withLock({ $0.watches.removeValue(forKey: token) }) != nil else { return false }
        _ = mr_epoll_control(epoll, mr_epoll_delete, fd, 0, token)
        return true
    }

    // MARK: Timers

    /// Calls `fire` on the reactor thread at `deadline` (at once if it has passed).
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void) -> IOTimer {
        let (token, wake) = state.withLock { state -> (UInt64, Bool) in
            defer { state.nextToken += 1 }
            state.timers[state.nextToken] = PendingTimer(deadline: deadline, fire: fire)
            return (state.nextToken, state.sleeping)
        }
        // The thread may be asleep with a later deadline (or none): it has to look again.
        if wake && !isCurrent { self.wake() }
        return IOTimer { [weak self] in self?.cancelTimer(token) ?? false }
    }

    func cancelTimer(_ token: UInt64) -> Bool {
        state.withLock { $0.timers.removeValue(forKey: token) } != nil
    }

    // MARK: Work

    /// Runs `work` on the reactor thread, after the handlers and work already due.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wake = state.withLock { state -> Bool in
            state.work.append(work)
            return state.sleeping
        }
        if wake && !isCurrent { self.wake() }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let wake = state.withLock { state -> Bool in
            state.jobs.append(unowned)
            return state.sleeping
        }
        if wake && !isCurrent { self.wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    // MARK: The thread

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        let capacity = 64
        var events = [UInt32](repeating: 0, count: capacity)
        var tokens = [UInt64](repeating: 0, count: capacity)
        while true {
            runWork()
            let timeout = state.withLock { state -> Int32 in
                if !state.jobs.isEmpty || !state.work.isEmpty { return 0 }
                state.sleeping = true
                var next: ContinuousClock.Instant?
                for timer in state.timers.values where next == nil || timer.deadline < next! { next = timer.deadline }
                guard let next else { return -1 }
                return Self.milliseconds(until: next)
            }
            let count = events.withUnsafeMutableBufferPointer { events in
                tokens.withUnsafeMutableBufferPointer { tokens in
                    mr_epoll_wait(epoll, events.baseAddress, tokens.baseAddress, Int32(capacity), timeout)
                }
            }
            state.withLock { $0.sleeping = false }
            for index in 0..<max(0, Int(count)) {
                let token = tokens[index]
                if token == 0 {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    continue
                }
                // Looked up per event: a handler that cancels another watch stops it at once.
                guard let handler = state.withLock({ $0.watches[token] }) else { continue }
                handler(IOEvents(epoll: events[index]))
            }
            fireTimers()
        }
    }

    /// One batch of what was submitted: work that keeps submitting more cannot starve the descriptors.
    private func runWork() {
        let (jobs, work) = state.withLock { state in
            defer {
                state.jobs.removeAll(keepingCapacity: true)
                state.work.removeAll(keepingCapacity: true)
            }
            return (state.jobs, state.work)
        }
        for item in work { item() }
        guard !jobs.isEmpty else { return }
        let executor = asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
    }

    private func fireTimers() {
        let now = ContinuousClock.now
        // One pass over the table, no new table: this runs after every wake-up, and a
        // real-time stream wakes the reactor 50 times a second.
        let due = state.withLock { state -> [PendingTimer] in
            state.due.removeAll(keepingCapacity: true)
            for (token, timer) in state.timers where timer.deadline <= now { state.due.append(token) }
            guard !state.due.isEmpty else { return [] }
            var due: [PendingTimer] = []
            due.reserveCapacity(state.due.count)
            for token in state.due { if let timer = state.timers.removeValue(forKey: token) { due.append(timer) } }
            if due.count > 1 { due.sort { $0.deadline < $1.deadline } }
            return due
        }
        for timer in due { timer.fire() }
    }

    /// Whole milliseconds until `instant`, rounded up (an `epoll_wait` timeout never fires early).
    static func milliseconds(until instant: ContinuousClock.Instant) -> Int32 {
        let now = ContinuousClock.now
        guard instant > now else { return 0 }
        let (seconds, attoseconds) = (instant - now).components
        return Int32(clamping: seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000 &+ 1)
    }
}

/// What the reactor thread needs to start; passed through `pthread_create`'s context pointer.
private final class ReactorStart: Sendable {
    let reactor: IOReactor
    let name: String

    init(reactor: IOReactor, name: String) {
        self.reactor = reactor
        self.name = name
    }
}

extension IOReactor {
    /// Waits until `fd` has something to read (or reports an error or hang-up: a read
    /// then says which), or until `deadline`; returns whether it became readable. For
    /// one exchange with a kernel socket (a request and its answer), where a watch kept
    /// for the socket's whole life would be more than needed.
    public func readable(_ fd: Int32, before deadline: ContinuousClock.Instant) async -> Bool {
        await ready(fd, for: .readable, before: deadline)
    }

    /// Waits until `fd` is ready for one of `events` (or reports an error or hang-up), or
    /// until `deadline`; returns whether it became ready. A writer held back by a full
    /// socket waits here for room with `.writable`.
    public func ready(_ fd: Int32, for events: IOEvents, before deadline: ContinuousClock.Instant) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiter = OneShotWait(continuation)
            do {
                let watch = try self.watch(fd, for: events) { _ in waiter.finish(true) }
                waiter.attach(watch: watch, timer: schedule(at: deadline) { waiter.finish(false) })
            } catch {
                waiter.finish(false)
            }
        }
    }
}

/// One wait of ``IOReactor/readable(_:before:)``: whichever of the watch and the timer
/// comes first resumes the caller and stops the other.
private final class OneShotWait: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Bool, Never>?
        var watch: IOWatch?
        var timer: IOTimer?
        var result: Bool?
    }

    private let state: Mutex<State>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        state = Mutex(State(continuation: continuation))
    }

    func attach(watch: IOWatch, timer: IOTimer) {
        let finished = state.withLock { state -> Bool in
            guard state.result == nil else { return true }
            state.watch = watch
            state.timer = timer
            return false
        }
        // Finished before the two were attached (a descriptor ready at once): stop them now.
        if finished {
            watch.cancel()
            timer.cancel()
        }
    }

    func finish(_ readable: Bool) {
        let (continuation, watch, timer) = state.withLock { state in
            guard state.result == nil else { return (CheckedContinuation<Bool, Never>?.none, IOWatch?.none, IOTimer?.none) }
            state.result = readable
            defer { state.continuation = nil; state.watch = nil; state.timer = nil }
            return (state.continuation, state.watch, state.timer)
        }
        watch?.cancel()
        timer?.cancel()
        continuation?.resume(returning: readable)
    }
}

extension IOReactor {
    /// Calls `exited` on the reactor thread with the wait status once child `pid` has exited
    /// and is reaped (a pidfd watched like any descriptor: no thread waits for the child).
    /// - Throws: ``IOReactorError`` when the kernel has no pidfd (before Linux 5.3).
    public func reap(_ pid: pid_t, _ exited: @escaping @Sendable (Int32) -> Void) throws(IOReactorError) {
        let descriptor = mr_pidfd_open(pid)
        guard descriptor >= 0 else { throw IOReactorError(errno: errno, "cannot follow process \(pid)") }
        // The child may exit before the watch is stored: whichever of the handler and this
        // function sees both the watch and the exit cancels it (once).
        let state = Mutex<(watch: IOWatch?, reaped: Bool, cancelled: Bool)>((nil, false, false))
        @Sendable func cancelIfDone() {
            let watch = state.withLock { state -> IOWatch? in
                guard state.reaped, !state.cancelled, let watch = state.watch else { return nil }
                state.cancelled = true
                return watch
            }
            watch?.cancel { close(descriptor) }
        }
        let created = try self.watch(descriptor, for: .readable) { _ in
            guard !state.withLock({ $0.reaped }) else { return cancelIfDone() }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return }
            state.withLock { $0.reaped = true }
            cancelIfDone()
            exited(status)
        }
        state.withLock { $0.watch = created }
        cancelIfDone()
    }
}
