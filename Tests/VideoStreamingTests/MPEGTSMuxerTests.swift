import Foundation
import MediaRouteTestSupport
import RoutingModel
import Testing
@testable import VideoStreaming

/// The transport stream on bytes, read back by a parser written from ISO/IEC 13818-1 here and by FFmpeg.
@Suite(.timeLimit(.minutes(1))) struct MPEGTSMuxerTests {
    /// The packets of `stream` by PID, each as (payload unit start, continuity counter, adaptation field, payload).
    struct Packet {
        var pid: UInt16
        var unitStart: Bool
        var continuity: UInt8
        var adaptation: [UInt8]
        var payload: [UInt8]
    }

    func parse(_ stream: [UInt8]) throws -> [Packet] {
        try #require(stream.count % 188 == 0)
        return try stride(from: 0, to: stream.count, by: 188).map { offset in
            let packet = Array(stream[offset..<offset + 188])
            try #require(packet[0] == 0x47)
            let control = (packet[3] >> 4) & 3
            var index = 4
            var adaptation: [UInt8] = []
            if control & 2 != 0 {
                let length = Int(packet[4])
                adaptation = Array(packet[5..<5 + length])
                index = 5 + length
            }
            return Packet(
                pid: UInt16(packet[1] & 0x1F) << 8 | UInt16(packet[2]), unitStart: packet[1] & 0x40 != 0, continuity: packet[3] & 0x0F,
                adaptation: adaptation, payload: control & 1 != 0 ? Array(packet[index...]) : [])
        }
    }

    @Test func patAndPMTNameTheVideoStreamAndTheirCRCsHold() throws {
        var muxer = MPEGTSMuxer()
        let packets = try parse(muxer.packets(accessUnit: [0, 0, 0, 1, 0x65, 1, 2, 3], isIDR: true, presentationTime: .seconds(5)))
        let pat = try #require(packets.first { $0.pid == 0 })
        let patSection = Array(pat.payload.dropFirst(1 + Int(pat.payload[0])))
        let patLength = Int(patSection[1] & 0x0F) << 8 | Int(patSection[2])
        #expect(MPEGTSMuxer.crc32(Array(patSection[0..<3 + patLength])) == 0)  // a section with its CRC sums to zero
        #expect(UInt16(patSection[10] & 0x1F) << 8 | UInt16(patSection[11]) == MPEGTSMuxer.pmtPID)
        let pmt = try #require(packets.first { $0.pid == MPEGTSMuxer.pmtPID })
        let pmtSection = Array(pmt.payload.dropFirst(1))
        let pmtLength = Int(pmtSection[1] & 0x0F) << 8 | Int(pmtSection[2])
        #expect(MPEGTSMuxer.crc32(Array(pmtSection[0..<3 + pmtLength])) == 0)
        #expect(pmtSection[12] == 0x1B)  // H.264
        #expect(UInt16(pmtSection[13] & 0x1F) << 8 | UInt16(pmtSection[14]) == MPEGTSMuxer.videoPID)
    }

    @Test func anAccessUnitIsOnePESWithItsPTSAndTheFirstPacketCarriesThePCR() throws {
        var muxer = MPEGTSMuxer(pcrLead: .milliseconds(100))
        let unit: [UInt8] = [0, 0, 0, 1, 0x41] + (0..<1000).map { UInt8($0 % 251) }
        let time = Duration.milliseconds(12_345)
        let video = try parse(muxer.packets(accessUnit: unit, isIDR: false, presentationTime: time)).filter { $0.pid == MPEGTSMuxer.videoPID }
        #expect(video.first?.unitStart == true)
        #expect(video.dropFirst().allSatisfy { !$0.unitStart })
        #expect(video.map(\.continuity) == (0..<video.count).map { UInt8($0 & 0x0F) })
        let pes = video.flatMap(\.payload)
        #expect(Array(pes.prefix(4)) == [0, 0, 1, 0xE0])
        let p = pes[9..<14].map(UInt64.init)
        let pts = (p[0] >> 1 & 7) << 30 | p[1] << 22 | (p[2] >> 1) << 15 | p[3] << 7 | p[4] >> 1
        #expect(pts == 12_345 * 90 + MPEGTSMuxer.timestampOrigin)
        #expect(Array(pes[14..<20]) == [0, 0, 0, 1, 0x09, 0xF0])  // access unit delimiter
        #expect(Array(pes[20...]) == unit)
        #expect(Int(pes[4]) << 8 | Int(pes[5]) == pes.count - 6)
        let adaptation = try #require(video.first?.adaptation)
        #expect(adaptation[0] & 0x10 != 0)
        let a = adaptation[1..<6].map(UInt64.init)
        let pcrBase = a[0] << 25 | a[1] << 17 | a[2] << 9 | a[3] << 1 | a[4] >> 7
        #expect(pcrBase == pts - 9_000)
        #expect(adaptation[0] & 0x40 == 0)  // not an IDR: no random access
    }

    @Test func continuityCountersWrapPerPID() throws {
        var muxer = MPEGTSMuxer()
        var stream: [UInt8] = []
        for index in 0..<20 {
            stream += muxer.packets(accessUnit: [0, 0, 0, 1, 0x65] + [UInt8](repeating: 7, count: 400), isIDR: index % 5 == 0, presentationTime: .milliseconds(index * 33))
        }
        var last: [UInt16: UInt8] = [:]
        for packet in try parse(stream) {
            if let previous = last[packet.pid] { #expect(packet.continuity == (previous + 1) & 0x0F, "PID \(packet.pid)") }
            last[packet.pid] = packet.continuity
        }
    }

    @Test func encodedPicturesDecodeInOrderWithFFmpeg() throws {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let format = try VideoFrameFormat(encoding: .i420, width: 320, height: 180, frameRateNumerator: 30)
        var encoder = try H264Encoder(format: format, bitRate: 500_000, intraPeriod: 30)
        var muxer = MPEGTSMuxer()
        var stream: [UInt8] = []
        let count = 45
        for number in 0..<count {
            let time = Duration.milliseconds(1000 + number * 1000 / 30)
            let unit = try #require(try encoder.encode(VideoTestPattern.frame(number, format: format), encoding: .i420, timestamp: time))
            #expect(unit.isIDR == (number % 30 == 0), "picture \(number)")
            stream += muxer.packets(accessUnit: unit.bytes, isIDR: unit.isIDR, presentationTime: time)
        }
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", "mpegts", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: stream)
        let size = format.width * format.height
        let numbers = stride(from: 0, to: gray.count - size + 1, by: size).map {
            VideoTestPattern.number(inGray: Array(gray[$0..<$0 + size]), width: format.width, height: format.height)
        }
        #expect(numbers == (0..<count).map { $0 })
    }

    @Test func nv12PicturesEncodeLikeI420() throws {
        let ffmpeg = try requireTool("/usr/bin/ffmpeg")
        let format = try VideoFrameFormat(encoding: .nv12, width: 160, height: 96, frameRateNumerator: 25)
        var encoder = try H264Encoder(format: format, bitRate: 300_000, intraPeriod: 25)
        var muxer = MPEGTSMuxer()
        var stream: [UInt8] = []
        for number in 0..<10 {
            let unit = try #require(try encoder.encode(VideoTestPattern.frame(number + 300, format: format), encoding: .nv12, timestamp: .milliseconds(number * 40)))
            stream += muxer.packets(accessUnit: unit.bytes, isIDR: unit.isIDR, presentationTime: .milliseconds(number * 40))
        }
        let gray = try runTool(ffmpeg, ["-v", "error", "-f", "mpegts", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"], input: stream)
        let size = format.width * format.height
        #expect(gray.count == 10 * size)
        #expect(VideoTestPattern.number(inGray: Array(gray[(9 * size)...]), width: format.width, height: format.height) == 309)
    }

    @Test func aPictureOfTheWrongSizeIsRefused() throws {
        let format = try VideoFrameFormat(encoding: .i420, width: 64, height: 64, frameRateNumerator: 30)
        var encoder = try H264Encoder(format: format, bitRate: 100_000, intraPeriod: 30)
        #expect(throws: H264Encoder.Failure.self) { _ = try encoder.encode([1, 2, 3], encoding: .i420, timestamp: .zero) }
        #expect(try encoder.encode(VideoTestPattern.frame(1, format: format), encoding: .i420, timestamp: .zero) != nil)
    }
}
