import Synchronization

/// A monotonic clock that behaviour depending on time reads and sleeps on.
///
/// Timeouts, expiry, playback-position extrapolation and clock sync all take a
/// `HostClock` so that tests and simulations can run on ``ManualHostClock``
/// and finish in microseconds, while production uses ``SystemHostClock``.
/// Times are `Duration`s since an arbitrary, fixed origin ("host time").
public protocol HostClock: Sendable {
    /// The current host time.
    func now() -> Duration
    /// Suspends until host time reaches `deadline`; throws `CancellationError` when cancelled.
    func sleep(until deadline: Duration) async throws
}

extension HostClock {
    /// Suspends for `duration` of host time.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration)
    }
}

extension Duration {
    /// The duration as floating-point seconds.
    public var seconds: Double {
        let (whole, atto) = components
        return Double(whole) + Double(atto) * 1e-18
    }

    /// A duration from floating-point seconds (rounded to nanoseconds).
    public static func seconds(double value: Double) -> Duration {
        .nanoseconds(Int64((value * 1e9).rounded()))
    }
}

/// The real monotonic clock (`CLOCK_MONOTONIC` through `ContinuousClock`).
public struct SystemHostClock: HostClock {
    private static let origin = ContinuousClock.now

    public init() {}

    public func now() -> Duration {
        ContinuousClock.now - Self.origin
    }

    public func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: Self.origin + deadline, tolerance: nil)
    }
}

/// A clock that only moves when told to, for deterministic tests and simulations.
///
/// Sleepers are resumed by ``advance(by:)`` / ``advance(to:)`` in deadline order.
public final class ManualHostClock: HostClock {
    private struct Sleeper {
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private enum Slot {
        /// The sleep call began but its continuation is not registered yet.
        case starting
        /// Cancelled before its continuation was registered.
        case cancelled
        case sleeping(Sleeper)
    }

    private struct State {
        var now: Duration
        var nextID: UInt64 = 0
        var slots: [UInt64: Slot] = [:]

        var sleepers: [(id: UInt64, sleeper: Sleeper)] {
            slots.compactMap { id, slot in
                if case .sleeping(let sleeper) = slot { return (id, sleeper) }
                return nil
            }
        }
    }

    private let state: Mutex<State>

    public init(now: Duration = .zero) {
        state = Mutex(State(now: now))
    }

    public func now() -> Duration {
        state.withLock { $0.now }
    }

    /// How many tasks are currently sleeping on this clock.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// The earliest deadline any sleeper waits for.
    public var nextDeadline: Duration? {
        state.withLock { $0.sleepers.map(\.sleeper.deadline).min() }
    }

    public func sleep(until deadline: Duration) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.slots[state.nextID] = .starting
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action { case resume, cancel, wait }
                let action = state.withLock { state -> Action in
                    if case .cancelled = state.slots[id] {
                        state.slots[id] = nil
                        return .cancel
                    }
                    if deadline <= state.now {
                        state.slots[id] = nil
                        return .resume
                    }
                    state.slots[id] = .sleeping(Sleeper(deadline: deadline, continuation: continuation))
                    return .wait
                }
                switch action {
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                switch state.slots[id] {
                case .sleeping(let sleeper):
                    state.slots[id] = nil
                    return sleeper
                case .starting:
                    state.slots[id] = .cancelled
                    return nil
                case .cancelled, nil:
                    return nil
                }
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration`, waking every sleeper whose deadline passed.
    public func advance(by duration: Duration) {
        advance(to: now() + duration)
    }

    /// Moves time forward to `instant` (never backwards), waking sleepers in deadline order.
    public func advance(to instant: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            if instant > state.now { state.now = instant }
            let due = state.sleepers.filter { $0.sleeper.deadline <= state.now }
                .sorted { $0.sleeper.deadline < $1.sleeper.deadline }
            for entry in due { state.slots[entry.id] = nil }
            return due.map(\.sleeper)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
