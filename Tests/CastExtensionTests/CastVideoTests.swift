import Foundation
import CastChannel
import CastExtension
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import RoutingModel
import Testing

/// The box's video on a Cast receiver: a LIVE load of a fragmented MP4 the daemon serves,
/// fetched, decoded and probed by the test receiver (ffmpeg and ffprobe as its player).
@Suite(
    .timeLimit(.minutes(2)),
    .enabled(if: CastReceiverPeer.available && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe")), .serialized)
struct CastVideoTests {
    let format = try! VideoFrameFormat(encoding: .i420, width: 320, height: 180, frameRateNumerator: 25)

    /// What the receiver's ffprobe read of the video stream it fetched, once that stream ended.
    static func probe(_ rig: CastRig) async throws -> [String: Any] {
        let path = rig.peer.directory + "/video-probe.json"
        #expect(await eventually(timeout: .seconds(15)) { FileManager.default.fileExists(atPath: path) })
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    @Test func picturesWrittenAreLoadedAsLIVEMP4AndProbeWhole() async throws {
        let rig = try await CastRig.make()
        let device = try await rig.device()
        #expect(device.capabilities.contains(.realtimeVideoStreaming))
        let route = try await rig.activate()
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: format)
        let count = 100
        let writer = writePicturesOnOwnThread(0..<count, format: format, to: acquisition.descriptor, period: format.frameDuration)
        #expect(await eventually(timeout: .seconds(5)) { !rig.peer.received(CastNamespace.media, type: "LOAD").isEmpty })
        let load = try #require(rig.peer.received(CastNamespace.media, type: "LOAD").first)
        let media = try #require(load["media"] as? [String: Any])
        #expect(media["streamType"] as? String == "LIVE")
        #expect(media["contentType"] as? String == "video/mp4")
        #expect(await writer.value != nil)
        // The stream ends with the writer: the receiver probes what it fetched.
        let probe = try await Self.probe(rig)
        let stream = try #require((probe["streams"] as? [[String: Any]])?.first)
        #expect(stream["codec_name"] as? String == "h264")
        #expect(stream["width"] as? Int == 320 && stream["height"] as? Int == 180)
        // The rate the stream declares: every picture lasts 40 ms. (ffprobe's r_frame_rate is its guess
        // from the timestamps: 25/1, but 301/12 once when a loaded box made the pacer miss slots,
        // which the gaps below bound.)
        let durations = Set(((probe["packets"] as? [[String: Any]]) ?? []).compactMap { $0["duration_time"] as? String })
        #expect(durations == ["0.040000"], "\(durations); r_frame_rate \(stream["r_frame_rate"] ?? "?")")
        // Continuity: every picture a packet, 40 ms apart (the pacer's slots; a late slot shows as a longer gap).
        let times = ((probe["packets"] as? [[String: Any]]) ?? []).compactMap { ($0["pts_time"] as? String).flatMap(Double.init) }
        #expect(times.count >= count * 99 / 100, "\(times.count) packets")
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 > 0 }, "timestamps rise")
        #expect(gaps.filter { $0 > 0.1 }.count <= 2, "gaps over 100 ms: \(gaps.filter { $0 > 0.1 })")
        // And what it decoded shows the pictures in order.
        let output = VideoOutput(framesPath: rig.peer.directory + "/video.gray", timesPath: rig.peer.directory + "/video-times.txt", width: 320, height: 180)
        var numbers: [Int] = []
        let decoded = output.frames()
        for frame in decoded { if let number = frame.number, numbers.last != number { numbers.append(number) } }
        #expect(numbers == numbers.sorted())
        // Every picture the pacer sent is decoded; with both cores busy the writer's thread wakes late
        // at times and the older of two pictures is dropped (counted), never one that was sent.
        let dropped = Int(try #require(await rig.system.videoStatistics(on: route.session)).framesDropped)
        #expect(dropped <= count / 10, "\(dropped) dropped by the pacer")
        #expect(
            Set(numbers).count >= count - dropped,
            "\(Set(numbers).count) of \(count) decoded, \(decoded.count) pictures, \(decoded.filter { $0.number == nil }.count) unreadable, missing \(Set(0..<count).subtracting(numbers).sorted())")
        let statistics = try #require(await rig.system.videoStatistics(on: route.session))
        #expect(statistics.codec == "H.264 in fragmented MP4")
        await rig.system.deactivate(route.session)
        #expect(await eventually { await rig.handle.cast.servedFileCount == 0 }, "the stream is no longer served")
        await rig.system.shutdown()
    }

    /// `AcquireVideo("h264", …)`: the app's H.264 in the MP4 the receiver loads, its
    /// initialization segment made from the first IDR (the receiver fetched before it came).
    @Test func anAppsH264IsLoadedAsLIVEMP4AndProbesWhole() async throws {
        let encoded = try VideoFrameFormat(encoding: .h264, width: 320, height: 180, frameRateNumerator: 25)
        let count = 75
        let bytes = try VideoTestPattern.h264(0..<count, format: encoded, intraPeriod: 25)
        let rig = try await CastRig.make()
        _ = try await rig.device()
        let route = try await rig.activate()
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: encoded)
        #expect(await eventually(timeout: .seconds(5)) { !rig.peer.received(CastNamespace.media, type: "LOAD").isEmpty })
        #expect(await writeOnOwnThread(bytes, to: acquisition.descriptor, piece: 4096).value)
        let probe = try await Self.probe(rig)
        let stream = try #require((probe["streams"] as? [[String: Any]])?.first)
        #expect(stream["codec_name"] as? String == "h264")
        #expect(stream["width"] as? Int == 320 && stream["height"] as? Int == 180)
        #expect(stream["r_frame_rate"] as? String == "25/1")
        let times = ((probe["packets"] as? [[String: Any]]) ?? []).compactMap { ($0["pts_time"] as? String).flatMap(Double.init) }
        #expect(times.count == count, "\(times.count) packets")
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { abs($0 - 0.04) < 0.001 }, "one picture every 40 ms: \(gaps.filter { abs($0 - 0.04) >= 0.001 })")
        let output = VideoOutput(framesPath: rig.peer.directory + "/video.gray", timesPath: rig.peer.directory + "/video-times.txt", width: 320, height: 180)
        var numbers: [Int] = []
        for frame in output.frames() { if let number = frame.number, numbers.last != number { numbers.append(number) } }
        #expect(numbers == Array(0..<count), "decoded: \(numbers.prefix(20))…")
        let statistics = try #require(await rig.system.videoStatistics(on: route.session))
        #expect(statistics.codec == "H.264 (the app's) in fragmented MP4" && statistics.framesSent == UInt64(count))
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }

    /// Audio first, then video: the video's MP4 carries the route's audio as a second track, and
    /// when the video ends the receiver is loaded with the audio stream again.
    @Test func theRoutesAudioIsTheVideosSecondTrackAndIsLoadedAgainAfterIt() async throws {
        let rig = try await CastRig.make()
        _ = try await rig.device()
        let route = try await rig.activate()
        let sound = try await rig.system.acquireAudio(on: route.session, format: .cdAudio)
        let audioWriter = writeOnOwnThread(tone(seconds: 8), to: sound.descriptor, piece: 4_096)
        @Sendable func loads() -> [String] {
            rig.peer.received(CastNamespace.media, type: "LOAD").compactMap { ($0["media"] as? [String: Any])?["contentType"] as? String }
        }
        #expect(await eventually(timeout: .seconds(5)) { loads() == ["audio/wav"] }, "\(loads())")
        try await Task.sleep(for: .seconds(1))
        let acquisition = try await rig.system.acquireVideo(on: route.session, format: format)
        #expect(await writePicturesOnOwnThread(0..<75, format: format, to: acquisition.descriptor, period: format.frameDuration).value != nil)
        let probe = try await Self.probe(rig)
        let codecs = ((probe["streams"] as? [[String: Any]]) ?? []).compactMap { $0["codec_name"] as? String }
        #expect(Set(codecs) == ["h264", "aac"], "the video's MP4 carries the audio: \(codecs)")
        // The audio stream again once the video ended, while the app still writes it.
        #expect(await eventually(timeout: .seconds(5)) { loads() == ["audio/wav", "video/mp4", "audio/wav"] }, "\(loads())")
        #expect(await audioWriter.value)
        #expect(await rig.system.audioStatistics(on: route.session)?.underruns == 0)
        await rig.system.deactivate(route.session)
        await rig.system.shutdown()
    }
}
