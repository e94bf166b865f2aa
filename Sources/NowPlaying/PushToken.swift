#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A secret that authorizes push events: 32 random bytes, shown as 64 hex digits.
public struct PushToken: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// A new random token (from the kernel's CSPRNG through `SystemRandomNumberGenerator`).
    public static func random() -> PushToken {
        var generator = SystemRandomNumberGenerator()
        return PushToken(bytes: (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses 64 hex digits (either case).
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < digits.count {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    public var hex: String {
        let alphabet = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(alphabet[Int(byte >> 4)])
            text.append(alphabet[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Hides the secret in logs.
    public var description: String { "PushToken(…\(hex.suffix(4)))" }

    /// Compares in time that depends only on the length, not on where the bytes differ.
    public func matches(_ presented: [UInt8]) -> Bool {
        guard presented.count == bytes.count else { return false }
        var difference: UInt8 = 0
        for index in bytes.indices { difference |= bytes[index] ^ presented[index] }
        return difference == 0
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
