#if canImport(Glibc)
import Glibc
#endif
import Foundation

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

/// ``writeBlocking(_:to:piece:)`` on a thread of its own, closing `descriptor` after it when
/// `closing`: a blocking write on the cooperative pool (two threads on a two-core box) holds
/// back every task of the code under test while the route is paused or slow.
public func writeOnOwnThread(_ bytes: [UInt8], to descriptor: Int32, piece: Int, closing: Bool = true) -> Task<Bool, Never> {
    Task {
        await withCheckedContinuation { finished in
            Thread {
                let written = writeBlocking(bytes, to: descriptor, piece: piece)
                if closing { close(descriptor) }
                finished.resume(returning: written)
            }.start()
        }
    }
}

/// Whether two byte arrays are equal, as a plain Bool: a failed expectation then prints
/// the counts it is given, not megabytes of samples.
public func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b }

/// The left channel of stereo S16LE bytes.
public func leftChannel(_ bytes: [UInt8]) -> [Double] {
    stride(from: 0, to: bytes.count - 3, by: 4).map { Double(Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)) }
}

/// A 440 Hz tone, stereo S16LE at 44.1 kHz.
public func tone(seconds: Double) -> [UInt8] {
    (0..<Int(44_100 * seconds)).flatMap { frame -> [UInt8] in
        let value = Int16(sin(Double(frame) * 2 * .pi * 440 / 44_100) * 12_000)
        return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }
}

/// The best normalised correlation of a window of `received` (from where it is loud) with a
/// 440 Hz sine at any phase.
public func correlationWithTone(_ received: [Double]) -> Double {
    guard let start = received.firstIndex(where: { abs($0) > 50 }) else { return 0 }
    let window = Array(received.dropFirst(start + 2_000).prefix(20_000))
    guard window.count == 20_000 else { return 0 }
    var best = 0.0
    for lag in 0..<101 {
        var dot = 0.0, aa = 0.0, bb = 0.0
        for (index, value) in window.enumerated() {
            let reference = sin(Double(index + lag) * 2 * .pi * 440 / 44_100)
            dot += reference * value
            aa += reference * reference
            bb += value * value
        }
        if aa > 0, bb > 0 { best = max(best, dot / (aa * bb).squareRoot()) }
    }
    return best
}

/// `pcm` (stereo S16LE at 44.1 kHz) as the bytes of a WAV file.
public func wavBytes(stereoPCM pcm: [UInt8]) -> [UInt8] {
    func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    let format: [UInt8] = [1, 0, 2, 0] + le32(44_100) + le32(44_100 * 4) + [4, 0, 16, 0]
    let body = Array("WAVEfmt ".utf8) + le32(16) + format + Array("data".utf8) + le32(pcm.count) + pcm
    return Array("RIFF".utf8) + le32(body.count) + body
}
