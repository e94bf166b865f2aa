import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MediaRouteCommands
import MediaRouteTestSupport
import RoutingModel
import Testing

/// `mediaroutectl mirror --source FILE.h264` through the daemon: H.264 an app (here libx264)
/// encoded goes to the simulated TV as written, paced by the daemon; a stream the daemon
/// refuses makes the mirror fail with the daemon's reason.
@Suite(.timeLimit(.minutes(2)), .serialized) struct MirrorH264DaemonTests {
    func file(_ bytes: [UInt8]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-h264-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("pattern.h264").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func anH264FilePlaysAtItsRateWithItsSizeFromTheStream() async throws {
        let daemon = try await RunningDaemon()
        let format = try VideoFrameFormat(encoding: .h264, width: 320, height: 180, frameRateNumerator: 25)
        let path = try file(try VideoTestPattern.h264(0..<50, format: format, intraPeriod: 25))
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) }
        let console = RecordingConsole()
        let start = ContinuousClock.now
        try await MediaRouteCtl.Mirror.parse(["--to", "Living Room TV", "--pin", "1234", "--source", path, "--rate", "25", "--bus", daemon.bus.address])
            .run(console: console)
        // 50 pictures at 25 a second: two seconds, whether the file is read fast or not.
        #expect(ContinuousClock.now - start > .milliseconds(1_900))
        #expect(console.lines.contains { $0.hasPrefix("Showing h264 320x180@25 on Living Room TV") }, "\(console.lines)")
        #expect(console.lines.contains { $0.contains("50 pictures received, 50 sent, 0 dropped") && $0.contains("H.264 (simulated)") }, "\(console.lines)")
        #expect(!console.lines.contains { $0.contains("ended:") })
        #expect(console.lines.last == "Ended.")
    }

    @Test func aStreamTheToolOrTheDaemonRefusesFailsWithTheReason() async throws {
        let daemon = try await RunningDaemon()
        let bFrames = try H264AccessUnitSplitterSeeds.bytes("x264-bframes-32x32")
        let path = try file(bFrames)
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path) }
        let console = RecordingConsole()
        // The tool reads the stream as the daemon would: B-frames are refused before any route.
        await #expect {
            try await MediaRouteCtl.Mirror.parse(["--to", "Living Room TV", "--pin", "1234", "--source", path, "--bus", daemon.bus.address]).run(console: console)
        } throws: { error in
            "\(error)" == "\(path): H.264 with B-frames is not taken: encode without them (x264 --bframes 0, ffmpeg -bf 0)"
        }
        // Not H.264 nor YUV4MPEG2 at all.
        let junk = try file(Array(repeating: 0x42, count: 600))
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: junk).deletingLastPathComponent().path) }
        await #expect {
            try await MediaRouteCtl.Mirror.parse(["--to", "Living Room TV", "--source", junk, "--bus", daemon.bus.address]).run(console: console)
        } throws: { error in
            "\(error)" == "\(junk): not a YUV4MPEG2 stream (no YUV4MPEG2 signature) and not H.264 (no Annex B start code)"
        }
        // An app writing them into AcquireVideo itself: the daemon refuses, and says why over D-Bus (VideoFailure).
        let (_, _, controller) = try await client(daemon, agent: ScriptedPairingAgent([.code("1234")]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().contains { $0.displayName == "Living Room TV" } })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Living Room TV" }))
        await picker.close()
        let acquisition = try await route.acquireVideo(format: try VideoFrameFormat(encoding: .h264, width: 32, height: 32, frameRateNumerator: 25))
        #expect(writeBlocking(bFrames, to: acquisition.descriptor, piece: 4096))
        close(acquisition.descriptor)
        #expect(await eventually(timeout: .seconds(5)) { await route.status()?.video?.failure == "H.264 with B-frames is not taken: encode without them (x264 --bframes 0, ffmpeg -bf 0)" })
        #expect(await route.status()?.video?.active == false)
    }
}

/// The h264 fuzz seeds (real x264 streams).
enum H264AccessUnitSplitterSeeds {
    static func bytes(_ name: String) throws -> [UInt8] {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/Corpus/h264")
        return Array(try Data(contentsOf: corpus.appendingPathComponent(name)))
    }
}
