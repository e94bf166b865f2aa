public import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import IOReactor
import MediaDevice
import RealtimeVideo
import SystemRouting
import RoutingModel
#if PipeWire
import PipeWireSink
import Synchronization
#endif

extension MediaRouteCtl {
    /// Shows video (a YUV4MPEG2 or H.264 file or stream, or a PipeWire node) on a TV or renderer that takes it.
    public struct Mirror: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Show video on a device: a YUV4MPEG2 or H.264 file, - for such a stream on standard input, or pipewire:NODE.",
            discussion: """
                The pictures are encoded in H.264 on the box and sent live to the device (a DLNA \
                renderer gets MPEG-TS over HTTP). A file is read at its own frame rate; a stream \
                on standard input as it comes, for example a camera: \
                ffmpeg -f v4l2 -i /dev/video0 -pix_fmt yuv420p -f yuv4mpegpipe - | mediaroutectl mirror --to "Living Room TV" --source -. \
                H.264 already encoded (an Annex B stream, as ffmpeg -f h264 or a hardware encoder writes it, \
                without B-frames) is told apart by its first bytes and sent as it is, at --rate pictures a second; \
                its size comes from its sequence parameter set. \
                pipewire:NODE takes the video of a PipeWire node (a camera, a screen cast, a pipeline; \
                its node.name or object.serial, as pw-cli ls Node lists them) in the format it and \
                PipeWire settle on. The video ends at the end of the input, when the node goes, or on \
                Ctrl-C; the route ends with it unless --keep.
                """)

        @OptionGroup public var common: CommonOptions
        @Option(name: .customLong("to"), help: "The device's name.") public var device: String
        @Option(help: "A YUV4MPEG2 (.y4m) or H.264 Annex B (.h264) file, - for standard input, or pipewire:NODE.") public var source: String = "-"
        @Option(help: "Pictures a second of H.264 input, N or N/D (YUV4MPEG2 and PipeWire say their own).") public var rate: String = "25"
        @Flag(name: .customLong("loop"), help: "Start the file again at its end (until Ctrl-C).") public var loops = false
        @Option(help: "The pairing code or password, if the device asks for one.") public var pin: String?
        @Flag(help: "Leave the route active when the video ends.") public var keep = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            if source.hasPrefix("pipewire:") {
                #if PipeWire
                try await mirrorPipeWire(node: String(source.dropFirst("pipewire:".count)), console: console)
                return
                #else
                throw CommandFailure("--source pipewire:NODE: this build leaves PipeWire out (built without the PipeWire trait)")
                #endif
            }
            let parts = rate.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let numerator = Int(parts[0]), let denominator = parts.count == 2 ? Int(parts[1]) : 1,
                numerator > 0, denominator > 0
            else { throw CommandFailure("--rate \(rate): give pictures a second as N or N/D (25, 30000/1001)") }
            var input = try VideoInput(path: source, h264Rate: (numerator, denominator))
            defer { input.close() }
            let format = try await input.readHeader()
            let environment = try await common.environment(console: console)
            let route: SystemRoute
            let acquisition: VideoAcquisition
            do {
                route = try await activate(device, pin: pin, discoverySeconds: 5, environment: environment, console: console)
                do {
                    acquisition = try await route.acquireVideo(format: format)
                } catch {
                    if !keep { await endRoute(route, environment: environment) }
                    throw error
                }
            } catch {
                await environment.shutdown()
                throw CommandFailure("cannot mirror: \(error)")
            }
            console.write("Showing \(format) on \(route.routeDisplayName) (latency about \(Stream.milliseconds(acquisition.latency)) ms)")
            let output = acquisition.descriptor
            _ = fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK)
            let interrupted = InterruptSignal.install()
            defer { InterruptSignal.restore(interrupted) }
            var failure: String?
            let start = ContinuousClock.now
            var shown = 0
            reading: while !InterruptSignal.wasRaised {
                let picture: [UInt8]
                do {
                    guard let next = try await input.nextFrame() else {
                        guard loops, !input.isPipe, try input.rewind() else { break reading }
                        continue
                    }
                    picture = next
                } catch {
                    failure = "\(source): \(error)"
                    break
                }
                // A file plays at its frame rate; a live stream is already paced by its source.
                if !input.isPipe {
                    let due = start + format.frameDuration * shown
                    if due > ContinuousClock.now { try? await Task.sleep(until: due) }
                }
                guard await Self.write(picture, to: output) else {
                    failure = "the route's video ended"
                    break
                }
                shown += 1
            }
            Glibc.close(output)
            // What was sent is shown, then the counts (and why the daemon refused the video, if it did).
            try? await Task.sleep(for: min(acquisition.latency, .seconds(3)))
            // The pictures still queued in the daemon go at their slots: the counts are final once its video ended.
            let waitEnd = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < waitEnd, await route.status()?.video?.active == true { try? await Task.sleep(for: .milliseconds(50)) }
            if let refusal = await Self.reportCounts(of: route, console: console)?.failure {
                failure = "the route's video ended: \(refusal)"
            }
            if !keep { await endRoute(route, environment: environment) }
            await environment.shutdown()
            if let failure { throw CommandFailure(failure) }
            console.write(InterruptSignal.wasRaised ? "Stopped." : "Ended.")
        }

        #if PipeWire
        /// How long a PipeWire node may send nothing before the mirror gives up on it.
        static let pipeWireFirstPictureTimeout: Duration = .seconds(10)

        /// `--source pipewire:NODE`: a capture stream linked to the node; the route's video is
        /// acquired in the format the node and PipeWire settle on (``PipeWireVideoCapture``).
        func mirrorPipeWire(node: String, console: any Console) async throws {
            guard !node.isEmpty, node.utf8.count <= 256, !node.contains(where: { $0.isNewline || $0 == "\0" }) else {
                throw CommandFailure("--source pipewire:NODE needs a node name or serial (pw-cli ls Node)")
            }
            let environment = try await common.environment(console: console)
            let route: SystemRoute
            do {
                route = try await activate(device, pin: pin, discoverySeconds: 5, environment: environment, console: console)
            } catch {
                await environment.shutdown()
                throw CommandFailure("cannot mirror: \(error)")
            }
            let refusal = Mutex<String?>(nil)
            let capture = PipeWireVideoCapture(
                mode: .capture(target: node), quitOnSignals: false,
                acquire: { format in
                    do {
                        let acquisition = try await route.acquireVideo(format: format)
                        console.write(
                            "Showing \(node) (\(format)) on \(route.routeDisplayName) (latency about \(Stream.milliseconds(acquisition.latency)) ms)")
                        return acquisition.descriptor
                    } catch {
                        refusal.withLock { $0 = "\(error)" }
                        throw error
                    }
                },
                log: { console.notice($0) })
            let interrupted = InterruptSignal.install()
            defer { InterruptSignal.restore(interrupted) }
            let finished = Atomic<Bool>(false)
            let noPictures = Atomic<Bool>(false)
            let watcher = Task {
                let start = ContinuousClock.now
                while !finished.load(ordering: .acquiring) {
                    try? await Task.sleep(for: .milliseconds(100))
                    if InterruptSignal.wasRaised {
                        capture.stop()
                    } else if capture.counts.picturesIn == 0, ContinuousClock.now - start > Self.pipeWireFirstPictureTimeout {
                        noPictures.store(true, ordering: .releasing)
                        capture.stop()
                    }
                }
            }
            let status = await capture.runOnOwnThread()
            finished.store(true, ordering: .releasing)
            await watcher.value
            let counts = capture.counts
            if counts.picturesWritten > 0 {
                // What was sent is shown, then the counts.
                try? await Task.sleep(for: .milliseconds(500))
                await Self.reportCounts(of: route, console: console)
            }
            if !keep { await endRoute(route, environment: environment) }
            await environment.shutdown()
            if let refusal = refusal.withLock({ $0 }) { throw CommandFailure("cannot mirror: \(refusal)") }
            if status == PipeWireSink.exitUnavailable { throw CommandFailure("PipeWire is not available here: no video from \(node)") }
            if noPictures.load(ordering: .acquiring) {
                throw CommandFailure(
                    "no video from \(node) in \(Int(Self.pipeWireFirstPictureTimeout.components.seconds)) s: is it a video source that is running? (pw-cli ls Node)")
            }
            if status != 0 { throw CommandFailure("PipeWire ended the video from \(node)") }
            if counts.picturesIn == 0, !InterruptSignal.wasRaised {
                throw CommandFailure("no video from \(node): PipeWire has no such video source, or it ended before its first picture (pw-cli ls Node)")
            }
            console.write(InterruptSignal.wasRaised ? "Stopped." : capture.routeVideoEnded ? "The route's video ended." : "Ended.")
        }
        #endif

        /// The route's video counts, in one line; returns them.
        @discardableResult
        static func reportCounts(of route: SystemRoute, console: any Console) async -> RealtimeVideoStatistics? {
            guard let video = await route.status()?.video else { return nil }
            console.write(
                "\(route.routeDisplayName): \(video.framesReceived) pictures received, \(video.framesSent) sent, \(video.framesDropped) dropped, "
                    + "\(video.framesRepeated) repeated, \(video.framesNotEncoded) not encoded (\(video.codec ?? "?"))"
                    + (video.failure.map { "; ended: \($0)" } ?? ""))
            return video
        }

        /// Writes all of `bytes` (waiting for room); false when the reader is gone.
        static func write(_ bytes: [UInt8], to descriptor: Int32) async -> Bool {
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EAGAIN {
                    _ = await IOReactor.shared.ready(descriptor, for: .writable, before: .now + .seconds(10))
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }
}

/// A YUV4MPEG2 file or stream, read a picture at a time; or H.264 (an Annex B stream, told
/// apart by its first bytes), read an access unit at a time, its size from its first SPS.
struct VideoInput {
    let source: PCMSource
    var parser = YUV4MPEG2Parser()
    /// Set for H.264.
    var splitter: H264AccessUnitSplitter?
    let h264Rate: (numerator: Int, denominator: Int)
    var frames: [[UInt8]] = []
    var isPipe: Bool { source.isPipe }

    init(path: String, h264Rate: (numerator: Int, denominator: Int) = (25, 1)) throws {
        source = try PCMSource(path: path)
        self.h264Rate = h264Rate
    }

    func close() { source.close() }

    /// Reads up to the header (for H.264, the first SPS) and returns the pictures' format.
    mutating func readHeader() async throws -> VideoFrameFormat {
        var start: [UInt8] = []
        while start.count < 9 {
            var unbounded: Int?
            guard let chunk = await source.read(max: 256, remaining: &unbounded), !chunk.isEmpty else { break }
            start += chunk
        }
        if start.starts(with: [0, 0, 1]) || start.starts(with: [0, 0, 0, 1]) { return try await readH264Header(start) }
        do {
            frames += try parser.feed(start)
        } catch .notYUV4MPEG2 {
            throw CommandFailure("\(source.path): \(YUV4MPEG2Error.notYUV4MPEG2) and not H.264 (no Annex B start code)")
        } catch {
            throw CommandFailure("\(source.path): \(error)")
        }
        while parser.format == nil {
            var unbounded: Int?
            guard let chunk = await source.read(max: 256, remaining: &unbounded), !chunk.isEmpty else {
                throw CommandFailure("\(source.path): \(YUV4MPEG2Error.notYUV4MPEG2) and not H.264 (no Annex B start code)")
            }
            do { frames += try parser.feed(chunk) } catch { throw CommandFailure("\(source.path): \(error)") }
        }
        return parser.format!
    }

    private mutating func readH264Header(_ start: [UInt8]) async throws -> VideoFrameFormat {
        // The largest access unit of the largest pictures the video path takes.
        splitter = H264AccessUnitSplitter(maximumAccessUnitBytes: 4096 * 2304 * 3 / 2 + 65_536)
        frames = try split(start)
        var ended = false
        while true {
            for unit in frames {
                do {
                    guard let parameters = try H264AccessUnit(bytes: unit, isIDR: false, hasParameterSets: true).sequenceParameters() else { continue }
                    return try VideoFrameFormat(
                        encoding: .h264, width: parameters.width, height: parameters.height, frameRateNumerator: h264Rate.numerator,
                        frameRateDenominator: h264Rate.denominator)
                } catch {
                    throw CommandFailure("\(source.path): \(error)")
                }
            }
            guard !ended else { throw CommandFailure("\(source.path): H.264 without a sequence parameter set") }
            var unbounded: Int?
            if let next = await source.read(max: 1 << 16, remaining: &unbounded), !next.isEmpty {
                frames += try split(next)
            } else {
                ended = true
                frames += try finishSplitting()
            }
        }
    }

    private mutating func finishSplitting() throws -> [[UInt8]] {
        guard var splitter else { return [] }
        defer { self.splitter = splitter }
        do { return try splitter.finish().map(\.bytes) } catch { throw CommandFailure("\(source.path): \(error)") }
    }

    private mutating func split(_ chunk: [UInt8]) throws -> [[UInt8]] {
        guard var splitter else { return [] }
        defer { self.splitter = splitter }
        let result = chunk.withUnsafeBytes { raw in Result { () throws(H264StreamError) in try splitter.append(raw) } }
        do { return try result.get().map(\.bytes) } catch { throw CommandFailure("\(source.path): \(error)") }
    }

    /// The next picture (an access unit for H.264); nil at the end of the input.
    mutating func nextFrame() async throws -> [UInt8]? {
        while frames.isEmpty {
            var unbounded: Int?
            guard let chunk = await source.read(max: 1 << 20, remaining: &unbounded) else { throw CommandFailure("read error") }
            if chunk.isEmpty {
                if splitter != nil {
                    frames += try finishSplitting()
                    return frames.isEmpty ? nil : frames.removeFirst()
                }
                try parser.finish()
                return nil
            }
            frames += splitter == nil ? try parser.feed(chunk) : try split(chunk)
        }
        return frames.removeFirst()
    }

    /// Back to the first picture of a file; false when the input cannot be rewound.
    mutating func rewind() throws -> Bool {
        guard lseek(source.descriptor, 0, SEEK_SET) == 0 else { return false }
        frames = []
        if let splitter {
            self.splitter = H264AccessUnitSplitter(maximumAccessUnitBytes: splitter.maximumAccessUnitBytes)
            return true
        }
        parser = YUV4MPEG2Parser()
        // The header again, synchronously (a file).
        var header: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(source.descriptor, &byte, 1) == 1 {
            header.append(byte)
            if byte == 0x0A { break }
        }
        frames = try parser.feed(header)
        return parser.format != nil
    }
}
