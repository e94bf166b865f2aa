#if canImport(Glibc)
import Glibc
#endif

/// `frames` stereo S16 frames of a ramp that never has a zero sample.
public func rampFrames(_ frames: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(frames * 4)
    for index in 0..<frames {
        let value = UInt16(1 + index % 30_000)
        bytes += [UInt8(value & 0xFF), UInt8(value >> 8), UInt8(value & 0xFF), UInt8(value >> 8)]
    }
    return bytes
}

/// `bytes` without its all-zero frames (the silence a late writer gets).
public func withoutSilence(_ bytes: [UInt8], frameSize: Int = 4) -> (audio: [UInt8], silentFrames: Int) {
    var audio: [UInt8] = []
    var silent = 0
    for start in stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize) {
        let frame = bytes[start..<start + frameSize]
        if frame.allSatisfy({ $0 == 0 }) { silent += 1 } else { audio += frame }
    }
    return (audio, silent)
}

/// Writes all of `bytes` to a stream socket in pieces of `piece` bytes, blocking while it is full;
/// returns whether everything was written.
@discardableResult
public func writeBlocking(_ bytes: [UInt8], to descriptor: Int32, piece: Int) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let count = min(piece, bytes.count - offset)
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, count, Int32(MSG_NOSIGNAL)) }
        if sent < 0 && errno == EINTR { continue }
        guard sent > 0 else { return false }
        offset += sent
    }
    return true
}

/// Whether two byte arrays are equal, as a plain Bool: a failed expectation then prints
/// the counts it is given, not megabytes of samples.
public func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b }
