#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HAP
import Logging
import Synchronization

/// AirPlay pairing keys: our long-term identity (made on the first PIN pairing) and the
/// identity of each AirPlay 2 receiver paired with a PIN, by device id; and the AirPlay 1
/// receivers (Apple TVs) that took our identity in device verification. With a directory, each
/// is a file of its own there, written 0600 (`controller.json`, `receiver-<device id>.json`,
/// `verified-<device id>.json`): a secret key is never in a file others can read, and
/// forgetting one receiver removes its file.
final class AirPlayPairings: Sendable {
    private struct ControllerFile: Codable {
        var identifier: String
        var secretKey: [UInt8]
        var publicKey: [UInt8]
    }

    private struct ReceiverFile: Codable {
        var deviceID: String
        var receiver: ReceiverIdentity
    }

    /// An Apple TV that keeps our public key from device verification (nothing of its own to keep).
    private struct VerifiedFile: Codable {
        var deviceID: String
    }

    /// Receivers kept at most: a LAN full of receivers cannot grow the directory without bound.
    static let maximumReceivers = 64

    private let directory: String?
    private let logger: Logger
    private let state = Mutex<(controller: ControllerIdentity?, receivers: [String: ReceiverIdentity], verified: Set<String>, loaded: Bool)>((nil, [:], [], false))

    init(directory: String?, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    /// The keys kept for `deviceID`: ours and the receiver's.
    func pairing(for deviceID: String) -> (controller: ControllerIdentity, receiver: ReceiverIdentity)? {
        load()
        return state.withLock { state in
            guard let controller = state.controller, let receiver = state.receivers[deviceID] else { return nil }
            return (controller, receiver)
        }
    }

    /// Our long-term identity, made (and written) the first time.
    func controller() throws(HAPError) -> ControllerIdentity {
        load()
        if let existing = state.withLock({ $0.controller }) { return existing }
        let made = try ControllerIdentity.generate()
        let kept = state.withLock { state -> ControllerIdentity in
            if let existing = state.controller { return existing }
            state.controller = made
            return made
        }
        if kept == made {
            write(ControllerFile(identifier: made.identifier, secretKey: made.secretKey, publicKey: made.publicKey), to: "controller.json")
        }
        return kept
    }

    /// Whether the AirPlay 1 receiver `deviceID` took our key in device verification.
    func isVerified(_ deviceID: String) -> Bool {
        load()
        return state.withLock { $0.verified.contains(deviceID) }
    }

    /// The AirPlay 1 receiver `deviceID` took our key: the next connections verify with it.
    func keepVerification(for deviceID: String) {
        guard let name = Self.fileName(for: deviceID, prefix: "verified-") else { return }
        load()
        let accepted = state.withLock { state -> Bool in
            guard state.verified.contains(deviceID) || state.verified.count < Self.maximumReceivers else { return false }
            state.verified.insert(deviceID)
            return true
        }
        if accepted { write(VerifiedFile(deviceID: deviceID), to: name) } else { logger.warning("AirPlay device verification not kept: too many receivers verified", metadata: ["device": "\(deviceID)"]) }
    }

    /// The AirPlay 1 receiver `deviceID` no longer takes our key.
    func forgetVerification(for deviceID: String) {
        state.withLock { _ = $0.verified.remove(deviceID) }
        if let directory, let name = Self.fileName(for: deviceID, prefix: "verified-") { unlink(directory + "/" + name) }
    }

    /// The AirPlay 1 receivers that keep our key.
    var verifiedDevices: [String] {
        load()
        return state.withLock { $0.verified.sorted() }
    }

    func keep(_ receiver: ReceiverIdentity, for deviceID: String) {
        guard let name = Self.fileName(for: deviceID) else { return }
        let accepted = state.withLock { state -> Bool in
            guard state.receivers[deviceID] != nil || state.receivers.count < Self.maximumReceivers else { return false }
            state.receivers[deviceID] = receiver
            return true
        }
        if accepted { write(ReceiverFile(deviceID: deviceID, receiver: receiver), to: name) } else { logger.warning("AirPlay 2 pairing not kept: too many receivers paired", metadata: ["device": "\(deviceID)"]) }
    }

    @discardableResult
    func forget(_ deviceID: String) -> Bool {
        load()
        let removed = state.withLock { state in
            let receiver = state.receivers.removeValue(forKey: deviceID) != nil
            let verified = state.verified.remove(deviceID) != nil
            return receiver || verified
        }
        if let directory {
            for prefix in ["receiver-", "verified-"] {
                if let name = Self.fileName(for: deviceID, prefix: prefix) { unlink(directory + "/" + name) }
            }
        }
        return removed
    }

    /// The device ids paired with a PIN.
    var pairedDevices: [String] {
        load()
        return state.withLock { $0.receivers.keys.sorted() }
    }

    /// A device id as a file name: hardware addresses and mDNS names, nothing that leaves the directory.
    static func fileName(for deviceID: String, prefix: String = "receiver-") -> String? {
        let safe = deviceID.unicodeScalars.map { scalar -> Character in
            scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" ? Character(scalar) : "_"
        }
        guard !safe.isEmpty, safe.count <= 128 else { return nil }
        return prefix + String(safe) + ".json"
    }

    private func load() {
        guard let directory, !state.withLock({ $0.loaded }) else { return }
        let decoder = JSONDecoder()
        var controller: ControllerIdentity?
        var receivers: [String: ReceiverIdentity] = [:]
        if let data = FileManager.default.contents(atPath: directory + "/controller.json"), let file = try? decoder.decode(ControllerFile.self, from: data) {
            controller = ControllerIdentity(identifier: file.identifier, secretKey: file.secretKey, publicKey: file.publicKey)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for file in Self.read(ReceiverFile.self, prefix: "receiver-", from: names, in: directory, deviceID: \.deviceID) { receivers[file.deviceID] = file.receiver }
        let verified = Set(Self.read(VerifiedFile.self, prefix: "verified-", from: names, in: directory, deviceID: \.deviceID).map(\.deviceID))
        state.withLock { state in
            guard !state.loaded else { return }
            state.loaded = true
            state.controller = state.controller ?? controller
            for (id, receiver) in receivers where state.receivers[id] == nil { state.receivers[id] = receiver }
            state.verified.formUnion(verified)
        }
    }

    /// The files `prefix<device id>.json` among `names` that decode as `File` and are named for
    /// the device they hold (a file copied under another device's name is not taken), at most
    /// ``maximumReceivers`` of them, none over 4 KB.
    private static func read<File: Decodable>(
        _ type: File.Type, prefix: String, from names: [String], in directory: String, deviceID: (File) -> String
    ) -> [File] {
        let decoder = JSONDecoder()
        var files: [File] = []
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".json") && files.count < maximumReceivers {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name), data.count <= 4096,
                let file = try? decoder.decode(File.self, from: data), fileName(for: deviceID(file), prefix: prefix) == name
            else { continue }
            files.append(file)
        }
        return files
    }

    private func write(_ value: some Encodable, to name: String) {
        guard let directory, let data = try? JSONEncoder().encode(value) else { return }
        mkdir(directory, 0o700)
        let path = directory + "/" + name
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            logger.warning("AirPlay 2 pairing keys not written", metadata: ["path": "\(path)"])
            return
        }
        _ = temporary.withCString { from in path.withCString { to in rename(from, to) } }
    }
}
