import BluetoothAudio
import Testing

@Suite struct SBCCapabilitiesTests {
    @Test func theFieldsOfTheFourBytes() throws {
        let capabilities = try #require(SBCCapabilities(bytes: [0x3F, 0xF5, 2, 35]))
        #expect(capabilities.frequencies == 0x3)
        #expect(capabilities.channelModes == 0xF)
        #expect(capabilities.blockLengths == 0xF)
        #expect(capabilities.subbands == 0x1)
        #expect(capabilities.allocationMethods == 0x1)
        #expect(capabilities.minimumBitpool == 2)
        #expect(capabilities.maximumBitpool == 35)
        #expect(capabilities.bytes == [0x3F, 0xF5, 2, 35])
        #expect(SBCCapabilities(bytes: [0xFF, 0xFF, 2]) == nil)
        #expect(SBCCapabilities.source.bytes == [0xFF, 0xFF, 2, 53])
    }

    @Test func aSourcePicksHighQualityFromWhatTheSpeakerOffers() throws {
        // Everything offered: 44.1 kHz joint stereo, 16 blocks, 8 subbands, loudness, bitpool up to 53.
        #expect(try SBCCapabilities.source.configuration().bytes == [0x21, 0x15, 2, 53])
        // 48 kHz only: A2DP's high-quality bitpool there is 51.
        #expect(try SBCCapabilities(bytes: [0x1F, 0xFF, 2, 250])!.configuration().bytes == [0x11, 0x15, 2, 51])
        // A speaker's own lower maximum wins; mono only gets the mono bitpool.
        #expect(try SBCCapabilities(bytes: [0x3F, 0xFF, 2, 35])!.configuration().bytes == [0x21, 0x15, 2, 35])
        #expect(try SBCCapabilities(bytes: [0x28, 0x5A, 10, 250])!.configuration().bytes == [0x28, 0x1A, 10, 31])
    }

    /// A2DP's SBC figures: high quality at 44.1 kHz joint stereo (bitpool 53) is 328 kb/s, at
    /// 48 kHz (bitpool 51) 345 kb/s; mono with four subbands at bitpool 31, 375 kb/s (8 × 68-byte
    /// frames of 64 samples at 44.1 kHz).
    @Test func theBitRateOfAConfigurationIsA2DPsFigure() throws {
        #expect(try SBCCapabilities.source.configuration().bitrate == 327_993)
        #expect(try SBCCapabilities(bytes: [0x1F, 0xFF, 2, 250])!.configuration().bitrate == 345_000)
        #expect(try SBCCapabilities(bytes: [0x28, 0x5A, 10, 250])!.configuration().bitrate == 374_850)
        #expect(SBCCapabilities.source.bitrate == nil, "capabilities with several bits per field are no one configuration")
    }

    @Test func whatCannotBeConfiguredIsARefusalWithTheReason() {
        #expect(throws: BluetoothAudioError.self) { try SBCCapabilities(bytes: [0x0F, 0xFF, 2, 53])!.configuration() }  // no frequency
        #expect(throws: BluetoothAudioError.self) { try SBCCapabilities(bytes: [0xF0, 0xFF, 2, 53])!.configuration() }  // no mode
        #expect(throws: BluetoothAudioError.self) { try SBCCapabilities(bytes: [0xFF, 0xFF, 60, 53])!.configuration() }  // min > max
        #expect(throws: BluetoothAudioError.self) { try SBCCapabilities(bytes: [0xFF, 0xF0, 2, 53])!.configuration() }  // no subbands
    }

    @Test func onlyOneConfigurationWithinWhatWasOfferedIsTaken() throws {
        let offered = SBCCapabilities.source
        #expect(try #require(SBCCapabilities(bytes: [0x21, 0x15, 2, 53])).isConfiguration(within: offered))
        #expect(!(try #require(SBCCapabilities(bytes: [0x31, 0x15, 2, 53])).isConfiguration(within: offered)), "two frequencies")
        #expect(!(try #require(SBCCapabilities(bytes: [0x21, 0x15, 2, 60])).isConfiguration(within: offered)), "bitpool above the offer")
        #expect(!(try #require(SBCCapabilities(bytes: [0x21, 0x15, 0, 53])).isConfiguration(within: offered)), "bitpool 0")
        #expect(!(try #require(SBCCapabilities(bytes: [0x01, 0x15, 2, 53])).isConfiguration(within: offered)), "no frequency")
    }
}
