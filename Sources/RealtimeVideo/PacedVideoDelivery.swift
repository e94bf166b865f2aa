#if canImport(Glibc)
import Glibc
#endif
public import MediaDevice
public import RoutingModel
import Synchronization

/// Reads an app's pictures from a descriptor on a thread of its own and hands them to a
/// route's device (``RealtimeVideoReceiver``) one per frame period (``VideoFramePacer``).
///
/// The thread is the route's: the receiver encodes on it, so a slow encoder slows this route
/// only. Memory is two pictures (the one being read, the newest whole one) and the last sent.
/// The writer's socket holds at most a picture or so: a writer far ahead blocks, and one that
/// is merely faster has its older pictures dropped. The app closing its end ends the video;
/// ``stop()`` ends it from this side.
///
/// H.264 an app encoded (``VideoFrameFormat/Encoding/h264``) is split into access units
/// (``H264AccessUnitSplitter``) and sent one per period in the order written, none dropped or
/// repeated (a decoder needs them all): a writer ahead of its rate waits on its socket, one
/// behind it has its pictures shown as they come. Pictures before the first IDR that carries
/// its parameter sets are dropped (a decoder could not start on them); a stream that is not
/// H.264 of the declared size ends the video with the reason (``RealtimeVideoStatistics/failure``).
public final class PacedVideoDelivery: Sendable {
    public let format: VideoFrameFormat
    private let receiver: any RealtimeVideoReceiver
    private let descriptor: Int32
    /// A socket pair whose one end the thread polls beside the app's descriptor: written to stop it.
    private let wake: Int32
    private let wakeWriter: Int32
    private let now: @Sendable () -> Duration
    private let ended: @Sendable (RealtimeVideoStatistics) -> Void
    private let state: Mutex<State>

    private struct State {
        var pacer: VideoFramePacer
        var notEncoded: UInt64 = 0
        var active = true
        var started = false
        /// Counts of access units (H.264 written by the app; the pacer counts raw pictures).
        var unitsReceived: UInt64 = 0
        var unitsSent: UInt64 = 0
        var unitsDropped: UInt64 = 0
        var failure: String?
    }

    /// Access units waiting for their slot, at most: the writer waits on its socket beyond them.
    static let queuedAccessUnits = 3

    /// - Parameters:
    ///   - descriptor: the read end (owned from now on: closed when the delivery ends).
    ///   - now: the box's clock, presentation times on it.
    ///   - ended: called once on the delivery's thread when it ended, with the final counts.
    public init(
        reading descriptor: Int32, format: VideoFrameFormat, receiver: any RealtimeVideoReceiver, now: @escaping @Sendable () -> Duration,
        ended: @escaping @Sendable (RealtimeVideoStatistics) -> Void
    ) throws(MediaDeviceError) {
        var pipeEnds: [Int32] = [-1, -1]
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, flags, 0, &pipeEnds) == 0 else { throw MediaDeviceError(.sessionFailed, "socketpair: errno \(errno)") }
        self.format = format
        self.receiver = receiver
        self.descriptor = descriptor
        self.wake = pipeEnds[0]
        self.wakeWriter = pipeEnds[1]
        self.now = now
        self.ended = ended
        self.state = Mutex(State(pacer: VideoFramePacer(period: format.frameDuration)))
    }

    deinit {
        // A delivery whose thread never ran (its start failed, or it was never started) still owns
        // the read end and the wake-up pair; the thread closes them when it ran.
        if !state.withLock({ $0.started }) {
            close(descriptor)
            close(wake)
            close(wakeWriter)
        }
    }

    /// A connected stream socket pair: the read end for the delivery, the write end for the
    /// app, its send buffer about one picture (the kernel doubles what is asked).
    public static func socketPair(for format: VideoFrameFormat) throws(MediaDeviceError) -> (reader: Int32, writer: Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw MediaDeviceError(.sessionFailed, "socketpair: errno \(errno)")
        }
        var size = Int32(clamping: max(65_536, format.frameBytes / 2))
        _ = setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        shutdown(fds[0], Int32(SHUT_WR))
        shutdown(fds[1], Int32(SHUT_RD))
        return (fds[0], fds[1])
    }

    /// Starts the delivery's thread.
    public func start() throws(MediaDeviceError) {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let delivery = Unmanaged<PacedVideoDelivery>.fromOpaque(context!).takeRetainedValue()
            delivery.run()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<PacedVideoDelivery>.fromOpaque(context).release()
            state.withLock { $0.started = false }
            throw MediaDeviceError(.sessionFailed, "cannot start the video thread (\(created))")
        }
        pthread_detach(thread)
    }

    /// Ends the delivery (the writer's end then sees its socket closed).
    public func stop() {
        // Under the lock, and only while the thread runs: it closes the descriptor when it ends,
        // and its number may be another file's by then.
        state.withLock { state in
            guard state.active else { return }
            var one: UInt8 = 1
            _ = write(wakeWriter, &one, 1)
        }
    }

    /// The counts so far.
    public var statistics: RealtimeVideoStatistics { state.withLock { statistics(of: $0) } }

    private func statistics(of state: State) -> RealtimeVideoStatistics {
        let raw = format.encoding.isRaw
        return RealtimeVideoStatistics(
            format: format, active: state.active, framesReceived: raw ? state.pacer.received : state.unitsReceived,
            framesSent: raw ? state.pacer.sent : state.unitsSent, framesDropped: raw ? state.pacer.dropped : state.unitsDropped,
            framesRepeated: state.pacer.repeated, framesNotEncoded: state.notEncoded, codec: receiver.codec, bitrate: receiver.bitrate,
            failure: state.failure)
    }

    private func run() {
        if format.encoding.isRaw {
            readPictures()
        } else {
            do throws(H264StreamError) {
                try readAccessUnits()
            } catch {
                state.withLock { $0.failure = error.description }
            }
        }
        receiver.finish()
        close(descriptor)
        close(wake)
        let final = state.withLock { state in
            state.active = false
            close(wakeWriter)
            return state
        }
        ended(statistics(of: final))
    }

    /// H.264 from the app: access units in the order written, one per period.
    private func readAccessUnits() throws(H264StreamError) {
        var splitter = H264AccessUnitSplitter(maximumAccessUnitBytes: format.frameBytes + 65_536)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var queue: [(unit: H264AccessUnit, arrived: Duration)] = []
        var open = true
        var decodable = false
        var first: Duration? = nil
        var index: Int64 = 0
        let period = format.frameDuration
        while open || !queue.isEmpty {
            var timeout: Int32 = -1
            if !queue.isEmpty {
                let wait = first.map { $0 + period * index - now() } ?? .zero
                timeout = wait <= .zero ? 0 : Int32(clamping: Int((wait / .milliseconds(1)).rounded(.up)))
            }
            let reading = open && queue.count < Self.queuedAccessUnits
            var fds = [pollfd(fd: reading ? descriptor : -1, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, timeout)
            if ready < 0, errno != EINTR { return }
            if fds[1].revents != 0 { return }
            if fds[0].revents != 0 {
                let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
                var units: [H264AccessUnit] = []
                if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) {
                    open = false
                    units = try splitter.finish()
                } else if count > 0 {
                    let split = chunk.withUnsafeBytes { bytes in
                        Result { () throws(H264StreamError) in try splitter.append(UnsafeRawBufferPointer(rebasing: bytes[0..<count])) }
                    }
                    units = try split.get()
                }
                for unit in units {
                    if unit.hasParameterSets, let parameters = try unit.sequenceParameters(), parameters.width != format.width || parameters.height != format.height {
                        throw .sizeMismatch(declared: "\(format.width)x\(format.height)", stream: "\(parameters.width)x\(parameters.height)")
                    }
                    decodable = decodable || (unit.isIDR && unit.hasParameterSets)
                    state.withLock { state in
                        state.unitsReceived &+= 1
                        if !decodable { state.unitsDropped &+= 1 }
                    }
                    if decodable { queue.append((unit, now())) }
                }
            }
            // What is due goes. A picture that came more than a period after its slot (the writer is
            // behind its rate) has the pace resume from its arrival; this thread waking late does not.
            while let (unit, arrived) = queue.first {
                let at = now()
                var due = first.map { $0 + period * index } ?? arrived
                if arrived - due > period || first == nil {
                    first = arrived - period * index
                    due = arrived
                }
                guard due <= at else { break }
                queue.removeFirst()
                index += 1
                let sent = receiver.receive(VideoFrame(format: format, presentationTime: due, data: unit.bytes))
                state.withLock { state in
                    state.unitsSent &+= 1
                    if !sent { state.notEncoded &+= 1 }
                }
            }
        }
    }

    /// Raw pictures: whole ones, paced (``VideoFramePacer``).
    private func readPictures() {
        let frameBytes = format.frameBytes
        var reading = [UInt8](repeating: 0, count: frameBytes)
        var filled = 0
        var newest: [UInt8]? = nil
        var last: [UInt8]? = nil
        // A picture buffer no one holds any more, read into next (no allocation per picture).
        var spare: [UInt8]? = nil
        var open = true
        var stopped = false
        while open {
            let timeout: Int32 = state.withLock { state in
                guard let due = state.pacer.nextSlot else { return -1 }
                let wait = due - now()
                return wait <= .zero ? 0 : Int32(clamping: Int((wait / .milliseconds(1)).rounded(.up)))
            }
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, timeout)
            if ready < 0, errno != EINTR { break }
            if fds[1].revents != 0 {
                stopped = true
                break
            }
            if fds[0].revents != 0 {
                let count = reading.withUnsafeMutableBytes { buffer in
                    read(descriptor, buffer.baseAddress! + filled, frameBytes - filled)
                }
                if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) {
                    open = false
                } else if count > 0 {
                    filled += count
                    if filled == frameBytes {
                        filled = 0
                        // The whole picture becomes the newest; one it replaces (dropped) is read into next.
                        let replaced = newest
                        newest = reading
                        reading = replaced ?? spare.take() ?? [UInt8](repeating: 0, count: frameBytes)
                        let at = now()
                        state.withLock { $0.pacer.arrived(at: at) }
                    }
                }
            }
            let at = now()
            guard let action = state.withLock({ $0.pacer.slot(at: at) }) else { continue }
            let picture: [UInt8]
            switch action {
            case .newest:
                guard let taken = newest else { continue }
                picture = taken
                newest = nil
                spare = last
                last = taken
            case .repeatLast:
                guard let shown = last else { continue }
                picture = shown
            }
            let frame = VideoFrame(format: format, presentationTime: at, data: picture, isRepeat: action == .repeatLast)
            if !receiver.receive(frame) { state.withLock { $0.notEncoded &+= 1 } }
        }
        // The writer's last picture, if it was not sent yet, is not lost with the end.
        if !stopped, let taken = newest {
            let at = now()
            state.withLock { $0.pacer.flushed() }
            if !receiver.receive(VideoFrame(format: format, presentationTime: at, data: taken)) { state.withLock { $0.notEncoded &+= 1 } }
        }
    }
}
