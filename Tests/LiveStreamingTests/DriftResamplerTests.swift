import Foundation
@testable import LiveStreaming
import MediaRouteTestSupport
import Testing

/// libsoxr's variable-rate resampler on bytes: the count of frames out follows the ratio, the
/// tone stays whole in every window, and a refused ratio changes nothing.
@Suite struct DriftResamplerTests {
    func resampler() throws -> DriftResampler {
        switch DriftResampler.make(channels: 2) {
        case .success(let made): return made
        case .failure(let failure):
            // libsoxr0 comes with libavcodec59 (make deps installs it); a box without it corrects no drift.
            Issue.record("no libsoxr: \(failure)")
            throw failure
        }
    }

    @Test(arguments: [1.0, 1.001, 0.999]) func framesOutFollowTheRatioAndTheToneStaysWhole(_ ratio: Double) throws {
        let resampler = try resampler()
        #expect(resampler.setRatio(ratio, slewFrames: 0))
        let source = tone(seconds: 6)
        var output: [UInt8] = []
        // In delivery's 100 ms batches.
        for start in stride(from: 0, to: source.count, by: 4_410 * 4) {
            output += resampler.process(Array(source[start..<min(source.count, start + 4_410 * 4)]))
        }
        let framesIn = Double(source.count / 4), framesOut = Double(output.count / 4)
        // What it holds back is counted: out and held make the input at the ratio.
        #expect(abs(framesOut + resampler.heldFrames - framesIn * ratio) < 2, "\(framesOut) frames out of \(framesIn) at \(ratio)")
        #expect(resampler.heldFrames > 0 && resampler.heldFrames < 1_000)
        // Drained at the end, the rest comes out.
        let rest = resampler.drain()
        #expect(abs(Double(rest.count / 4) - (framesIn * ratio - framesOut)) < 2, "\(rest.count / 4) frames drained")
        // At a ratio r the 440 Hz tone comes out at 440 / r: each 50 ms window is that sine.
        let windows = matchingWindows(leftChannel(output), frequency: 440 / ratio)
        #expect(windows.total > 100)
        #expect(windows.matching >= windows.total - 1, "\(windows.matching) of \(windows.total) windows intact")
    }

    @Test func aRatioOutOfRangeIsRefusedAndChangesNothing() throws {
        let resampler = try resampler()
        #expect(resampler.setRatio(1.0005, slewFrames: 100))
        #expect(!resampler.setRatio(.nan, slewFrames: 0))
        #expect(!resampler.setRatio(3, slewFrames: 0))
        #expect(!resampler.setRatio(0, slewFrames: 0))
        #expect(resampler.ratio == 1.0005)
        #expect(resampler.process([]).isEmpty)
        // Half a frame is not a frame.
        #expect(resampler.process([1, 2]).isEmpty)
    }
}
