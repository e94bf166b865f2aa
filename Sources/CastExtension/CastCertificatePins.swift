#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CLibMD
import Synchronization

/// The certificate each Cast receiver presented the first time it was used, kept in the
/// state directory: trust on first use.
///
/// Google's device certificates chain to a root that can only be checked online (and a
/// sender's check of them is Google's own); a box cannot. What it can know is that the
/// device it talks to today is the one it talked to yesterday: a changed certificate is
/// refused until the person confirms the new one through the pairing flow.
public final class CastCertificatePins: Sendable {
    /// What a presented certificate means for a device.
    public enum Verdict: Sendable, Equatable {
        /// No certificate was pinned for it yet.
        case firstUse
        case matches
        /// Another certificate was pinned: refuse until the person confirms this one.
        case changed(pinned: String)
    }

    /// The file (nil: kept in memory only, for the CLI and tests without a state directory).
    public let path: String?
    private let pins: Mutex<[String: String]>
    /// A pins file larger than this is not ours: it is ignored (and rewritten on the next pin).
    static let maximumFileSize = 1 << 20

    public init(path: String?) {
        self.path = path
        var loaded: [String: String] = [:]
        if let path, let data = FileManager.default.contents(atPath: path), data.count <= Self.maximumFileSize,
            let decoded = try? JSONDecoder().decode([String: String].self, from: data)
        {
            loaded = decoded
        }
        pins = Mutex(loaded)
    }

    /// The SHA-256 of a certificate's DER, as lower-case hex.
    public static func fingerprint(_ certificate: [UInt8]) -> String {
        var context = SHA2_CTX()
        SHA256Init(&context)
        certificate.withUnsafeBufferPointer { SHA256Update(&context, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: 32)
        digest.withUnsafeMutableBufferPointer { SHA256Final($0.baseAddress!, &context) }
        let hex: [Character] = Array("0123456789abcdef")
        return String(digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0x0F)]] })
    }

    /// How `fingerprint` compares with what was pinned for `deviceID`.
    public func verdict(for deviceID: String, fingerprint: String) -> Verdict {
        guard let pinned = pins.withLock({ $0[deviceID] }) else { return .firstUse }
        return pinned == fingerprint ? .matches : .changed(pinned: pinned)
    }

    /// Pins `fingerprint` for `deviceID` (first use, or the person confirmed a new one) and
    /// writes the file (a new file renamed over the old, so a crash leaves one or the other).
    public func pin(_ fingerprint: String, for deviceID: String) {
        let snapshot = pins.withLock { pins -> [String: String] in
            pins[deviceID] = fingerprint
            return pins
        }
        guard let path else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let data = try? encoder.encode(snapshot) else { return }
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else { return }
        _ = temporary.withCString { from in path.withCString { to in rename(from, to) } }
    }

    /// The short form people compare: the first 16 hex digits in groups of four.
    public static func shortForm(_ fingerprint: String) -> String {
        var groups: [String] = []
        var rest = Substring(fingerprint.prefix(16))
        while !rest.isEmpty {
            groups.append(String(rest.prefix(4)))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: " ")
    }
}

#if canImport(Glibc)
import Glibc
#endif
