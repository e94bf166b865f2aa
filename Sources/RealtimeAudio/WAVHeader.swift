public import MediaDevice
public import RoutingModel

/// The header of a RIFF/WAVE file: the PCM format and where the samples start.
///
/// Only what real-time delivery can send is accepted: integer PCM of 16 bits or float PCM
/// of 32 bits (plain or `WAVE_FORMAT_EXTENSIBLE`), so a file is refused before a byte goes
/// to a device. Chunk sizes come from the file and are checked, never trusted: the
/// samples must start within ``maximumHeaderBytes``.
public struct WAVHeader: Sendable, Hashable {
    /// The most bytes a header (every chunk before `data`) may take.
    public static let maximumHeaderBytes = 65_536

    public var format: SampleBuffer.Format
    /// Where the samples start.
    public var dataOffset: Int
    /// Bytes of samples; nil when the writer did not know (a stream: 0 or 0xFFFFFFFF in the header).
    public var dataLength: Int?

    /// Why a header is refused.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        case notRIFFWave
        case noFormatChunk
        case malformedChunk(String)
        case unsupportedEncoding(formatTag: UInt16, bitsPerSample: UInt16)
        case badChannelCount(UInt16)
        case badSampleRate(UInt32)
        case headerTooLong

        public var description: String {
            switch self {
            case .notRIFFWave: "not a WAV file (no RIFF/WAVE header)"
            case .noFormatChunk: "the WAV file has samples before its fmt chunk"
            case .malformedChunk(let name): "the WAV file's \(name) chunk is malformed"
            case .unsupportedEncoding(let tag, let bits):
                "the WAV file holds \(bits)-bit samples of format \(tag); 16-bit integer or 32-bit float PCM is taken"
            case .badChannelCount(let count): "the WAV file has \(count) channels"
            case .badSampleRate(let rate): "the WAV file's sample rate \(rate) is not one a device plays"
            case .headerTooLong: "the WAV file's samples do not start within \(WAVHeader.maximumHeaderBytes) bytes"
            }
        }
    }

    public init(format: SampleBuffer.Format, dataOffset: Int, dataLength: Int?) {
        self.format = format
        self.dataOffset = dataOffset
        self.dataLength = dataLength
    }

    /// The header at the start of `bytes`; nil when more bytes are needed to see where the samples start.
    /// - Throws: ``Failure`` for anything but a WAV file of PCM a device can be sent.
    public static func parse(_ bytes: some RandomAccessCollection<UInt8>) throws(Failure) -> WAVHeader? {
        let bytes = Array(bytes.prefix(maximumHeaderBytes + 8))
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
        func tag(_ at: Int) -> String { String(decoding: bytes[at..<at + 4], as: UTF8.self) }

        guard bytes.count >= 12 else {
            // Refuse early what cannot become a WAV header.
            if !bytes.isEmpty, !"RIFF".utf8.starts(with: bytes.prefix(4)) { throw .notRIFFWave }
            return nil
        }
        guard tag(0) == "RIFF", tag(8) == "WAVE" else { throw .notRIFFWave }
        var offset = 12
        var format: SampleBuffer.Format?
        while true {
            guard offset <= maximumHeaderBytes else { throw .headerTooLong }
            guard offset + 8 <= bytes.count else { return nil }
            let name = tag(offset)
            let size = Int(u32(offset + 4))
            let body = offset + 8
            if name == "data" {
                guard let format else { throw .noFormatChunk }
                let length: Int? = (size == 0 || size == 0xFFFF_FFFF) ? nil : size
                return WAVHeader(format: format, dataOffset: body, dataLength: length)
            }
            if name == "fmt " {
                guard size >= 16 else { throw .malformedChunk("fmt") }
                guard body + 16 <= bytes.count else { return nil }
                var formatTag = u16(body)
                let channels = u16(body + 2)
                let rate = u32(body + 4)
                let blockAlign = u16(body + 12)
                let bits = u16(body + 14)
                if formatTag == 0xFFFE {
                    // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
                    guard size >= 40 else { throw .malformedChunk("fmt") }
                    guard body + 26 <= bytes.count else { return nil }
                    formatTag = u16(body + 24)
                }
                let encoding: SampleBuffer.Format.Encoding
                switch (formatTag, bits) {
                case (1, 16): encoding = .pcmS16LE
                case (3, 32): encoding = .pcmF32LE
                default: throw .unsupportedEncoding(formatTag: formatTag, bitsPerSample: bits)
                }
                guard (1...8).contains(channels) else { throw .badChannelCount(channels) }
                guard (8_000...384_000).contains(rate) else { throw .badSampleRate(rate) }
                guard Int(blockAlign) == Int(channels) * Int(bits / 8) else { throw .malformedChunk("fmt") }
                format = SampleBuffer.Format(encoding: encoding, sampleRate: Int(rate), channels: Int(channels))
            }
            // Chunks are padded to an even size. 32-bit sizes cannot overflow Int here.
            offset = body + size + (size & 1)
        }
    }
}
