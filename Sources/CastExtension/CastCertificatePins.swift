#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CLibMD
import MediaDevice
import RoutingModel

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
    public var path: String? { file.path }
    private let file: PinFile

    public init(path: String?) {
        // Files written before names were kept hold a fingerprint per device id.
        file = PinFile(path: path, legacy: true)
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
        guard let pinned = file[deviceID]?.value else { return .firstUse }
        return pinned == fingerprint ? .matches : .changed(pinned: pinned)
    }

    /// Pins `fingerprint` for `deviceID` (first use, or the person confirmed a new one) and
    /// writes the file.
    public func pin(_ fingerprint: String, for deviceID: String, name: String) {
        file.pin(fingerprint, for: deviceID, name: name)
    }

    /// Forgets `deviceID`'s certificate: the next connection pins what it presents.
    public func forget(_ deviceID: String) -> Bool {
        file.forget(deviceID)
    }

    /// Every pin: device id → (fingerprint, name when pinned).
    public var all: [String: (fingerprint: String, name: String)] {
        file.all.mapValues { ($0.value, $0.name) }
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
