public import MediaRouteTesting
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The Cast receiver written for the tests (Tests/Peers/cast_receiver.py): TLS with a
/// certificate made here by openssl, the Cast channel's framing and namespaces, faults on
/// command. On loopback, or in a room of a ``NamespaceLab`` announced over mDNS.
public final class CastReceiverPeer: Sendable {
    public let address: String
    public let port: Int
    public let controlPort: Int
    public let logPath: String
    public let directory: String
    public let process: ChildProcess
    /// The receiver's `id` (32 hex digits).
    public let id: String
    public let name: String

    /// Whether Debian's python3 with zeroconf and openssl are here (prints why not).
    public static var available: Bool {
        for path in ["/usr/bin/python3", "/usr/bin/openssl"] where !FileManager.default.isExecutableFile(atPath: path) {
            print("skipping: \(path) is missing (apt-get install python3 openssl python3-zeroconf)")
            return false
        }
        guard (try? ChildProcess.run(["/usr/bin/python3", "-c", "import zeroconf"]))?.status == 0 else {
            print("skipping: Debian's python3 has no zeroconf (apt-get install python3-zeroconf)")
            return false
        }
        return true
    }

    /// The peer's script in the source tree.
    public static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Peers/cast_receiver.py").path
    }

    /// A self-signed certificate and its key (EC P-256), as a receiver's own.
    public static func makeCertificate(in directory: String, name: String) throws -> (certificate: String, key: String) {
        let certificate = directory + "/\(name).pem"
        let key = directory + "/\(name).key"
        let (status, output) = try ChildProcess.run([
            "/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
            certificate, "-days", "2", "-subj", "/CN=\(name)",
        ])
        guard status == 0 else { throw PrivateBusError(message: "openssl: \(output)") }
        return (certificate, key)
    }

    /// Starts a receiver on loopback (no mDNS), or in `room` of `lab`, announced there.
    /// `port` nil: 8009 in a room, as every Cast device listens (pychromecast also tries a host
    /// it found on 8009, whatever port mDNS named: the mkchromecast anchor hung retrying that
    /// in the runs it picked that service first), any free port on loopback.
    public init(
        lab: NamespaceLab? = nil, room: NamespaceLab.Room? = nil, name: String = "Living Room TV", model: String = "Chromecast", capabilities: Int = 4101,
        id: String = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased(), port: Int? = nil
    ) throws {
        self.id = id
        self.name = name
        directory = NSTemporaryDirectory() + "mr-cast-\(id.prefix(8))"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (certificate, key) = try Self.makeCertificate(in: directory, name: "receiver")
        address = room?.deviceAddress ?? "127.0.0.1"
        let arguments = [
            "/usr/bin/python3", "-u", Self.script, "--address", address, "--port", String(port ?? (room == nil ? 0 : 8009)), "--cert", certificate, "--key", key, "--name", name,
            "--id", id, "--model", model, "--ca", String(capabilities), "--record", directory,
        ]
        logPath = directory + "/events.log"
        process = try startPeer(arguments, logPath: logPath, lab: lab, room: room)
        var listening: [String: Any]?
        for _ in 0..<500 {
            if let line = Self.lines(logPath).first(where: { ($0["event"] as? String) == "listening" }) {
                listening = line
                break
            }
            usleep(10_000)
        }
        guard let listening, let port = listening["port"] as? Int, let control = listening["control"] as? Int else {
            process.kill(SIGKILL)
            throw PrivateBusError(message: "the Cast receiver did not start: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
        }
        self.port = port
        self.controlPort = control
    }

    /// A live stream the receiver decoded (stereo S16LE at 44.1 kHz), with the time of each read.
    public var liveOutput: TimedOutput { TimedOutput(pcmPath: directory + "/live.pcm", timesPath: directory + "/live-times.txt") }

    deinit {
        process.kill(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func lines(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Every event the receiver printed so far (`received` with namespace and payload, `connected`, …).
    public var events: [[String: Any]] { Self.lines(logPath) }

    /// The payloads received in `namespace` whose JSON `type` is `type`.
    public func received(_ namespace: String, type: String) -> [[String: Any]] {
        events.compactMap { event in
            guard (event["event"] as? String) == "received", (event["namespace"] as? String) == namespace, let payload = event["payload"] as? String,
                let json = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any], (json["type"] as? String) == type
            else { return nil }
            return json
        }
    }

    /// Texts received in `namespace` (for an app's own namespace, whatever they are).
    public func texts(in namespace: String) -> [String] {
        events.compactMap { event in
            guard (event["event"] as? String) == "received", (event["namespace"] as? String) == namespace else { return nil }
            return event["payload"] as? String
        }
    }

    /// Sends one control command; returns the receiver's answer line.
    @discardableResult
    public func command(_ line: String) async throws -> String {
        let host = address
        let port = controlPort
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try Self.blockingCommand(host: host, port: port, line) })
            }.start()
        }
    }

    /// The receiver's state (`state` command) as JSON.
    public func state() async throws -> [String: Any] {
        let answer = try await command("state")
        guard answer.hasPrefix("ok "), let json = (try JSONSerialization.jsonObject(with: Data(answer.dropFirst(3).utf8))) as? [String: Any] else {
            throw PrivateBusError(message: "state: \(answer)")
        }
        return json
    }

    private static func blockingCommand(host: String, port: Int, _ line: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PrivateBusError(message: "socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw PrivateBusError(message: "control connect: \(errno)") }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !received.contains(10) {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: received.prefix { $0 != 10 }, as: UTF8.self)
    }
}
