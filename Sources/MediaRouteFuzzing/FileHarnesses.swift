import BoxConfiguration
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LoopbackTransport
import NowPlaying
import RealtimeAudio
import RawVideo
import RealtimeVideo

/// Bytes that reach the daemon other than from radios: push payloads from any local
/// process, the box's configuration, udev properties, scenario files.
enum FileHarnesses {
    static let all: [FuzzHarness] = [push, configuration, udev, scenario, loopbackWire, wavHeader, yuv4mpeg2, rawPicture, h264]

    /// The start of a WAV file or of standard input, as `mediaroutectl stream` reads it.
    static let wavHeader = FuzzHarness("wav-header", "RIFF/WAVE headers: chunks, fmt (PCM, float, extensible), data", maximumLength: 80 * 1024) { bytes in
        guard let header = try? WAVHeader.parse(bytes) else { return nil }
        if header.dataOffset > bytes.count { return "samples start at \(header.dataOffset), past the \(bytes.count) bytes read" }
        if header.dataOffset > WAVHeader.maximumHeaderBytes + 8 { return "samples start at \(header.dataOffset), past the header limit" }
        guard let frame = header.format.bytesPerFrame, frame > 0 else { return "accepted \(header.format), which has no frame size" }
        if let length = header.dataLength, length < 0 { return "negative data length \(length)" }
        return nil
    }

    /// A YUV4MPEG2 stream as `mediaroutectl mirror` reads it (a file, or anything on standard
    /// input), fed in two pieces split where the first byte says: the same frames either way,
    /// each exactly a picture, the format within what the encoder takes.
    static let yuv4mpeg2 = FuzzHarness("y4m", "YUV4MPEG2 headers, FRAME lines and pictures, fed in pieces", maximumLength: 64 * 1024) { bytes in
        var whole = YUV4MPEG2Parser()
        guard let frames = try? whole.feed(bytes) else { return nil }
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        var pieces = YUV4MPEG2Parser()
        guard let first = try? pieces.feed(bytes[..<split]), let second = try? pieces.feed(bytes[split...]) else {
            return "fed whole it parsed, in two pieces at \(split) it did not"
        }
        if first + second != frames { return "\(frames.count) frames whole, \((first + second).count) in pieces" }
        guard let format = whole.format else { return frames.isEmpty ? nil : "frames before a header" }
        if let wrong = frames.first(where: { $0.count != format.frameBytes }) { return "a frame of \(wrong.count) bytes, not \(format.frameBytes)" }
        if format.width % 2 != 0 || format.height % 2 != 0 || format.width > 4096 || format.height > 2304 || format.frameRate > 120 {
            return "accepted \(format)"
        }
        return nil
    }

    /// A raw picture as a PipeWire producer hands it to a video node: the first bytes say the pixel
    /// format, size, planes and strides (any values, as another process may send), the rest are
    /// the planes' bytes. The conversion converts or refuses with a typed error; it never reads
    /// past a plane.
    static let rawPicture = FuzzHarness("raw-picture", "PipeWire video buffers: pixel format, size, strides and planes", maximumLength: 64 * 1024) { bytes in
        guard bytes.count >= 12 else { return nil }
        func word(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        let formats = RawPictureLayout.PixelFormat.allCases
        let layout = RawPictureLayout(pixelFormat: formats[Int(bytes[0]) % formats.count], width: word(1) % 600, height: word(3) % 600)
        let strides = [word(5) - 8, word(7) - 8, word(9) - 8]
        let planeCount = 1 + Int(bytes[11]) % 3
        guard let format = try? layout.outputFormat(frameRateNumerator: 30, frameRateDenominator: 1) else { return nil }
        let data = Array(bytes[12...])
        var output: [UInt8] = []
        let result = data.withUnsafeBytes { raw -> Result<Void, RawPictureError> in
            var planes: [RawPictureLayout.Plane] = []
            let piece = raw.count / planeCount
            for index in 0..<planeCount {
                let end = index == planeCount - 1 ? raw.count : (index + 1) * piece
                planes.append(RawPictureLayout.Plane(bytes: UnsafeRawBufferPointer(rebasing: raw[(index * piece)..<end]), stride: strides[index]))
            }
            do throws(RawPictureError) {
                try layout.convert(planes, into: &output, as: format)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .success = result, output.count != format.frameBytes { return "a picture of \(output.count) bytes for \(format)" }
        return nil
    }

    /// Attributes with every kind of field a Now Playing extension declares.
    struct Attributes: Decodable {
        var id: String
        var title: String?
        var duration: Double?
        var started: Date?
        var rate: Float?
        var queue: [String]?
    }

    static let push = FuzzHarness("push-json", "push event payloads ({\"aps\": …}) as the push endpoint receives them") { bytes in
        _ = try? PushPayload.decode(PushSessionID.self, from: bytes)
        guard let aps = try? PushPayload.decode(Attributes.self, from: bytes) else { return nil }
        if !aps.timestamp.isFinite || aps.timestamp < 0 { return "accepted timestamp \(aps.timestamp)" }
        return nil
    }

    static let configuration = FuzzHarness("config", "mediaroute.conf") { bytes in
        guard let configuration = try? DaemonConfiguration.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.conf") else { return nil }
        // Every adapter resolves against whatever the file said, with whatever udev said.
        let record = AdapterRecord(subsystem: "net", name: "wlan0", devtype: "wlan", ifindex: 3, properties: ["MEDIAROUTE_TRANSPORT": "wifi"])
        _ = AdapterSettings.resolve(record, configuration: configuration)
        return nil
    }

    /// A uevent file and a udev database entry (the same bytes read both ways), then the
    /// properties they set resolved into adapter settings; the text also checked as rules.
    static let udev = FuzzHarness("udev", "udev properties (uevent, /run/udev/data) and rules files") { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        let properties = SysfsAdapterReader.parseUevent(text).merging(SysfsAdapterReader.parseDatabase(text)) { $1 }
        for (key, value) in properties where UdevProperty.all.contains(key) { _ = UdevProperty.validate(key, value) }
        let record = AdapterRecord(subsystem: "net", name: properties["INTERFACE"] ?? "eth0", devtype: properties["DEVTYPE"] ?? "", properties: properties)
        _ = AdapterSettings.resolve(record, configuration: DaemonConfiguration())
        _ = UdevRulesChecker.check(text, file: "99-fuzz.rules")
        return nil
    }

    static let scenario = FuzzHarness("loopback-scenario", "loopback scenario files (--scenario)") { bytes in
        _ = try? LoopbackScenario.decode(Data(bytes), source: "fuzz")
        return nil
    }

    static let loopbackWire = FuzzHarness("loopback-wire", "loopback transport messages between sender and simulated device") { bytes in
        _ = LoopbackEnvelope<LoopbackPlaybackStatus>.decode(bytes)
        _ = LoopbackEnvelope<LoopbackRequest>.decode(bytes)
        return nil
    }

    /// H.264 an app writes into `AcquireVideo("h264", …)`'s descriptor, fed whole and in two
    /// pieces split where the first byte says: the same access units either way (or refused
    /// both ways), each within its budget, starting with a start code and without delimiters; an
    /// SPS in them reads to a size or is refused, never traps.
    static let h264 = FuzzHarness("h264", "H.264 Annex B streams: start codes, NAL units, slice headers, SPS", maximumLength: 64 * 1024) { bytes in
        let budget = 16 * 1024
        func split(_ pieces: [ArraySlice<UInt8>]) -> [H264AccessUnit]? {
            var splitter = H264AccessUnitSplitter(maximumAccessUnitBytes: budget)
            var units: [H264AccessUnit] = []
            for piece in pieces {
                let result = Array(piece).withUnsafeBytes { raw in Result { () throws(H264StreamError) in try splitter.append(raw) } }
                guard case .success(let more) = result else { return nil }
                units += more
            }
            guard case .success(let last) = Result(catching: { () throws(H264StreamError) in try splitter.finish() }) else { return nil }
            return units + last
        }
        let at = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
        let whole = split([bytes[...]])
        let pieces = split([bytes[..<at], bytes[at...]])
        guard whole == pieces else { return "whole: \(whole?.count ?? -1) access units, in two pieces at \(at): \(pieces?.count ?? -1)" }
        for unit in whole ?? [] {
            if unit.bytes.count > budget { return "an access unit of \(unit.bytes.count) bytes over its budget" }
            if unit.bytes.prefix(4) != [0, 0, 0, 1] { return "an access unit that does not start with a start code" }
            if unit.units.contains(where: { $0.first.map { $0 & 0x1F == 9 } ?? false }) { return "a delimiter left in an access unit" }
            if let parameters = try? unit.sequenceParameters(), parameters.width <= 0 || parameters.height <= 0 || parameters.width > 8192 {
                return "an SPS read as \(parameters.width)x\(parameters.height)"
            }
        }
        return nil
    }
}
