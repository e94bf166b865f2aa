import CSoxr

/// libsoxr's variable-rate resampler on interleaved 16-bit PCM: what a live stream's samples go
/// through once the device's clock is found to drift from the box's, so that the device gets as
/// many samples per second as it plays (a rate moved by parts per million is inaudible; frames
/// dropped or repeated are not).
///
/// libsoxr is opened at run time the first time a stream corrects drift (Debian's libsoxr0, which
/// libavcodec's libswresample already brings): a stream that never drifts never maps it. One per
/// stream, used under its ``LiveAudioStream``'s lock.
final class DriftResampler {
    let channels: Int
    private let resampler: OpaquePointer
    /// Output frames per input frame now.
    private(set) var ratio: Double = 1

    /// A resampler at ratio 1, or why there is none.
    static func make(channels: Int) -> Result<DriftResampler, LiveAudioEncoderError> {
        var error = [CChar](repeating: 0, count: 256)
        guard (1...8).contains(channels), let made = mr_soxr_new(UInt32(channels), &error, error.count) else {
            return .failure(LiveAudioEncoderError(reported: error, otherwise: "no resampler for \(channels) channels"))
        }
        return .success(DriftResampler(resampler: made, channels: channels))
    }

    private init(resampler: OpaquePointer, channels: Int) {
        self.resampler = resampler
        self.channels = channels
    }

    deinit { mr_soxr_free(resampler) }

    /// Moves to `ratio` output frames per input frame over `slewFrames` output frames; false (and
    /// unchanged) when libsoxr refuses it.
    @discardableResult
    func setRatio(_ ratio: Double, slewFrames: Int) -> Bool {
        guard ratio.isFinite, ratio > 0.5, ratio < 2 else { return false }
        guard mr_soxr_set_io_ratio(resampler, 1 / ratio, max(0, slewFrames)) == 0 else { return false }
        self.ratio = ratio
        return true
    }

    /// Output frames the input so far is worth at the ratios it came in at, and those let out.
    private var expectedOutput: Double = 0
    private var producedFrames = 0

    /// Output frames the resampler holds back: its output is aligned with its input (an input
    /// sample comes out where its time says), but the last of it waits for the filter's
    /// look-ahead. Counted here: `soxr_delay` tells the filter's delay, not what is held.
    var heldFrames: Double { max(0, expectedOutput - Double(producedFrames)) }

    /// What the filter still holds, let out at the stream's end.
    func drain() -> [UInt8] {
        let capacity = Int(max(heldFrames, mr_soxr_delay(resampler)).rounded(.up)) + 256
        var output = [UInt8](repeating: 0, count: capacity * 2 * channels)
        var produced = 0
        let failed = output.withUnsafeMutableBytes { out in
            var used = 0
            return mr_soxr_process(resampler, nil, 0, &used, out.bindMemory(to: Int16.self).baseAddress!, capacity, &produced) != 0
        }
        guard !failed else { return [] }
        producedFrames += produced
        expectedOutput = Double(producedFrames)
        output.removeLast((capacity - min(produced, capacity)) * 2 * channels)
        return output
    }

    /// Interleaved S16LE `pcm` (whole frames) resampled; empty when libsoxr failed.
    func process(_ pcm: [UInt8]) -> [UInt8] {
        let bytesPerFrame = 2 * channels
        let frames = pcm.count / bytesPerFrame
        guard frames > 0 else { return [] }
        // Room for the frames at the ratio and what the filter lets out besides.
        let capacity = Int((Double(frames) * ratio).rounded(.up)) + 256
        var output = [UInt8](repeating: 0, count: capacity * bytesPerFrame)
        var produced = 0
        var consumed = 0
        let failed = pcm.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                let source = input.bindMemory(to: Int16.self).baseAddress!
                let target = out.bindMemory(to: Int16.self).baseAddress!
                while consumed < frames, produced < capacity {
                    var used = 0
                    var made = 0
                    guard mr_soxr_process(
                        resampler, source + consumed * channels, frames - consumed, &used, target + produced * channels, capacity - produced, &made) == 0
                    else { return true }
                    consumed += used
                    produced += made
                    if used == 0 && made == 0 { break }
                }
                return false
            }
        }
        expectedOutput += Double(consumed) * ratio
        producedFrames += produced
        guard !failed else { return [] }
        output.removeLast((capacity - produced) * bytesPerFrame)
        return output
    }
}
