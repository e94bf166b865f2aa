import CLibMD

/// MD5 (RFC 1321) from libmd: only for the digest authentication receivers ask for, never
/// for anything that must resist an attacker's choice of input.
public enum MD5 {
    /// The 16-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var context = MD5_CTX()
        MD5Init(&context)
        bytes.withUnsafeBufferPointer { MD5Update(&context, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: 16)
        digest.withUnsafeMutableBufferPointer { MD5Final($0.baseAddress, &context) }
        return digest
    }

    /// The digest of `bytes` in lower-case hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest(bytes) { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: text, as: UTF8.self)
    }
}
