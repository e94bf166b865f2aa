import MediaClock
import Synchronization
import Transport

/// The sender's end of a connection to a simulated device.
///
/// Messages from the device pass through an outbox that applies the
/// device's reply delay on the host clock while keeping their order.
final class LoopbackConnection: Connection, MessageChannel {
    private struct Delivery: Sendable {
        let bytes: [UInt8]
        let deliverAt: Duration
    }

    private enum Status {
        case open
        case closed
        case failed(TransportError)
    }

    let id: UInt64
    let endpoint: Endpoint
    let incoming: AsyncThrowingStream<[UInt8], any Error>
    private let incomingContinuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    let lifetime: AsyncThrowingStream<Never, any Error>
    private let lifetimeContinuation: AsyncThrowingStream<Never, any Error>.Continuation
    var messages: (any MessageChannel)? { self }
    private let outbox: AsyncStream<Delivery>.Continuation
    private let status = Mutex(Status.open)
    private let device: SimulatedDevice
    private let clock: any HostClock

    init(id: UInt64, endpoint: Endpoint, device: SimulatedDevice, clock: any HostClock) {
        self.id = id
        self.endpoint = endpoint
        self.device = device
        self.clock = clock
        (incoming, incomingContinuation) = AsyncThrowingStream.makeStream(of: [UInt8].self)
        (lifetime, lifetimeContinuation) = AsyncThrowingStream.makeStream(of: Never.self)
        let (outboxStream, outbox) = AsyncStream.makeStream(of: Delivery.self)
        self.outbox = outbox
        let continuation = incomingContinuation
        Task { [clock] in
            for await delivery in outboxStream {
                if delivery.deliverAt > clock.now() {
                    try? await clock.sleep(until: delivery.deliverAt)
                }
                continuation.yield(delivery.bytes)
            }
        }
    }

    func send(_ message: [UInt8]) async throws {
        switch status.withLock({ $0 }) {
        case .open: break
        case .closed: throw TransportError(.closed, "connection to \(endpoint.id) is closed")
        case .failed(let error): throw error
        }
        await device.handle(message, from: self)
    }

    func close() async {
        let wasOpen = status.withLock { status -> Bool in
            guard case .open = status else { return false }
            status = .closed
            return true
        }
        guard wasOpen else { return }
        outbox.finish()
        incomingContinuation.finish()
        lifetimeContinuation.finish()
        await device.detach(id)
    }

    // MARK: Device side

    /// Queues a message from the device, delivered after `delay` seconds of host time.
    func deliver(_ bytes: [UInt8], delay: Double) {
        guard case .open = status.withLock({ $0 }) else { return }
        let at = clock.now() + .seconds(double: delay)
        outbox.yield(Delivery(bytes: bytes, deliverAt: at))
    }

    /// Ends the connection from the device side with a failure.
    func fail(_ error: TransportError) {
        let wasOpen = status.withLock { status -> Bool in
            guard case .open = status else { return false }
            status = .failed(error)
            return true
        }
        guard wasOpen else { return }
        outbox.finish()
        incomingContinuation.finish(throwing: error)
        lifetimeContinuation.finish(throwing: error)
    }
}
