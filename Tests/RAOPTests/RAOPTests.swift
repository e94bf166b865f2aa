import RAOP
import Testing

/// Reads bits most significant first, as an ALAC decoder does.
private struct BitReader {
    let bytes: [UInt8]
    var position = 0

    mutating func read(_ count: Int) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            let bit = (bytes[position / 8] >> UInt8(7 - position % 8)) & 1
            value = value << 1 | UInt32(bit)
            position += 1
        }
        return value
    }
}

@Suite struct RTSPTests {
    @Test func aRequestCarriesItsSequenceHeadersAndBodyLength() {
        let request = RTSPRequest(method: "SET_PARAMETER", uri: "rtsp://10.0.0.1/42", headers: [("Content-Type", "text/parameters")], body: Array("volume: -15.000000\r\n".utf8))
        let text = String(decoding: request.encoded(cseq: 7), as: UTF8.self)
        #expect(text == "SET_PARAMETER rtsp://10.0.0.1/42 RTSP/1.0\r\nCSeq: 7\r\nContent-Type: text/parameters\r\nContent-Length: 20\r\n\r\nvolume: -15.000000\r\n")
        let injected = RTSPRequest(method: "OPTIONS", uri: "*\r\nEvil: 1", headers: [("X", "a\r\nb")])
        #expect(String(decoding: injected.encoded(cseq: 1), as: UTF8.self) == "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nX: a\r\n\r\n", "no header can be smuggled in")
    }

    @Test func answersSplitAnywhereComeOutWholeAndInOrder() throws {
        let bytes = Array("RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: 3\r\n\r\nabcRTSP/1.0 453 Not Enough Bandwidth\r\nCSeq: 2\r\n\r\n".utf8)
        for split in 0...bytes.count {
            var parser = RTSPResponseParser()
            let responses = try parser.consume(bytes[..<split]) + parser.consume(bytes[split...])
            #expect(responses.map(\.status) == [200, 453], "split at \(split)")
            #expect(responses.first?.body == Array("abc".utf8))
            #expect(responses.map(\.cseq) == [1, 2])
        }
    }

    @Test func malformedOrOversizedAnswersAreRefusedAndStayRefused() {
        let bad: [[UInt8]] = [
            Array("HTTP/1.1 200 OK\r\n\r\n".utf8),
            Array("RTSP/1.0 2000 OK\r\n\r\n".utf8),
            Array("RTSP/1.0 200 OK\r\nno colon here\r\n\r\n".utf8),
            Array("RTSP/1.0 200 OK\r\nContent-Length: -1\r\n\r\n".utf8),
            Array("RTSP/1.0 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n".utf8),
            Array("RTSP/1.0 200 OK\r\nContent-Length: 70000\r\n\r\n".utf8),
            Array("RTSP/1.0 200 OK\r\n".utf8) + [UInt8](repeating: 65, count: 17 * 1024),
            Array("RTSP/1.0 200 OK\r\n".utf8) + (0..<70).flatMap { Array("H\($0): v\r\n".utf8) } + Array("\r\n".utf8),
        ]
        for bytes in bad {
            var parser = RTSPResponseParser()
            #expect(throws: RTSPError.self, "\(String(decoding: bytes.prefix(40), as: UTF8.self))") { _ = try parser.consume(bytes) }
            #expect(throws: RTSPError.self) { _ = try parser.consume(Array("RTSP/1.0 200 OK\r\n\r\n".utf8)) }
        }
    }

    @Test func setupsTransportGivesTheReceiversPorts() {
        #expect(RAOPTransportPorts(transport: "RTP/AVP/UDP;unicast;mode=record;server_port=6003;control_port=6001;timing_port=6002")
            == RAOPTransportPorts(server: 6003, control: 6001, timing: 6002))
        #expect(RAOPTransportPorts(transport: "RTP/AVP/UDP;unicast;server_port=6003") == nil, "no control port")
        #expect(RAOPTransportPorts(transport: "server_port=0;control_port=70000") == nil)
    }
}

@Suite struct RAOPPacketTests {
    @Test func anUncompressedALACFrameHoldsItsSamplesWhereADecoderLooks() {
        var pcm: [UInt8] = []
        for frame in 0..<352 {
            let left = Int16(frame * 37 - 6000), right = Int16(-frame * 11)
            for sample in [left, right] { pcm += [UInt8(truncatingIfNeeded: sample), UInt8(truncatingIfNeeded: sample >> 8)] }
        }
        let encoded = ALACUncompressed.frame(stereoS16LE: pcm[...])
        var bits = BitReader(bytes: encoded)
        #expect(bits.read(3) == 1, "a channel pair element")
        #expect(bits.read(4) == 0)
        #expect(bits.read(12) == 0)
        #expect(bits.read(1) == 1, "the sample count follows")
        #expect(bits.read(2) == 0)
        #expect(bits.read(1) == 1, "not compressed")
        #expect(bits.read(32) == 352)
        var decoded: [Int16] = []
        for _ in 0..<(352 * 2) { decoded.append(Int16(bitPattern: UInt16(bits.read(16)))) }
        let expected = stride(from: 0, to: pcm.count, by: 2).map { Int16(bitPattern: UInt16(pcm[$0]) | UInt16(pcm[$0 + 1]) << 8) }
        #expect(decoded == expected)
        #expect(bits.read(3) == 7, "the end tag")
        #expect(encoded.count == (3 + 4 + 12 + 1 + 2 + 1 + 32 + 352 * 32 + 3 + 7) / 8)
    }

    @Test func audioSyncAndTimingPacketsAreLaidOutAsReceiversRead() {
        let audio = RAOPPacket.audio(sequence: 0x1234, timestamp: 0xAABB_CCDD, ssrc: 7, first: true, payload: [9, 9])
        #expect(audio == [0x80, 0xE0, 0x12, 0x34, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 7, 9, 9])
        #expect(RAOPPacket.audio(sequence: 1, timestamp: 2, ssrc: 3, first: false, payload: [])[1] == 0x60)

        let now = NTPTimestamp(nanoseconds: 1_500_000_000)
        #expect(now == NTPTimestamp(seconds: 1, fraction: 0x8000_0000))
        let sync = RAOPPacket.sync(playingTimestamp: 100, now: now, nextTimestamp: 77_275, first: true)
        #expect(sync == [0x90, 0xD4, 0, 7, 0, 0, 0, 100, 0, 0, 0, 1, 0x80, 0, 0, 0, 0, 1, 0x2D, 0xDB])

        var request = [UInt8](repeating: 0, count: 32)
        request[0] = 0x80
        request[1] = 0xD2
        request[24..<32] = [1, 2, 3, 4, 5, 6, 7, 8]
        let timing = try! #require(TimingRequest(request))
        let reply = RAOPPacket.timingReply(to: timing, received: NTPTimestamp(seconds: 9, fraction: 0), transmitted: NTPTimestamp(seconds: 10, fraction: 0))
        #expect(reply.count == 32 && reply[1] == 0xD3)
        #expect(Array(reply[8..<16]) == [1, 2, 3, 4, 5, 6, 7, 8], "the request's transmit time is the reply's origin")
        #expect(Array(reply[16..<20]) == [0, 0, 0, 9] && Array(reply[24..<28]) == [0, 0, 0, 10])
        #expect(TimingRequest(Array(request.prefix(31))) == nil)

        let resend = try! #require(ResendRequest([0x80, 0xD5, 0, 1, 0x75, 0x30, 0, 3]))
        #expect(resend.first == 30_000 && resend.count == 3)
        #expect(ResendRequest([0x80, 0xD5, 0, 1]) == nil)
        #expect(RAOPPacket.resent([0x80, 0x60]) == [0x80, 0xD6, 0, 1, 0x80, 0x60])
    }

    @Test func volumeIsInDecibelsFromMinusThirtyWithSilenceApart() {
        #expect(raopVolumeDecibels(1) == 0)
        #expect(raopVolumeDecibels(0.5) == -15)
        #expect(raopVolumeDecibels(0) == -144)
        #expect(raopVolumeDecibels(.nan) == -144)
        #expect(String(decoding: raopVolumeParameter(0.5), as: UTF8.self) == "volume: -15.000000\r\n")
        #expect(String(decoding: raopVolumeParameter(1), as: UTF8.self) == "volume: 0.000000\r\n")
        #expect(String(decoding: raopVolumeParameter(0), as: UTF8.self) == "volume: -144.000000\r\n")
    }

    @Test func theAnnouncementOffersALACAt441kHzWithoutEncryption() {
        let sdp = String(decoding: raopAnnouncement(sessionID: 42, senderAddress: "10.0.0.1", receiverAddress: "10.0.0.2"), as: UTF8.self)
        #expect(sdp.contains("o=MediaRoute 42 0 IN IP4 10.0.0.1\r\n"))
        #expect(sdp.contains("c=IN IP4 10.0.0.2\r\n"))
        #expect(sdp.contains("a=rtpmap:96 AppleLossless\r\na=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100\r\n"))
        #expect(!sdp.contains("rsaaeskey"))
    }

    @Test func aMagicCookieBecomesTheFormatParameters() {
        // FFmpeg's extradata: the 36-byte `alac` atom around ALACSpecificConfig.
        let config: [UInt8] = [0, 0, 0x10, 0, 0, 16, 40, 10, 14, 2, 0, 255, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0xAC, 0x44]
        let atom: [UInt8] = [0, 0, 0, 36] + Array("alac".utf8) + [0, 0, 0, 0] + config
        let parsed = ALACConfiguration(magicCookie: atom)
        #expect(parsed?.formatParameters == "4096 0 16 40 10 14 2 255 4660 0 44100")
        #expect(ALACConfiguration(magicCookie: config) == parsed, "the bare config reads the same")
        #expect(ALACConfiguration(magicCookie: Array(config.prefix(23))) == nil)
        #expect(ALACConfiguration(magicCookie: []) == nil)
        #expect(ALACConfiguration.standard.formatParameters == "352 0 16 40 10 14 2 255 0 0 44100")
    }

    @Test func md5MatchesRFC1321() {
        #expect(MD5.hex([]) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex(Array("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
    }

    @Test func aDigestChallengeIsAnsweredAsReceiversCheckIt() throws {
        let challenge = try #require(RTSPDigestChallenge(header: #"Digest realm="raop", nonce="abc123""#))
        #expect(challenge == RTSPDigestChallenge(realm: "raop", nonce: "abc123"))
        let authorization = challenge.authorization(username: "iTunes", password: "sesame", method: "OPTIONS", uri: "*")
        // MD5(MD5("iTunes:raop:sesame"):abc123:MD5("OPTIONS:*")), as shairport-sync computes it.
        #expect(authorization.contains(#"response="5b8f3c510614e32512a88f1013e24ed8""#), "\(authorization)")
        #expect(authorization.hasPrefix(#"Digest username="iTunes", realm="raop", nonce="abc123", uri="*""#))
        // Unquoted values, other orders and spacing read the same.
        #expect(RTSPDigestChallenge(header: "digest nonce=abc123,realm=\"raop\"") == challenge)
    }

    @Test func challengesThatAreNotDigestsOrAreMalformedAreRefused() {
        #expect(RTSPDigestChallenge(header: #"Basic realm="raop""#) == nil)
        #expect(RTSPDigestChallenge(header: #"Digest realm="raop""#) == nil, "no nonce")
        #expect(RTSPDigestChallenge(header: #"Digest realm="raop", nonce="unterminated"#) == nil)
        #expect(RTSPDigestChallenge(header: "Digest realm=\"r\", nonce=\"" + String(repeating: "n", count: 2_000) + "\"") == nil, "too long")
        #expect(RTSPDigestChallenge(header: "") == nil)
        // A nonce cannot smuggle a quote or a line into the answer.
        let hostile = RTSPDigestChallenge(realm: "raop", nonce: "x\r\nEvil: 1")
        #expect(!hostile.authorization(username: "iTunes", password: "p", method: "OPTIONS", uri: "*").contains("\r"))
    }

    @Test func daapMetadataIsOneListingItemOfTaggedTexts() {
        let bytes = DAAPMetadata.listingItem(title: "Hi", artist: nil, album: "Al")
        #expect(bytes == Array("mlit".utf8) + [0, 0, 0, 20] + Array("minm".utf8) + [0, 0, 0, 2] + Array("Hi".utf8)
            + Array("asal".utf8) + [0, 0, 0, 2] + Array("Al".utf8))
        // A long text is cut at a character boundary.
        let long = DAAPMetadata.listingItem(title: String(repeating: "é", count: 600), artist: nil, album: nil)
        #expect(long.count == 8 + 8 + 1024)
        #expect(String(validating: long.dropFirst(16), as: UTF8.self) != nil)
    }

    @Test func metadataTypesComeFromTheTXTRecord() {
        #expect(RAOPMetadataTypes(txt: "0,1,2") == [.text, .artwork, .progress])
        #expect(RAOPMetadataTypes(txt: "0, 2") == [.text, .progress])
        #expect(RAOPMetadataTypes(txt: nil) == [])
        #expect(RAOPMetadataTypes(txt: "9,x") == [])
        #expect(String(decoding: raopProgressParameter(start: 1, current: 2, end: 3), as: UTF8.self) == "progress: 1/2/3\r\n")
    }
}

/// Receivers with different fixed latencies play a frame at one instant: the sync packets
/// make up the difference between each receiver's part and the stream's total.
@Suite struct RAOPLatencyTests {
    @Test func theSyncPacketsMakeUpEachReceiversOwnPart() {
        let position: UInt32 = 1_000_000
        // No header: an AirPort Express's 11 025, as iTunes assumes.
        #expect(RAOPLatency(total: 88_200, receiverHeader: nil).playingTimestamp(position: position) == position - 77_175)
        #expect(RAOPLatency(total: 88_200, receiverHeader: "11025").playingTimestamp(position: position) == position - 77_175)
        #expect(RAOPLatency(total: 88_200, receiverHeader: " 22050 ").playingTimestamp(position: position) == position - 66_150)
        #expect(RAOPLatency(total: 88_200, receiverHeader: "0").playingTimestamp(position: position) == position - 88_200)
        // A receiver whose own part is longer plays late, by what is said.
        let slow = RAOPLatency(total: 11_025, receiverHeader: "44100")
        #expect(slow.playingTimestamp(position: position) == position && slow.lateFrames == 33_075)
        // What cannot be read is the default; what is absurd is bounded (ten seconds).
        #expect(RAOPLatency(total: 88_200, receiverHeader: "soon").receiver == 11_025)
        #expect(RAOPLatency(total: 88_200, receiverHeader: "4294967295").receiver == 441_000)
        // Positions wrap as RTP timestamps do.
        #expect(RAOPLatency(total: 88_200, receiverHeader: nil).playingTimestamp(position: 10) == 10 &- 77_175)
    }
}
