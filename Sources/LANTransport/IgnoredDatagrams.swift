import Logging
import MediaClock
import Synchronization

/// The datagrams one discovery protocol does not act on: counted by reason
/// (``DatagramTally``), with what its sockets dropped before anyone read it, and
/// reported in one `notice` line per period. Shared by the SSDP search and the
/// mDNS browser, which count from their actors while the report runs on a timer.
///
/// Nothing runs while nothing is ignored: the first datagram counted after a
/// report schedules the next one.
final class IgnoredDatagrams: Sendable {
    private struct State {
        var tally: DatagramTally
        var scheduled: Task<Void, Never>?
    }

    private let state: Mutex<State>
    private let sockets: MulticastSockets
    private let period: Duration
    private let logger: Logger

    /// What the report period runs on.
    private let clock: any HostClock

    init(protocolName: String, sockets: MulticastSockets, period: Duration, clock: any HostClock, logger: Logger) {
        self.clock = clock
        state = Mutex(State(tally: DatagramTally(protocolName: protocolName)))
        self.sockets = sockets
        self.period = period
        self.logger = logger
    }

    /// Counts one datagram not acted on.
    func count(_ reason: String) {
        scheduleReport(if: state.withLock { $0.tally.count(reason) })
    }

    /// Counts what the sockets dropped since last asked (too long, or read too slowly).
    func countDropped() {
        scheduleReport(if: state.withLock { $0.tally.count(droppedBy: sockets) })
    }

    /// Reports what is pending now, and schedules nothing more (discovery stopped).
    func finish() {
        state.withLock { $0.scheduled.take() }?.cancel()
        report()
    }

    private func scheduleReport(if first: Bool) {
        guard first else { return }
        let (period, clock) = (self.period, self.clock)
        let report = Task { [weak self] in
            guard (try? await clock.sleep(for: period)) != nil else { return }
            self?.report()
        }
        state.withLock { $0.scheduled = report }
    }

    private func report() {
        let line = state.withLock { state -> String? in
            _ = state.tally.count(droppedBy: sockets)
            return state.tally.report()
        }
        if let line { logger.notice("\(line)") }
    }
}
