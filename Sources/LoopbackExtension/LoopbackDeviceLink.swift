import LoopbackTransport
import MediaClock
import Transport

/// One open connection to a simulated device: request/reply matching by id,
/// with a timeout per request, and device-initiated events passed on in order.
actor LoopbackDeviceLink {
    private let connection: any Connection
    private let channel: any MessageChannel
    private let clock: any HostClock
    private let requestTimeout: Duration
    private var nextID: UInt32 = 0
    private var pending: [UInt32: CheckedContinuation<LoopbackReply, any Error>] = [:]
    /// Requests sent whose caller has not had its answer yet.
    private var inFlight: Set<UInt32> = []
    private var early: [UInt32: Result<LoopbackReply, any Error>] = [:]
    private var reader: Task<Void, Never>?
    private var closedError: (any Error)?

    /// - Throws: ``TransportError/Code/unsupported`` when the connection does not carry messages.
    init(connection: any Connection, clock: any HostClock, requestTimeout: Duration) throws(TransportError) {
        guard let channel = connection.messages else {
            throw TransportError(.unsupported, "\(connection.endpoint.id) does not exchange messages")
        }
        self.connection = connection
        self.channel = channel
        self.clock = clock
        self.requestTimeout = requestTimeout
    }

    /// Starts reading; `onEvent` gets device-initiated messages, `onClose` the end (nil: closed by us).
    func start(
        onEvent: @escaping @Sendable (LoopbackReply) async -> Void,
        onClose: @escaping @Sendable ((any Error)?) async -> Void
    ) {
        let incoming = channel.incoming
        reader = Task {
            var failure: (any Error)?
            do {
                for try await bytes in incoming {
                    guard let envelope = LoopbackEnvelope<LoopbackReply>.decode(bytes) else { continue }
                    if let id = envelope.id {
                        self.resolve(id, with: .success(envelope.body))
                    } else {
                        await onEvent(envelope.body)
                    }
                }
            } catch {
                failure = error
            }
            self.failAll(failure ?? TransportError(.closed, "connection closed"))
            await onClose(failure)
        }
    }

    /// Sends a request and waits for its reply.
    /// - Throws: the transport's error, or ``TransportError/Code/timedOut``.
    func request(_ body: LoopbackRequest) async throws -> LoopbackReply {
        if let closedError { throw closedError }
        nextID &+= 1
        let id = nextID
        let deadline = clock.now() + requestTimeout
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self.resolve(id, with: .failure(TransportError(.timedOut, "no reply to \(body) in time")))
        }
        inFlight.insert(id)
        defer {
            timer.cancel()
            inFlight.remove(id)
            early.removeValue(forKey: id)
        }
        // Send in line so that requests leave in the order they were made; a reply
        // that beats the registration below waits in `early`.
        try await channel.send(LoopbackEnvelope(id: id, body: body).encoded())
        if let result = early.removeValue(forKey: id) { return try result.get() }
        if let closedError { throw closedError }
        return try await withCheckedThrowingContinuation { continuation in
            pending[id] = continuation
        }
    }

    func close() async {
        await connection.close()
    }

    private func resolve(_ id: UInt32, with result: Result<LoopbackReply, any Error>) {
        if let continuation = pending.removeValue(forKey: id) {
            continuation.resume(with: result)
        } else if inFlight.contains(id) {
            early[id] = result
        }
    }

    private func failAll(_ error: any Error) {
        closedError = error
        let waiting = pending
        pending.removeAll()
        for continuation in waiting.values { continuation.resume(throwing: error) }
    }
}
