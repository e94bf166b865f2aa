import Testing
@testable import RAOP

@Suite struct AirPlayFeaturesTests {
    @Test func shairportSync5sRecordIsAirPlay2WithPTPAndNoPIN() throws {
        // `_airplay._tcp` of shairport-sync 5.2.1 as seen here (../shared/PEERS.md).
        let features = try #require(AirPlayFeatures(attributes: ["features": "0x405F4A00,0x18340", "flags": "0x4"]))
        #expect(features.bits == 0x1_8340_405F_4A00)
        #expect(features.has(AirPlayFeatures.audio) && features.has(AirPlayFeatures.bufferedAudio) && features.usesPTP)
        #expect(features.prefersAirPlay2)
        #expect(!features.requiresPIN)
        #expect(features.unplayableReason == nil)
    }

    @Test func anAirPlay1ReceiversFtIsAirPlay1() throws {
        let features = try #require(AirPlayFeatures(attributes: ["ft": "0x5A7FFFF7,0xE"]))  // AirPort Express 7.8
        #expect(!features.prefersAirPlay2)
        #expect(features.has(AirPlayFeatures.audio))
        #expect(features.unplayableReason == nil)  // legacy pairing (bit 27) besides FairPlay
    }

    @Test func unplayableReceiversSayWhy() throws {
        #expect(AirPlayFeatures(bits: 1 << 9 | 1 << 48, accessControl: 1).unplayableReason?.contains("home") == true)
        #expect(AirPlayFeatures(bits: 1 << 9 | 1 << 14).unplayableReason?.contains("FairPlay") == true)
        #expect(AirPlayFeatures(bits: 1 << 7).unplayableReason?.contains("audio") == true)
        #expect(AirPlayFeatures(bits: 1 << 9 | 1 << 48, flags: 0x8).requiresPIN)
    }

    @Test func malformedValuesAreNil() {
        for text in ["", "0x", "zz", "0x1,0x2,0x3", "0x100000000,0x1", "1,0x100000000", "0x" + String(repeating: "F", count: 30)] {
            #expect(AirPlayFeatures(attributes: ["features": text]) == nil, "\(text)")
        }
        #expect(AirPlayFeatures(attributes: [:]) == nil)
        #expect(AirPlayFeatures(attributes: ["features": "1536"])?.bits == 1536)
    }
}
