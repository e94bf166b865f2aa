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
import RealtimeAudio
import SystemRouting
import RoutingModel
import SampleSink

extension MediaRouteCtl {
    /// Streams PCM from a WAV file, a raw PCM file or standard input to devices that take real-time audio.
    public struct Stream: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Stream a WAV file or raw PCM (a file, or - for standard input) to one or more devices.",
            discussion: """
                The samples go to each device at the device's pace: a file is read no faster than it \
                plays. A WAV file says its own format (16-bit integer or 32-bit float PCM); raw PCM is \
                s16le at 44100 Hz in 2 channels unless --format, --rate and --channels say otherwise. \
                Other formats through a pipe, for example: \
                ffmpeg -i song.flac -f s16le -ar 44100 -ac 2 - | mediaroutectl stream - --to "Kitchen Speaker". \
                With several --to the devices play as a group: each is held back by how much less than the \
                slowest it buffers, so the same sample comes out of every device at the same time (to within \
                the devices' declared latencies; exact clock sync is per protocol). The stream ends at the end of the input or on Ctrl-C; \
                the routes end with it unless --keep.
                """)

        @OptionGroup public var common: CommonOptions
        @Argument(help: "A WAV file, a raw PCM file, or - for standard input.") public var input: String
        @Option(name: .customLong("to"), help: "A device's name (repeatable).") public var devices: [String] = []
        @Option(help: "Raw PCM: s16le or f32le (default s16le).") public var format: String?
        @Option(help: "Raw PCM: 44100 or 48000 frames per second (default 44100).") public var rate: Int?
        @Option(help: "Raw PCM: 1 or 2 channels (default 2).") public var channels: Int?
        @Option(help: "The pairing code or password, if a device asks for one.") public var pin: String?
        @Option(help: "The title a device shows (AirPlay receivers).") public var title: String?
        @Option(help: "The artist a device shows.") public var artist: String?
        @Option(help: "The album a device shows.") public var album: String?
        @Option(help: "Cover art a device shows: a JPEG or PNG file of at most 1 MiB.") public var artwork: String?
        @Flag(help: "Leave the routes active when the stream ends.") public var keep = false

        public init() {}

        /// What `--title`, `--artist`, `--album` and `--artwork` say; nil when none is given.
        func nowPlaying(duration: Double?) throws -> RealtimeNowPlaying? {
            guard title != nil || artist != nil || album != nil || artwork != nil else { return nil }
            var nowPlaying = RealtimeNowPlaying(
                metadata: PlaybackMetadata(title: title, artist: artist, album: album, duration: duration), position: 0)
            if let artwork {
                guard let data = FileManager.default.contents(atPath: artwork) else { throw CommandFailure("cannot read \(artwork)") }
                guard let image = RealtimeNowPlaying.Artwork(bytes: [UInt8](data)) else {
                    throw CommandFailure("\(artwork) is not a JPEG or PNG image of at most \(RealtimeNowPlaying.Artwork.maximumBytes) bytes")
                }
                nowPlaying.artwork = image
            }
            return nowPlaying
        }

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            guard !devices.isEmpty else { throw CommandFailure("say where to stream with --to NAME") }
            let source = try PCMSource(path: input)
            defer { source.close() }
            let opening = try await source.readFormat(raw: rawFormat())
            let nowPlaying = try nowPlaying(duration: opening.duration)
            let environment = try await common.environment(console: console)
            var routes: [SystemRoute] = []
            var sinks: [RealtimeSampleSink] = []
            func endAll() async {
                for route in routes where !keep { await endRoute(route, environment: environment) }
                await environment.shutdown()
            }
            do {
                for name in devices {
                    let route = try await activate(name, pin: pin, discoverySeconds: 5, environment: environment, console: console)
                    routes.append(route)
                    if let nowPlaying {
                        do {
                            try await route.setNowPlaying(nowPlaying)
                        } catch let error as MediaDeviceError where error.code == .unsupported {
                            // A device with nothing to show: the stream goes on.
                        }
                    }
                    guard devices.count == 1 else { continue }
                    let sink = try await route.startRealtimeSampleDelivery()
                    // An empty buffer acquires delivery: a format the device cannot take fails here, before any input is read.
                    try await sink.send(SampleBuffer(format: opening.format, presentationTime: .zero, frameCount: 0, data: []))
                    sinks.append(sink)
                    let latency = await sink.acquisition.map { " (latency \(Self.milliseconds($0.latency)) ms)" } ?? ""
                    console.write("Streaming \(opening.format.name) to \(route.routeDisplayName)\(latency)")
                }
                if devices.count > 1 {
                    // A group: one delivery for all (one socket, one clock); the daemon holds back each
                    // device by how much less than the slowest it buffers, so a sample comes out of
                    // every device at the same time, and AirPlay receivers share one timeline.
                    let (acquisition, leads) = try await environment.controller.acquireGroupAudio(routes, format: opening.format)
                    let sink = RealtimeSampleSink(acquired: acquisition, session: routes[0].session)
                    try await sink.send(SampleBuffer(format: opening.format, presentationTime: .zero, frameCount: 0, data: []))
                    sinks.append(sink)
                    for (index, lead) in leads.enumerated() where Self.milliseconds(lead) > 0 {
                        console.write("\(routes[index].routeDisplayName) starts \(Self.milliseconds(lead)) ms later, to play with the others")
                    }
                    let names = routes.map(\.routeDisplayName).joined(separator: " + ")
                    console.write("Streaming \(opening.format.name) to \(names) as a group (latency \(Self.milliseconds(acquisition.latency)) ms)")
                }
            } catch {
                await endAll()
                throw CommandFailure("cannot stream: \(error)")
            }

            let bytesPerFrame = opening.format.bytesPerFrame ?? 4
            var queues = [[UInt8]](repeating: [], count: sinks.count)
            var latencies: [Duration] = []
            for sink in sinks { latencies.append(await sink.acquisition?.latency ?? .zero) }
            let turn = max(1, opening.format.sampleRate / 100) * bytesPerFrame  // 10 ms

            let interrupted = InterruptSignal.install()
            defer { InterruptSignal.restore(interrupted) }
            var pending = opening.firstBytes
            var remaining = opening.remaining
            var failure: (any Error)?
            var inputEnded = false
            var finished = [Bool](repeating: false, count: sinks.count)
            streaming: while !InterruptSignal.wasRaised {
                if !inputEnded, queues.contains(where: { $0.count < turn }) {
                    if let chunk = await source.read(max: 16 * 1024, remaining: &remaining), !chunk.isEmpty {
                        pending += chunk
                    } else {
                        inputEnded = true
                    }
                    // Whole frames go out; a partial one waits for its other bytes (or ends the stream).
                    let whole = inputEnded ? pending.count : pending.count - pending.count % bytesPerFrame
                    for index in queues.indices { queues[index] += pending[..<whole] }
                    pending.removeFirst(whole)
                }
                guard queues.contains(where: { !$0.isEmpty }) else { break }
                for (index, sink) in sinks.enumerated() where queues[index].isEmpty && inputEnded && !finished[index] {
                    // Done with everything it had: closed now, not after the others (it would
                    // get silence, counted as underruns, while they play out their lead).
                    finished[index] = true
                    await sink.finish()
                }
                for (index, sink) in sinks.enumerated() where !queues[index].isEmpty {
                    let piece = Array(queues[index].prefix(turn))
                    queues[index].removeFirst(piece.count)
                    do {
                        try await sink.send(SampleBuffer(format: opening.format, presentationTime: .zero, frameCount: piece.count / bytesPerFrame, data: piece))
                    } catch {
                        failure = CommandFailure("\(routes[index].routeDisplayName): \(error)")
                        break streaming
                    }
                }
            }
            if InterruptSignal.wasRaised || failure != nil {
                for route in routes { await route.stopRealtimeSampleDelivery() }
            } else {
                // The end of the input: what was written plays out, then each delivery reports its end.
                for (index, sink) in sinks.enumerated() where !finished[index] { await sink.finish() }
                // Each delivery says when it ended (an event, not polled); ten seconds at most in all.
                let deadline = ContinuousClock.now + .seconds(10)
                for route in routes {
                    _ = await route.audioEnded(within: max(.zero, deadline - ContinuousClock.now))
                }
                // Then what the devices hold plays (their declared latency, at most 5 s), so the
                // command ends with the sound rather than cutting its last seconds.
                let playedOut = ContinuousClock.now + min(latencies.max() ?? .zero, .seconds(5))
                while ContinuousClock.now < playedOut, !InterruptSignal.wasRaised {
                    try? await Task.sleep(for: .milliseconds(50))
                }
            }
            for route in routes {
                if let statistics = await route.audioStatistics() {
                    console.write(
                        "\(route.routeDisplayName): \(statistics.framesDelivered) frames played, \(statistics.underruns) underruns, "
                            + "\(statistics.silenceFrames) frames of silence, \(statistics.framesDropped) dropped")
                }
            }
            await endAll()
            if let failure { throw failure }
            console.write(InterruptSignal.wasRaised ? "Stopped." : "Ended.")
        }

        private func rawFormat() throws -> SampleBuffer.Format {
            let encoding = try format.map { name in
                guard let encoding = SampleBuffer.Format.Encoding(pcmName: name) else { throw CommandFailure("--format must be s16le or f32le") }
                return encoding
            } ?? .pcmS16LE
            let rate = self.rate ?? 44_100
            guard (8_000...384_000).contains(rate) else { throw CommandFailure("--rate must be a sample rate such as 44100 or 48000") }
            let channels = self.channels ?? 2
            guard (1...8).contains(channels) else { throw CommandFailure("--channels must be 1 or 2") }
            return SampleBuffer.Format(encoding: encoding, sampleRate: rate, channels: channels)
        }

        static func milliseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return seconds * 1000 + attoseconds / 1_000_000_000_000_000
        }
    }
}

/// The input of `stream`: a file or standard input, read without blocking the process's
/// threads (a pipe is waited for on the I/O reactor).
final class PCMSource: Sendable {
    /// What the start of the input said.
    struct Opening {
        var format: SampleBuffer.Format
        /// Samples read with the header.
        var firstBytes: [UInt8]
        /// Bytes of samples left after `firstBytes` (nil: to the end of the input).
        var remaining: Int?

        /// Seconds of audio, when the input says how much it holds.
        var duration: Double? {
            guard let remaining, let bytesPerFrame = format.bytesPerFrame, bytesPerFrame > 0, format.sampleRate > 0 else { return nil }
            return Double((firstBytes.count + remaining) / bytesPerFrame) / Double(format.sampleRate)
        }
    }

    let descriptor: Int32
    let isPipe: Bool
    let path: String

    init(path: String) throws {
        self.path = path
        if path == "-" {
            descriptor = STDIN_FILENO
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw CommandFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
        }
        var info = stat()
        isPipe = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
        if isPipe { _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK) }
    }

    func close() {
        if descriptor != STDIN_FILENO { _ = Glibc.close(descriptor) }
    }

    /// Reads the WAV header if the input has one (a `.wav` name must), or takes `raw` as the format.
    func readFormat(raw: SampleBuffer.Format) async throws -> Opening {
        var prefix: [UInt8] = []
        var unbounded: Int?
        while prefix.count < 12, let chunk = await read(max: 12 - prefix.count, remaining: &unbounded), !chunk.isEmpty { prefix += chunk }
        let looksLikeWAV = prefix.starts(with: Array("RIFF".utf8)) || path.lowercased().hasSuffix(".wav")
        guard looksLikeWAV else { return Opening(format: raw, firstBytes: prefix, remaining: nil) }
        while true {
            do {
                if let header = try WAVHeader.parse(prefix) {
                    var samples = Array(prefix.dropFirst(header.dataOffset))
                    var remaining: Int?
                    if let length = header.dataLength {
                        samples = Array(samples.prefix(length))
                        remaining = length - samples.count
                    }
                    return Opening(format: header.format, firstBytes: samples, remaining: remaining)
                }
            } catch {
                throw CommandFailure("\(path): \(error)")
            }
            guard let chunk = await read(max: 4096, remaining: &unbounded), !chunk.isEmpty else {
                throw CommandFailure("\(path): the WAV header ends before its samples start")
            }
            prefix += chunk
        }
    }

    /// Up to `max` bytes; empty at the end of the input (or of the WAV data), nil on a read error.
    func read(max: Int, remaining: inout Int?) async -> [UInt8]? {
        let wanted = remaining.map { Swift.min(max, $0) } ?? max
        guard wanted > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: wanted)
        while true {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, wanted) }
            if got >= 0 {
                if let left = remaining { remaining = left - got }
                return Array(bytes.prefix(got))
            }
            if errno == EINTR { continue }
            guard errno == EAGAIN, isPipe else { return nil }
            _ = await IOReactor.shared.ready(descriptor, for: .readable, before: .now + .seconds(3600))
        }
    }
}
