import CastChannel
import Logging
import MediaClock
import Transport

/// Why a Cast channel ended or a request on it failed.
public struct CastChannelFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// No message (not even a `PONG`) within the heartbeat's timeout.
        case heartbeatTimeout
        /// The receiver closed or reset the connection.
        case connectionLost
        /// The receiver sent what is not the channel's framing (oversized, malformed).
        case protocolViolation
        /// No answer to a request in time.
        case requestTimeout
        /// We closed it.
        case closed
    }

    public var reason: Reason
    public var message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}

/// One TLS connection to a Cast receiver: frames messages both ways, answers and sends
/// heartbeats, matches answers to requests by id, and hands everything else on as events.
///
/// The channel is dead when the receiver sends nothing for ``Timing/heartbeatTimeout``
/// (it is pinged every ``Timing/heartbeatInterval``), closes the connection, or breaks the
/// framing; ``events`` then finishes after one `.ended` with the reason. Nothing is retried
/// here: the route decides whether to reconnect.
actor CastChannelClient {
    /// The heartbeat and request deadlines.
    struct Timing: Sendable {
        var heartbeatInterval: Duration = .seconds(5)
        var heartbeatTimeout: Duration = .seconds(10)
        var requestTimeout: Duration = .seconds(10)
        /// `LAUNCH` waits for an application to start, which can take long on a slow TV.
        var launchTimeout: Duration = .seconds(30)
    }

    /// What the receiver sent that is not an answer to a request, or the channel's end.
    enum Event: Sendable {
        case message(source: String, reply: CastReply)
        case ended(CastChannelFailure)
    }

    let connection: any Connection
    private let stream: any ByteStream
    private let timing: Timing
    private let clock: any HostClock
    private let logger: Logger
    private var decoder = CastFrameDecoder()
    private var pending: [Int: CheckedContinuation<CastReply, any Error>] = [:]
    private var nextRequestID = 1
    private var lastHeard: Duration
    private var tasks: [Task<Void, Never>] = []
    private var ended: CastChannelFailure?
    private let continuation: AsyncStream<Event>.Continuation
    /// Events in arrival order; one consumer.
    nonisolated let events: AsyncStream<Event>

    init(connection: any Connection, stream: any ByteStream, timing: Timing, clock: any HostClock, logger: Logger) {
        self.connection = connection
        self.stream = stream
        self.timing = timing
        self.clock = clock
        self.logger = logger
        self.lastHeard = clock.now()
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(256))
    }

    /// The device's certificate as the TLS session presented it.
    nonisolated var peerCertificate: [UInt8]? { stream.peerCertificate }

    /// Starts reading and the heartbeat.
    func start() {
        let incoming = stream.incoming
        tasks.append(Task {
            do {
                for try await bytes in incoming {
                    guard await self.received(bytes) else { return }
                }
                self.end(CastChannelFailure(.connectionLost, "the receiver closed the connection"))
            } catch {
                self.end(CastChannelFailure(.connectionLost, "\(error)"))
            }
        })
        tasks.append(Task { await self.beat() })
    }

    /// A fresh request id (ids start at 1; 0 is what receivers put on unsolicited messages).
    func requestID() -> Int {
        defer { nextRequestID = nextRequestID == Int(Int32.max) ? 1 : nextRequestID + 1 }
        return nextRequestID
    }

    /// Sends a message that gets no answer.
    func send(_ request: CastRequest, from source: String, to destination: String) async throws(CastChannelFailure) {
        try await send(request.envelope(from: source, to: destination))
    }

    /// Sends an application's own message in its namespace.
    func send(_ envelope: CastEnvelope) async throws(CastChannelFailure) {
        if let ended { throw ended }
        let bytes: [UInt8]
        do {
            bytes = try envelope.framed()
        } catch {
            throw CastChannelFailure(.protocolViolation, error.message)
        }
        do {
            try await stream.write(bytes)
        } catch {
            let failure = CastChannelFailure(.connectionLost, error.message)
            end(failure)
            throw failure
        }
    }

    /// Sends `request` and waits for the message that carries its id.
    func request(_ request: CastRequest, from source: String, to destination: String) async throws -> CastReply {
        guard let id = request.requestID else {
            try await send(request, from: source, to: destination)
            return .unhandled(namespace: request.namespace, type: "")
        }
        if let ended { throw ended }
        let timeout: Duration
        if case .launch = request { timeout = timing.launchTimeout } else { timeout = timing.requestTimeout }
        let deadline = clock.now() + timeout
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self.answer(id, .failure(CastChannelFailure(.requestTimeout, "no answer to \(request.namespace) request \(id)")))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            pending[id] = continuation
            Task {
                do {
                    try await self.send(request, from: source, to: destination)
                } catch {
                    self.answer(id, .failure(error))
                }
            }
        }
    }

    /// Closes the connection; pending requests fail, ``events`` ends with `.closed`.
    func close() async {
        end(CastChannelFailure(.closed, "closed by the sender"))
        await connection.close()
    }

    private func answer(_ id: Int, _ result: Result<CastReply, any Error>) {
        pending.removeValue(forKey: id)?.resume(with: result)
    }

    /// Handles bytes from the receiver; false once the channel ended.
    private func received(_ bytes: [UInt8]) async -> Bool {
        guard ended == nil else { return false }
        lastHeard = clock.now()
        decoder.append(bytes)
        while true {
            let envelope: CastEnvelope
            do {
                guard let next = try decoder.next() else { return true }
                envelope = next
            } catch {
                // Framing is lost: nothing later on this connection can be trusted to be a message.
                logger.warning("Cast receiver broke the channel's framing", metadata: ["error": "\(error)"])
                end(CastChannelFailure(.protocolViolation, error.message))
                await connection.close()
                return false
            }
            let reply: CastReply
            do {
                reply = try CastReply.decode(envelope)
            } catch {
                // One bad payload is that message's problem, not the channel's.
                logger.notice("Cast message ignored", metadata: ["namespace": "\(envelope.namespace.prefix(80))", "error": "\(error)"])
                continue
            }
            switch reply {
            case .ping:
                try? await send(.pong, from: envelope.destinationID, to: envelope.sourceID)
            case .pong:
                break
            default:
                if let id = reply.requestID, pending[id] != nil {
                    answer(id, .success(reply))
                } else {
                    continuation.yield(.message(source: envelope.sourceID, reply: reply))
                }
            }
        }
    }

    private func beat() async {
        while ended == nil {
            guard (try? await clock.sleep(until: clock.now() + timing.heartbeatInterval)) != nil, ended == nil else { return }
            if clock.now() - lastHeard >= timing.heartbeatTimeout {
                logger.notice("Cast receiver silent: heartbeat timed out")
                end(CastChannelFailure(.heartbeatTimeout, "nothing from the receiver for \(timing.heartbeatTimeout)"))
                await connection.close()
                return
            }
            try? await send(.ping, from: CastNamespace.platformSender, to: CastNamespace.platformReceiver)
        }
    }

    private func end(_ failure: CastChannelFailure) {
        guard ended == nil else { return }
        ended = failure
        for (_, waiting) in pending { waiting.resume(throwing: failure) }
        pending = [:]
        continuation.yield(.ended(failure))
        continuation.finish()
        for task in tasks { task.cancel() }
    }
}
