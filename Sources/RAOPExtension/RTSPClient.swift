import MediaClock
import RAOP
import Transport

/// One RTSP conversation with a receiver over a byte stream: a request at a time (callers
/// wait their turn), each answered in order or failed by its time limit, the stream's end,
/// or a malformed answer. Once a password is accepted every request carries its digest.
actor RTSPClient {
    private let stream: any ByteStream
    private var parser = RTSPResponseParser()
    private var cseq = 0
    private var waiting: (cseq: Int, continuation: CheckedContinuation<RTSPResponse, any Error>)?
    private var failure: TransportError?
    private var reader: Task<Void, Never>?
    /// Header fields every request carries (the session's `Client-Instance`, `DACP-ID`, `User-Agent`).
    let commonHeaders: [(String, String)]
    /// `Session` from SETUP's answer, sent with the requests after it.
    var session: String?
    /// The receiver's challenge and the password that answers it.
    private var credentials: (challenge: RTSPDigestChallenge, password: String)?
    private var busy = false
    private var turn: [CheckedContinuation<Void, Never>] = []

    /// What a request's timeout runs on.
    private let clock: any HostClock

    init(stream: any ByteStream, clock: any HostClock = SystemHostClock(), commonHeaders: [(String, String)]) {
        self.stream = stream
        self.commonHeaders = commonHeaders
        self.clock = clock
    }

    /// The least round trip to the receiver below RTSP (``Transport/ByteStream/leastRoundTrip()``):
    /// what its network takes, without the time its application takes to answer.
    func leastRoundTrip() async -> Duration? { await stream.leastRoundTrip() }

    func start() {
        let incoming = stream.incoming
        reader = Task { [weak self] in
            do {
                for try await chunk in incoming {
                    guard let self else { return }
                    await self.received(chunk)
                }
                await self?.ended(TransportError(.connectionLost, "the receiver closed the RTSP connection"))
            } catch {
                await self?.ended(error as? TransportError ?? TransportError(.connectionLost, "\(error)"))
            }
        }
    }

    /// Sends `request` and waits for its answer (at most `timeout`).
    func send(_ request: RTSPRequest, timeout: Duration = .seconds(5)) async throws -> RTSPResponse {
        try await exchange(request, timeout: timeout, measuringRoundTrip: false).response
    }

    /// Sends `request` and waits for its answer (at most `timeout`), with the network's round
    /// trip for it as the kernel measured it: the smoothed round trip is read before and after
    /// (nothing else is sent meanwhile: one request at a time), and the one sample that moved it
    /// an eighth of the way is what it is, within 8 µs. Nil where the transport cannot tell or
    /// the kernel took no sample (a retransmission).
    func timedSend(_ request: RTSPRequest, timeout: Duration = .seconds(5)) async throws -> (response: RTSPResponse, roundTrip: Duration?) {
        try await exchange(request, timeout: timeout, measuringRoundTrip: true)
    }

    /// One request and its answer, in its turn; the kernel's round trip read around it only
    /// when asked (two socket-option reads on the event loop per request otherwise wasted).
    private func exchange(_ request: RTSPRequest, timeout: Duration, measuringRoundTrip: Bool) async throws -> (response: RTSPResponse, roundTrip: Duration?) {
        while busy { await withCheckedContinuation { turn.append($0) } }
        busy = true
        let before = measuringRoundTrip ? await stream.smoothedRoundTrip() : nil
        defer {
            busy = false
            if !turn.isEmpty { turn.removeFirst().resume() }
        }
        if let failure { throw failure }
        cseq += 1
        let number = cseq
        var request = request
        var authorization: [(String, String)] = []
        if let (challenge, password) = credentials {
            authorization = [("Authorization", challenge.authorization(username: "iTunes", password: password, method: request.method, uri: request.uri))]
        }
        request.headers = commonHeaders + (session.map { [("Session", $0)] } ?? []) + authorization + request.headers
        let bytes = request.encoded(cseq: number)
        let timer = Task { [weak self, clock] in
            try? await clock.sleep(for: timeout)
            await self?.timedOut(number, request.method)
        }
        defer { timer.cancel() }
        // Waiting before writing: the answer can come before the write returns.
        let response: RTSPResponse = try await withCheckedThrowingContinuation { continuation in
            waiting = (number, continuation)
            let stream = self.stream
            Task { [weak self] in
                do {
                    try await stream.write(bytes)
                } catch {
                    await self?.failed(number, error as? TransportError ?? TransportError(.connectionLost, "\(error)"))
                }
            }
        }
        guard measuringRoundTrip else { return (response, nil) }
        return (response, Self.sample(before: before, after: await stream.smoothedRoundTrip()))
    }

    /// The round trip that moved TCP's smoothed round trip from `before` to `after`
    /// (`srtt += (sample − srtt) / 8`); nil when it did not move or either is unknown.
    static func sample(before: Duration?, after: Duration?) -> Duration? {
        guard let before, let after, before != after else { return nil }
        let sample = after * 8 - before * 7
        return sample > .zero ? sample : nil
    }

    private func failed(_ number: Int, _ error: TransportError) {
        guard let (waitingFor, continuation) = waiting, waitingFor == number else { return }
        waiting = nil
        continuation.resume(throwing: error)
    }

    private func received(_ bytes: [UInt8]) {
        do {
            for response in try parser.consume(bytes) {
                guard let (number, continuation) = waiting, response.cseq == nil || response.cseq == number else { continue }
                waiting = nil
                continuation.resume(returning: response)
            }
        } catch {
            ended(TransportError(.connectionLost, "the receiver's RTSP answer is malformed: \(error)"))
        }
    }

    private func timedOut(_ number: Int, _ method: String) {
        guard let (waitingFor, continuation) = waiting, waitingFor == number else { return }
        waiting = nil
        continuation.resume(throwing: TransportError(.timedOut, "the receiver did not answer \(method)"))
    }

    private func ended(_ error: TransportError) {
        if failure == nil { failure = error }
        if let (_, continuation) = waiting {
            waiting = nil
            continuation.resume(throwing: error)
        }
    }

    /// Answers `challenge` with `password` from now on.
    func authenticate(_ challenge: RTSPDigestChallenge, password: String) {
        credentials = (challenge, password)
    }

    func stop() {
        reader?.cancel()
        ended(TransportError(.closed, "the RTSP connection was closed"))
    }
}
