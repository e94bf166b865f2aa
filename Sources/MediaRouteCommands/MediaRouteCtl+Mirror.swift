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

extension MediaRouteCtl {
    /// Shows raw video (a YUV4MPEG2 file or stream) on a TV or renderer that takes it.
    public struct Mirror: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Show video on a device: a YUV4MPEG2 file, or - for a YUV4MPEG2 stream on standard input.",
            discussion: """
                The pictures are encoded in H.264 on the box and sent live to the device (a DLNA \
                renderer gets MPEG-TS over HTTP). A file is read at its own frame rate; a stream \
                on standard input as it comes, for example a camera: \
                ffmpeg -f v4l2 -i /dev/video0 -pix_fmt yuv420p -f yuv4mpegpipe - | mediaroutectl mirror --to "Living Room TV" --source -. \
                The video ends at the end of the input or on Ctrl-C; the route ends with it unless --keep.
                """)

        @OptionGroup public var common: CommonOptions
        @Option(name: .customLong("to"), help: "The device's name.") public var device: String
        @Option(help: "A YUV4MPEG2 file (.y4m), or - for standard input.") public var source: String = "-"
        @Flag(name: .customLong("loop"), help: "Start the file again at its end (until Ctrl-C).") public var loops = false
        @Option(help: "The pairing code or password, if the device asks for one.") public var pin: String?
        @Flag(help: "Leave the route active when the video ends.") public var keep = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            if source.hasPrefix("pipewire:") {
                throw CommandFailure("--source pipewire:NODE is not built yet: link the node to the route's PipeWire video node instead (Docs/video.md)")
            }
            var input = try VideoInput(path: source)
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
            // What was sent is shown, then the counts.
            try? await Task.sleep(for: min(acquisition.latency, .seconds(3)))
            if let video = await route.status()?.video {
                console.write(
                    "\(route.routeDisplayName): \(video.framesReceived) pictures received, \(video.framesSent) sent, \(video.framesDropped) dropped, "
                        + "\(video.framesRepeated) repeated, \(video.framesNotEncoded) not encoded (\(video.codec ?? "?"))")
            }
            if !keep { await endRoute(route, environment: environment) }
            await environment.shutdown()
            if let failure { throw CommandFailure(failure) }
            console.write(InterruptSignal.wasRaised ? "Stopped." : "Ended.")
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

/// A YUV4MPEG2 file or stream, read a picture at a time.
struct VideoInput {
    let source: PCMSource
    var parser = YUV4MPEG2Parser()
    var frames: [[UInt8]] = []
    var isPipe: Bool { source.isPipe }

    init(path: String) throws {
        source = try PCMSource(path: path)
    }

    func close() { source.close() }

    /// Reads up to the header and returns the pictures' format.
    mutating func readHeader() async throws -> VideoFrameFormat {
        while parser.format == nil {
            var unbounded: Int?
            guard let chunk = await source.read(max: 256, remaining: &unbounded), !chunk.isEmpty else {
                throw CommandFailure("\(source.path): \(YUV4MPEG2Error.notYUV4MPEG2)")
            }
            do { frames += try parser.feed(chunk) } catch { throw CommandFailure("\(source.path): \(error)") }
        }
        return parser.format!
    }

    /// The next picture; nil at the end of the input.
    mutating func nextFrame() async throws -> [UInt8]? {
        while frames.isEmpty {
            var unbounded: Int?
            guard let chunk = await source.read(max: 1 << 20, remaining: &unbounded) else { throw CommandFailure("read error") }
            if chunk.isEmpty {
                try parser.finish()
                return nil
            }
            frames += try parser.feed(chunk)
        }
        return frames.removeFirst()
    }

    /// Back to the first picture of a file; false when the input cannot be rewound.
    mutating func rewind() throws -> Bool {
        guard lseek(source.descriptor, 0, SEEK_SET) == 0 else { return false }
        parser = YUV4MPEG2Parser()
        frames = []
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
