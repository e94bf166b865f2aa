import Synchronization

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
