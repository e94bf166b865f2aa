import BluetoothAudio
import Testing

@Suite struct LinkAdaptationTests {
    /// libsbc's A2DP set-up alone runs at bitpool 32; the encoder runs at the configured one and
    /// says so, and its steps change the frames it writes.
    @Test func sbcRunsAtTheConfiguredBitpoolAndStepsIt() throws {
        let configuration: [UInt8] = [0x21, 0x15, 2, 53]
        let encoder = try SBCEncoder(a2dpConfiguration: configuration, mtu: 895)
        #expect(encoder.bitpool == 53)
        #expect(encoder.encodedFrameLength == 119)
        #expect(encoder.bitrate == SBCCapabilities(bytes: configuration)?.bitrate)
        #expect(encoder.stepBitrate(down: true))
        #expect(encoder.bitpool == 49 && encoder.bitrate < 328_000)
        while encoder.stepBitrate(down: true) {}
        #expect(encoder.bitpool == encoder.minimumBitpool && encoder.minimumBitpool == 18)
        let packets = try encoder.packets(from: [UInt8](repeating: 0, count: 512 * 40))
        #expect(packets.allSatisfy { $0.count <= 895 })
        while encoder.stepBitrate(down: false) {}
        #expect(encoder.bitpool == 53)
    }

    @Test func congestionStepsDownAtMostTwiceASecondOfAudio() {
        var adaptation = LinkAdaptation(sampleRate: 44_100)
        // 10 ms deliveries: a refused packet steps down once half a second of audio has passed.
        var steps: [LinkAdaptation.Step] = []
        for _ in 0..<200 {  // 2 s of audio, congested throughout
            if let step = adaptation.record(samples: 441, dropped: 1, queuedPackets: 0) {
                steps.append(step)
                adaptation.stepped(step, taken: true)
            }
        }
        #expect(steps == [.down, .down, .down, .down], "one step per half second of audio: \(steps)")
        #expect(adaptation.stepsDown == 4)
        #expect(adaptation.droppedPackets == 200)
    }

    @Test func aDeepSendQueueIsCongestionToo() {
        var adaptation = LinkAdaptation(sampleRate: 48_000)
        var step: LinkAdaptation.Step?
        for _ in 0..<60 where step == nil { step = adaptation.record(samples: 480, dropped: 0, queuedPackets: 6) }
        #expect(step == .down)
        var calm = LinkAdaptation(sampleRate: 48_000)
        for _ in 0..<60 { #expect(calm.record(samples: 480, dropped: 0, queuedPackets: 5) == nil) }
    }

    @Test func tenSecondsOfAudioWithoutCongestionStepBackUpOneNotch() {
        var adaptation = LinkAdaptation(sampleRate: 44_100)
        var stepsUp = 0
        // 9.9 s clean: nothing.
        for _ in 0..<990 { #expect(adaptation.record(samples: 441, dropped: 0, queuedPackets: 0) == nil) }
        // One congested delivery restarts the count (and, after half a second, steps down).
        _ = adaptation.record(samples: 441, dropped: 1, queuedPackets: 0)
        for _ in 0..<999 {
            if let step = adaptation.record(samples: 441, dropped: 0, queuedPackets: 0) {
                #expect(step == .up)
                stepsUp += 1
                adaptation.stepped(step, taken: true)
            }
        }
        #expect(stepsUp == 0, "9.99 s since the congestion")
        for _ in 0..<10 {
            if let step = adaptation.record(samples: 441, dropped: 0, queuedPackets: 0) {
                adaptation.stepped(step, taken: true)
                stepsUp += 1
            }
        }
        #expect(stepsUp == 1)
        #expect(adaptation.stepsUp == 1)
    }

    /// A box that spends more than half the audio's time encoding it steps down (a lower rate
    /// costs less: FFmpeg's AAC at 128 kbit/s takes less than half of 256's).
    @Test func encodingThatTakesMoreThanHalfTheAudiosTimeStepsDown() {
        var busy = LinkAdaptation(sampleRate: 44_100)
        var step: LinkAdaptation.Step?
        for _ in 0..<60 where step == nil {
            step = busy.record(samples: 441, dropped: 0, queuedPackets: 0, encoding: .microseconds(6_000))  // 60 % of 10 ms
        }
        #expect(step == .down)
        #expect(busy.overloadedWindows == 1)
        var fine = LinkAdaptation(sampleRate: 44_100)
        for _ in 0..<200 {
            #expect(fine.record(samples: 441, dropped: 0, queuedPackets: 0, encoding: .microseconds(4_000)) == nil)  // 40 %
        }
        #expect(fine.overloadedWindows == 0)
    }

    /// A codec the box cannot encode in time at any rate: a second of audio whose encoding took
    /// longer than the audio says so at once; a second overloaded at the lowest rate says so
    /// too; overloaded above the lowest rate, or a good window between, does not.
    @Test func aCodecTheBoxCannotKeepUpWithIsToldApart() {
        var hopeless = LinkAdaptation(sampleRate: 44_100)
        for _ in 0..<50 { _ = hopeless.record(samples: 441, dropped: 0, queuedPackets: 0, encoding: .microseconds(12_000)) }  // 120 %
        #expect(!hopeless.codecTooCostly, "half a second")
        for _ in 0..<50 { _ = hopeless.record(samples: 441, dropped: 0, queuedPackets: 0, encoding: .microseconds(12_000)) }
        #expect(hopeless.codecTooCostly, "a second")

        var stepping = LinkAdaptation(sampleRate: 44_100)
        func overloadedSecond(_ adaptation: inout LinkAdaptation, taken: Bool) {
            for _ in 0..<100 {
                if let step = adaptation.record(samples: 441, dropped: 0, queuedPackets: 0, encoding: .microseconds(7_000)) {  // 70 %
                    adaptation.stepped(step, taken: taken)
                }
            }
        }
        overloadedSecond(&stepping, taken: true)
        overloadedSecond(&stepping, taken: true)
        #expect(!stepping.codecTooCostly, "the encoder still steps down")
        overloadedSecond(&stepping, taken: false)
        #expect(stepping.atLowestRate)
        overloadedSecond(&stepping, taken: false)
        #expect(stepping.codecTooCostly, "overloaded at the lowest rate")
        // One window in time starts the count again.
        for _ in 0..<50 { _ = stepping.record(samples: 441, dropped: 0, queuedPackets: 0, encoding: .microseconds(1_000)) }
        #expect(!stepping.codecTooCostly)
        #expect(stepping.hopelessWindows == 0)
    }

    @Test func anEncoderAtItsEndIsAskedAgainOnlyAfterTheWait() {
        var adaptation = LinkAdaptation(sampleRate: 44_100)
        var asked = 0
        for _ in 0..<100 {
            if let step = adaptation.record(samples: 441, dropped: 1, queuedPackets: 0) {
                asked += 1
                adaptation.stepped(step, taken: false)  // already at its lowest
            }
        }
        #expect(asked == 2, "1 s of audio: asked twice")
        #expect(adaptation.stepsDown == 0)
    }
}
