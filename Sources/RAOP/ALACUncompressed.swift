

/// ALAC frames without compression (the "escape" form every ALAC decoder reads): 16-bit
/// stereo, a whole frame of ``framesPerPacket`` samples or fewer for the last.
public enum ALACUncompressed {
    /// Frames in each RTP packet of a RAOP stream (what the SDP's fmtp announces).
    public static let framesPerPacket = 352

    /// One frame from interleaved stereo S16LE `pcm` (whole frames; a trailing partial frame is ignored).
    ///
    /// The bit layout: element tag 1 (a channel pair), instance 0, 12 unused bits, 1 (the
    /// sample count follows), 0 bytes shifted, 1 (not compressed), the count in 32 bits,
    /// then each frame's left and right samples, big-endian, and the end tag (7).
    public static func frame(stereoS16LE pcm: ArraySlice<UInt8>) -> [UInt8] {
        let frames = pcm.count / 4
        var writer = BitWriter()
        writer.write(1, bits: 3)
        writer.write(0, bits: 4)
        writer.write(0, bits: 12)
        writer.write(1, bits: 1)
        writer.write(0, bits: 2)
        writer.write(1, bits: 1)
        writer.write(UInt32(frames), bits: 32)
        var index = pcm.startIndex
        for _ in 0..<(frames * 2) {
            let sample = UInt16(pcm[index]) | UInt16(pcm[index + 1]) << 8
            writer.write(UInt32(sample), bits: 16)
            index += 2
        }
        writer.write(7, bits: 3)
        return writer.bytes
    }
}
