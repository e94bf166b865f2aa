/// One direction pair of an encrypted HAP channel (AirPlay 2's RTSP after pairing): each
/// frame is a 2-byte little-endian length (at most 1024), that many bytes of ChaCha20-Poly1305
/// ciphertext with the length as additional data, and the 16-byte tag; the nonce is a
/// 64-bit little-endian frame counter per direction, after four zero bytes.
///
/// ``seal(_:)`` frames what we send; ``open(_:)`` takes bytes as they arrive and returns the
/// plaintext of the whole frames among them, keeping a partial frame for the next call.
/// A forged, replayed or reordered frame fails its tag: the channel is then unusable.
public struct HAPChannel: Sendable {
    public static let maximumFrame = 1024

    private let writeKey: [UInt8]
    private let readKey: [UInt8]
    private var writeCounter: UInt64 = 0
    private var readCounter: UInt64 = 0
    private var pending: [UInt8] = []
    private var failed = false

    public init(writeKey: [UInt8], readKey: [UInt8]) {
        self.writeKey = writeKey
        self.readKey = readKey
    }

    /// The channel AirPlay 2 keys from a pairing's shared secret (pair-verify's X25519 secret,
    /// or transient pair-setup's SRP session key): HKDF-SHA-512 with "Control-Salt".
    public static func control(sharedSecret: [UInt8]) throws(HAPError) -> HAPChannel {
        let salt = Array("Control-Salt".utf8)
        return HAPChannel(
            writeKey: try HAPCrypto.hkdfSHA512(secret: sharedSecret, salt: salt, info: Array("Control-Write-Encryption-Key".utf8)),
            readKey: try HAPCrypto.hkdfSHA512(secret: sharedSecret, salt: salt, info: Array("Control-Read-Encryption-Key".utf8)))
    }

    /// The event channel's keys from the same secret ("Events-Salt"). The receiver connects
    /// nothing: we connect to its event port, yet it writes as the control channel's sender
    /// would — so we read with "Events-Write" and write with "Events-Read", as OwnTone does.
    public static func events(sharedSecret: [UInt8]) throws(HAPError) -> HAPChannel {
        let salt = Array("Events-Salt".utf8)
        return HAPChannel(
            writeKey: try HAPCrypto.hkdfSHA512(secret: sharedSecret, salt: salt, info: Array("Events-Read-Encryption-Key".utf8)),
            readKey: try HAPCrypto.hkdfSHA512(secret: sharedSecret, salt: salt, info: Array("Events-Write-Encryption-Key".utf8)))
    }

    public mutating func seal(_ plaintext: [UInt8]) throws(HAPError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(plaintext.count + (plaintext.count / Self.maximumFrame + 1) * 18)
        var offset = 0
        repeat {
            let count = min(Self.maximumFrame, plaintext.count - offset)
            let length: [UInt8] = [UInt8(count & 0xFF), UInt8(count >> 8)]
            out += length
            out += try HAPCrypto.seal(Array(plaintext[offset..<(offset + count)]), key: writeKey, nonce: Self.nonce(writeCounter), aad: length)
            writeCounter &+= 1
            offset += count
        } while offset < plaintext.count
        return out
    }

    /// The plaintext of every whole frame in what came so far.
    public mutating func open(_ bytes: [UInt8]) throws(HAPError) -> [UInt8] {
        guard !failed else { throw HAPError(.authenticationFailed, "the channel failed before") }
        pending += bytes
        var out: [UInt8] = []
        var consumed = 0
        while pending.count - consumed >= 2 {
            let length = Int(pending[consumed]) | Int(pending[consumed + 1]) << 8
            guard length <= Self.maximumFrame else {
                failed = true
                throw HAPError(.malformed, "an encrypted frame of \(length) bytes (at most \(Self.maximumFrame))")
            }
            guard pending.count - consumed >= 2 + length + 16 else { break }
            let aad = Array(pending[consumed..<(consumed + 2)])
            let sealed = Array(pending[(consumed + 2)..<(consumed + 2 + length + 16)])
            do {
                out += try HAPCrypto.open(sealed, key: readKey, nonce: Self.nonce(readCounter), aad: aad)
            } catch {
                failed = true
                throw error
            }
            readCounter &+= 1
            consumed += 2 + length + 16
        }
        pending.removeFirst(consumed)
        return out
    }

    /// Bytes of a partial frame waiting for the rest.
    public var pendingCount: Int { pending.count }

    static func nonce(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt64($0))) }
    }
}
