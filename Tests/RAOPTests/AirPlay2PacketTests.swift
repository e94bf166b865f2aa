import Foundation
import HAP
import RAOP
import Testing

@Suite struct AirPlay2PacketTests {
    let key = [UInt8](0..<32)

    @Test func anAudioPacketIsAClearHeaderTheSealedFrameItsTagAndTheNonceTail() throws {
        let frame = [UInt8](repeating: 0xA5, count: 100)
        let packet = try AirPlay2Packet.audio(sequence: 0x1234, timestamp: 0xDEAD_BEEF, ssrc: 0x0102_0304, first: true, payload: frame, key: key)
        #expect(packet.count == 12 + 100 + 16 + 8)
        #expect(Array(packet[0..<12]) == [0x80, 0xE0, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x02, 0x03, 0x04], "the RTP header, marker on the first")
        #expect(Array(packet.suffix(8)) == [0x34, 0x12, 0, 0, 0, 0, 0, 0], "the nonce's last 8 bytes: the sequence number, little-endian")
        #expect(Array(packet[12..<112]) != frame, "the frame is not in clear")
        // Its nonce is 4 zero bytes and the tail; the additional data the timestamp and SSRC.
        let sealed = try HAPCrypto.seal(frame, key: key, nonce: [0, 0, 0, 0] + Array(packet.suffix(8)), aad: Array(packet[4..<12]))
        #expect(Array(packet[12..<(packet.count - 8)]) == sealed)
        let opened = try AirPlay2Packet.openAudio(packet, key: key)
        #expect(opened.payload == frame && opened.sequence == 0x1234 && opened.timestamp == 0xDEAD_BEEF)
        // The same packet sent again (a resend) is the same bytes.
        #expect(try AirPlay2Packet.audio(sequence: 0x1234, timestamp: 0xDEAD_BEEF, ssrc: 0x0102_0304, first: true, payload: frame, key: key) == packet)
    }

    @Test func aPacketWhoseHeaderOrBytesWereChangedOrThatIsShortDoesNotOpen() throws {
        let packet = try AirPlay2Packet.audio(sequence: 7, timestamp: 1000, ssrc: 9, first: false, payload: [1, 2, 3], key: key)
        var moved = packet
        moved[7] ^= 1  // another timestamp: the additional data
        #expect { try AirPlay2Packet.openAudio(moved, key: key) } throws: { ($0 as? HAPError)?.kind == .authenticationFailed }
        var damaged = packet
        damaged[13] ^= 0x80
        #expect { try AirPlay2Packet.openAudio(damaged, key: key) } throws: { ($0 as? HAPError)?.kind == .authenticationFailed }
        #expect { try AirPlay2Packet.openAudio(Array(packet.prefix(35)), key: key) } throws: { ($0 as? HAPError)?.kind == .malformed }
        #expect { try AirPlay2Packet.openAudio(packet, key: [UInt8](repeating: 1, count: 32)) } throws: { ($0 as? HAPError)?.kind == .authenticationFailed }
    }

    @Test func aSyncPacketTiesAnRTPTimeToTheMastersNanosecondsAndNamesItsClock() {
        let packet = AirPlay2Packet.sync(
            playingTimestamp: 0x0102_0304, masterTime: .seconds(3) + .nanoseconds(5), nextTimestamp: 0x0A0B_0C0D, clockIdentity: 0x1122_33FF_FE44_5566, first: true)
        #expect(packet == [0x90, 0xD7, 0x00, 0x06, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0, 0xB2, 0xD0, 0x5E, 0x05, 0x0A, 0x0B, 0x0C, 0x0D,
                           0x11, 0x22, 0x33, 0xFF, 0xFE, 0x44, 0x55, 0x66])
        #expect(AirPlay2Packet.sync(playingTimestamp: 0, masterTime: .zero, nextTimestamp: 0, clockIdentity: 0, first: false)[0] == 0x80)
        // A time before the clock's origin cannot trap: it is clamped to 0.
        #expect(AirPlay2Packet.sync(playingTimestamp: 0, masterTime: .seconds(-5), nextTimestamp: 0, clockIdentity: 0, first: false)[8..<16].allSatisfy { $0 == 0 })
    }
}

@Suite struct AirPlay2SetupTests {
    /// What shairport-sync 5 reads of the first SETUP, by the names it looks for.
    @Test func theSessionSetupIsABinaryPlistWithTheNamesReceiversRead() throws {
        let peer = AirPlay2Setup.TimingPeer(id: "G", addresses: ["10.0.0.2"], clockIdentity: 0xF842_885F_7175_0008)
        let body = AirPlay2Setup.encode(AirPlay2Setup.Session(name: "MediaRoute", deviceID: "AA:BB:CC:DD:EE:FF", sessionUUID: "S", groupUUID: "G", timing: .ptp(peer)).propertyList)
        #expect(Array(body.prefix(8)) == Array("bplist00".utf8))
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(body), format: nil) as? [String: Any])
        #expect(plist["timingProtocol"] as? String == "PTP")
        #expect(plist["groupUUID"] as? String == "G" && plist["groupContainsGroupLeader"] as? Bool == false)
        let info = try #require(plist["timingPeerInfo"] as? [String: Any])
        #expect(info["Addresses"] as? [String] == ["10.0.0.2"])
        #expect((info["ClockID"] as? NSNumber)?.int64Value == -557_733_460_333_756_408, "the clock id as a signed number, as OwnTone sends it")
        #expect((plist["timingPeerList"] as? [Any])?.count == 1)
        #expect(plist["timingPort"] == nil, "no NTP port for a PTP session")
        #expect(plist["name"] as? String == "MediaRoute" && plist["deviceID"] as? String == "AA:BB:CC:DD:EE:FF")
    }

    /// A rate anchor's time as shairport-sync reads it: whole seconds, and the fraction's bits
    /// (unsigned, though a binary plist holds an 8-byte integer signed) in 2⁻⁶⁴ units.
    @Test func aRateAnchorCarriesSecondsAndABinaryFraction() throws {
        let body = AirPlay2Setup.encode(AirPlay2Setup.rateAnchor(playing: true, rtpTime: 4_000_000_000, networkTime: .seconds(12) + .milliseconds(750), clockIdentity: 0xF842_885F_7175_0008))
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(body), format: nil) as? [String: Any])
        #expect((plist["networkTimeSecs"] as? NSNumber)?.int64Value == 12)
        #expect((plist["networkTimeFrac"] as? NSNumber).map { UInt64(bitPattern: $0.int64Value) } == 0xC000_0000_0000_0000)
        #expect((plist["rtpTime"] as? NSNumber)?.int64Value == 4_000_000_000 && (plist["rate"] as? NSNumber)?.intValue == 1)
        #expect((plist["networkTimeTimelineID"] as? NSNumber).map { UInt64(bitPattern: $0.int64Value) } == 0xF842_885F_7175_0008)
        let paused = AirPlay2Setup.encode(AirPlay2Setup.rateAnchor(playing: false, rtpTime: 0, networkTime: .seconds(-1), clockIdentity: 0))
        let pausedList = try #require(try PropertyListSerialization.propertyList(from: Data(paused), format: nil) as? [String: Any])
        #expect((pausedList["rate"] as? NSNumber)?.intValue == 0 && (pausedList["networkTimeSecs"] as? NSNumber)?.intValue == 0, "a time before the origin is clamped")
    }

    /// A buffered packet: its length first (counting itself), the marker and a 23-bit sequence,
    /// the SSRC naming AAC, the unit sealed as a real-time frame is; the key opens it.
    @Test func aBufferedPacketIsFramedForTCPAndSealed() throws {
        let key = [UInt8](repeating: 9, count: 32)
        let packet = try AirPlay2Packet.bufferedAudio(sequence: 0x81_2345, timestamp: 0xA0B0_C0D0, payload: [1, 2, 3], key: key)
        #expect(packet.count == 2 + 12 + 3 + 16 + 8 && Int(packet[0]) << 8 | Int(packet[1]) == packet.count)
        #expect(Array(packet[2..<6]) == [0x80, 0x81, 0x23, 0x45], "the sequence wraps at 23 bits, under the marker")
        #expect(Array(packet[10..<14]) == [0x16, 0, 0, 0])
        let opened = try AirPlay2Packet.openAudio(Array(packet[2...]), key: key)
        #expect(opened.payload == [1, 2, 3] && opened.timestamp == 0xA0B0_C0D0)
    }

    /// An NTP-timed session names our timing port instead of a timing peer.
    @Test func anNTPSessionSetupNamesTheTimingPort() throws {
        let body = AirPlay2Setup.encode(AirPlay2Setup.Session(name: "MediaRoute", deviceID: "AA:BB:CC:DD:EE:FF", sessionUUID: "S", groupUUID: "G", timing: .ntp(port: 6002)).propertyList)
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(body), format: nil) as? [String: Any])
        #expect(plist["timingProtocol"] as? String == "NTP")
        #expect((plist["timingPort"] as? NSNumber)?.intValue == 6002)
        #expect(plist["timingPeerInfo"] == nil && plist["timingPeerList"] == nil)
    }

    /// The writer against FoundationEssentials' reader: every kind, long and non-ASCII strings,
    /// counts from 15 on, negative and wide integers, more than 255 objects (2-byte references)
    /// and offsets past 64 KiB.
    @Test func theWriterIsReadBackWholeByFoundation() throws {
        let many = (0..<300).map { BinaryPropertyList.Value.integer(Int64($0) * 1_000_003) }
        let value = BinaryPropertyList.Value.dictionary([
            ("short", .string("PTP")), ("long", .string(String(repeating: "x", count: 40))), ("unicode", .string("Küche ♫ 🎵")),
            ("negative", .integer(-557_733_460_333_756_408)), ("wide", .integer(70_000)), ("widest", .integer(5_000_000_000)),
            ("yes", .bool(true)), ("no", .bool(false)), ("blob", .data([UInt8](repeating: 7, count: 70_000))), ("many", .array(many)),
            ("nested", .dictionary([("empty", .array([])), ("small", .data([1, 2, 3]))])),
        ])
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(BinaryPropertyList.encode(value)), format: nil) as? [String: Any])
        #expect(plist["short"] as? String == "PTP" && plist["long"] as? String == String(repeating: "x", count: 40))
        #expect(plist["unicode"] as? String == "Küche ♫ 🎵")
        #expect((plist["negative"] as? NSNumber)?.int64Value == -557_733_460_333_756_408)
        #expect((plist["wide"] as? NSNumber)?.intValue == 70_000 && (plist["widest"] as? NSNumber)?.int64Value == 5_000_000_000)
        #expect(plist["yes"] as? Bool == true && plist["no"] as? Bool == false)
        #expect((plist["blob"] as? Data)?.count == 70_000)
        #expect((plist["many"] as? [NSNumber])?.map(\.int64Value) == (0..<300).map { Int64($0) * 1_000_003 })
        let nested = plist["nested"] as? [String: Any]
        #expect((nested?["empty"] as? [Any])?.isEmpty == true && nested?["small"] as? Data == Data([1, 2, 3]))
        #expect(plist.count == 11)
    }

    @Test func theStreamSetupCarriesTheKeyFormatAndPorts() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let body = AirPlay2Setup.encode(AirPlay2Setup.streams([AirPlay2Setup.Stream(controlPort: 6001, key: key, connectionID: 42, latencyFrames: 88_200)]))
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(body), format: nil) as? [String: Any])
        let stream = try #require((plist["streams"] as? [[String: Any]])?.first)
        #expect(stream["shk"] as? Data == Data(key))
        #expect((stream["type"] as? NSNumber)?.intValue == 96 && (stream["ct"] as? NSNumber)?.intValue == 2 && (stream["spf"] as? NSNumber)?.intValue == 352)
        #expect((stream["audioFormat"] as? NSNumber)?.intValue == 0x40000 && (stream["controlPort"] as? NSNumber)?.intValue == 6001)
    }

    @Test func theReceiversAnswersAreReadAndAnythingElseIsATypedError() throws {
        let answer = try PropertyListSerialization.data(
            fromPropertyList: ["streams": [["type": 96, "dataPort": 6000, "controlPort": 6001]]], format: .binary, options: 0)
        let reply = try AirPlay2Setup.decode(AirPlay2Setup.StreamsReply.self, from: [UInt8](answer))
        #expect(reply.streams.first?.dataPort == 6000 && reply.streams.first?.controlPort == 6001)
        let session = try PropertyListSerialization.data(fromPropertyList: ["eventPort": 7001, "timingPort": 0], format: .binary, options: 0)
        #expect(try AirPlay2Setup.decode(AirPlay2Setup.SessionReply.self, from: [UInt8](session)).eventPort == 7001)
        // A port out of range, the wrong shape, garbage, and too much: errors, not traps.
        let outOfRange = try PropertyListSerialization.data(fromPropertyList: ["streams": [["dataPort": 70_000]]], format: .binary, options: 0)
        #expect(throws: RTSPError.self) { try AirPlay2Setup.decode(AirPlay2Setup.StreamsReply.self, from: [UInt8](outOfRange)) }
        #expect(throws: RTSPError.self) { try AirPlay2Setup.decode(AirPlay2Setup.StreamsReply.self, from: [UInt8](session)) }
        #expect(throws: RTSPError.self) { try AirPlay2Setup.decode(AirPlay2Setup.StreamsReply.self, from: Array("bplist00garbage".utf8)) }
        // XML, which no receiver sends here and whose reader traps on some malformed text: refused unread.
        let xml = try PropertyListSerialization.data(fromPropertyList: ["eventPort": 7001], format: .xml, options: 0)
        #expect(throws: RTSPError.self) { try AirPlay2Setup.decode(AirPlay2Setup.SessionReply.self, from: [UInt8](xml)) }
        #expect(throws: RTSPError.self) { try AirPlay2Setup.decode(AirPlay2Setup.SessionReply.self, from: [UInt8](repeating: 0, count: 70_000)) }
    }
}
