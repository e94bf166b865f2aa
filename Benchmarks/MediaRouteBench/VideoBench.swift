import Foundation
import LANTransport
import MediaDevice
import MediaRouteTestSupport
import MediaRouteTesting
import RouteSystem
import RoutingModel
import UPnPRendererExtension
import VideoStreaming
#if canImport(Glibc)
import Glibc
#endif

/// Real-time video (#43): the encoder's CPU per 720p30 stream (H.264 by OpenH264 into MPEG-TS, on
/// this thread at the stream's pace), then a 720p30 stream to gmediarender in a network namespace
/// for `seconds`: each picture's number read back from what the renderer showed (recorded at
/// 160×90 by a sink synced to its pipeline clock), the latency from each picture's write to its
/// showing, pictures missing, and the delivery's counts (dropped, repeated, not encoded).
extension Bench {
    static func video(seconds: Int) async throws {
        let format = try VideoFrameFormat(encoding: .i420, width: 1280, height: 720, frameRateNumerator: 30)
        // A second of distinct pictures, cycled (the pattern's gradient moves with the number).
        let pictures = (0..<30).map { VideoTestPattern.frame($0, format: format) }
        try videoEncoderCPU(format: format, pictures: pictures, seconds: min(seconds, 30))
        guard NamespaceLab.renderersAvailable else {
            print("video: gmediarender or network namespaces missing: the end-to-end part is skipped")
            return
        }
        try await videoToRenderer(format: format, pictures: pictures, seconds: seconds)
    }

    /// CPU of the encoder and the muxer alone, pictures given at the stream's rate.
    static func videoEncoderCPU(format: VideoFrameFormat, pictures: [[UInt8]], seconds: Int) throws {
        let stream = try LiveVideoStream(format: format)
        let count = seconds * 30
        let start = ContinuousClock.now
        let cpuBefore = threadCPUSeconds()
        var busiest = 0.0
        for index in 0..<count {
            let due = start + format.frameDuration * index
            if due > ContinuousClock.now { Thread.sleep(forTimeInterval: (due - ContinuousClock.now).seconds) }
            let began = threadCPUSeconds()
            _ = stream.receive(VideoFrame(format: format, presentationTime: SampleBuffer.clockNow(), data: pictures[index % pictures.count]))
            busiest = max(busiest, threadCPUSeconds() - began)
        }
        let cpu = threadCPUSeconds() - cpuBefore
        let wall = (ContinuousClock.now - start).seconds
        stream.finish()
        let bits = Double(stream.bytes.statistics.bytesWritten) * 8 / wall
        print(String(format: "video: encoder (OpenH264 %@, 1280x720@30, %d kbit/s aimed, MPEG-TS): %.1f %% of a core over %d s, %.1f ms per picture on average, %.1f ms the most; %.0f kbit/s sent",
                     H264Encoder.libraryVersion, stream.bitrate / 1000, cpu / wall * 100, seconds, cpu / Double(count) * 1000, busiest * 1000, bits / 1000))
    }

    /// This thread's CPU time (user and system), seconds.
    static func threadCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(1, &usage)  // RUSAGE_THREAD (Linux; Glibc's module leaves it out without _GNU_SOURCE)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func videoToRenderer(format: VideoFrameFormat, pictures: [[UInt8]], seconds: Int) async throws {
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        let output = VideoOutput(framesPath: lab.path("video.gray"), timesPath: lab.path("video-times.txt"), width: 160, height: 90)
        let name = "Bench TV"
        try lab.gmediarender(in: room, name: name, uuid: "0a1b2c3d-0000-4000-8000-000000000190", video: output)
        let system = RouteSystem()
        let transport = LANTransport(configuration: .init(interfaces: [room.outside]))
        try await system.load { manager in UPnPRendererExtension(transport: transport, routingManager: manager) }
        await system.beginDiscovery(client: "bench")
        guard await eventually(timeout: .seconds(15), { await system.devicesList.contains { $0.displayName == name && $0.capabilities.contains(.realtimeVideoStreaming) } }),
            let device = await system.devicesList.first(where: { $0.displayName == name })
        else {
            print("video: gmediarender was not found")
            return
        }
        let route = try await system.activate(deviceID: device.id)
        let acquisition = try await system.acquireVideo(on: route.session, format: format)
        let count = seconds * 30
        let cpuBefore = cpuSeconds()
        let started = ContinuousClock.now
        // The second of pictures cycled, each stamped with its own number as it is written.
        let making: @Sendable (Int) -> [UInt8] = { number in
            var picture = pictures[number % pictures.count]
            VideoTestPattern.stamp(number, into: &picture, format: format)
            return picture
        }
        guard let written = await writePicturesOnOwnThread(0..<count, format: format, to: acquisition.descriptor, period: format.frameDuration, making: making).value else {
            print("video: the writer failed: \(lab.log("gmediarender-\(room.inside).log").suffix(400))")
            return
        }
        let cpu = cpuSeconds() - cpuBefore
        let wall = (ContinuousClock.now - started).seconds
        var shown = output.frames()
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(500))
            let now = output.frames()
            if now.count == shown.count { break }
            shown = now
        }
        var numbers: [Int] = []
        for frame in shown { if let number = frame.number, numbers.last != number { numbers.append(number) } }
        let latencies = shown.compactMap { frame -> Double? in frame.number.flatMap { written[$0] }.map { (frame.time - $0) * 1000 } }
        let missing = Set(0..<count).subtracting(numbers).count
        let statistics = await system.videoStatistics(on: route.session)
        print("video: 1280x720@30 to gmediarender for \(seconds) s: \(count) pictures written, \(Set(numbers).count) shown (\(missing) missing, \(String(format: "%.2f", Double(missing) * 100 / Double(count))) %), in order: \(numbers == numbers.sorted())")
        print("video: from a picture's write to its showing \(summary(latencies))")
        if let statistics {
            print("video: delivery: \(statistics.framesReceived) received, \(statistics.framesSent) sent, \(statistics.framesDropped) dropped, \(statistics.framesRepeated) repeated, \(statistics.framesNotEncoded) not encoded")
        }
        print(String(format: "video: this process (the writer's copies, pacing, encoding, muxing, HTTP): %.1f %% of a core", cpu / wall * 100))
        await system.deactivate(route.session)
        await system.shutdown()
    }
}
