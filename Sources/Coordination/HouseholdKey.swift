import CLibMD

/// The secret that boxes of one household share: coordination datagrams carry an
/// HMAC-SHA256 (RFC 2104) of their bytes under it, and a box drops what does not.
public struct HouseholdKey: Sendable, Hashable {
    let bytes: [UInt8]

    /// At least 16 bytes (a key file of random bytes, or a long passphrase).
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 16, bytes.count <= 4096 else { return nil }
        self.bytes = bytes
    }

    public static let tagLength = 32

    /// HMAC-SHA256 of `message`.
    public func tag(_ message: [UInt8]) -> [UInt8] {
        var key = bytes.count > 64 ? Self.sha256(bytes) : bytes
        key += [UInt8](repeating: 0, count: 64 - key.count)
        let inner = Self.sha256(key.map { $0 ^ 0x36 } + message)
        return Self.sha256(key.map { $0 ^ 0x5C } + inner)
    }

    /// `message` followed by its tag.
    public func seal(_ message: [UInt8]) -> [UInt8] { message + tag(message) }

    /// The message of a sealed datagram whose tag is right (compared in constant time); nil otherwise.
    public func open(_ sealed: [UInt8]) -> [UInt8]? {
        guard sealed.count >= Self.tagLength else { return nil }
        let message = Array(sealed.dropLast(Self.tagLength))
        let expected = tag(message)
        var difference: UInt8 = 0
        for (a, b) in zip(expected, sealed.suffix(Self.tagLength)) { difference |= a ^ b }
        return difference == 0 ? message : nil
    }

    /// SHA-256 (FIPS 180-4) of `bytes`, from libmd.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var context = SHA2_CTX()
        SHA256Init(&context)
        bytes.withUnsafeBufferPointer { SHA256Update(&context, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: 32)
        digest.withUnsafeMutableBufferPointer { SHA256Final($0.baseAddress!, &context) }
        return digest
    }
}
