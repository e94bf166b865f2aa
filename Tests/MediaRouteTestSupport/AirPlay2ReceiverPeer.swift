import Foundation
import MediaRouteTesting
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The AirPlay 2 receiver written for the tests (Tests/Peers/airplay2_receiver.py): HAP pairing
/// from PyPI's srptools and Debian's python3-cryptography, then the encrypted RTSP channel.
public final class AirPlay2ReceiverPeer: Sendable {
    public let port: Int
    public let identifier: String
    public let address: String
    private let process: ChildProcess
    private let logPath: String
    private let stopped = Atomic<Bool>(false)

    /// Where scripts/install-deps.sh puts srptools (PyPI; not packaged in Debian 12).
    public static let pythonPath = ProcessInfo.processInfo.environment["MEDIAROUTE_PEER_PYTHON"] ?? "/usr/local/lib/mediaroute-test-python"

    /// Whether python3-cryptography and srptools are here (prints why not).
    public static func available() -> Bool {
        let check = try? ChildProcess.run(["/usr/bin/env", "PYTHONPATH=\(pythonPath)", "/usr/bin/python3", "-c", "import srptools, cryptography.hazmat.primitives.asymmetric.ed25519"])
        guard check?.status == 0 else {
            print("skipping: the AirPlay 2 test receiver needs Debian's python3-cryptography and PyPI's srptools in \(pythonPath) (scripts/install-deps.sh installs both): \(check?.output ?? "python3 missing")")
            return false
        }
        return true
    }

    /// - Parameters:
    ///   - address: the loopback address it listens at (RTSP, its UDP ports, its PTP follower).
    ///   - ptpPort: with a port, it follows PTP on it (event) and the next (general), as nqptp on 319/320.
    ///   - timing: `ptp` (follows our master), `grandmaster` (insists on leading, with a clock of
    ///     its own, as HomePodOS 27 is reported to), or `ntp` (asks for NTP timing).
    ///   - raop: an AirPlay 1 receiver instead (plain RTSP and ALAC, NTP timing); `authSetup`:
    ///     it refuses ANNOUNCE until `POST /auth-setup`, as AirPort Express 7.8 and Sonos do.
    ///   - verification: with `raop`, an Apple TV's device verification with `pin` (OPTIONS and
    ///     ANNOUNCE refused 403 until `/pair-verify` proved a key `/pair-setup-pin` kept).
    ///   - eventFlood: after its first event-channel request, this many more at once (a flood).
    ///   - answerDelay: how long it takes over each RTSP answer (a slow receiver, or one under load).
    ///   - lab, room: in the room of a ``NamespaceLab`` instead, at its address, announced there as
    ///     `_airplay._tcp` alone (python3-zeroconf) with `name`, following PTP on 319/320 as nqptp
    ///     (on `ptpPort` and the next when one is given).
    public init(
        pin: String? = nil, identifier: String = "4F:8A:22:10:9C:01", address: String = "127.0.0.1", ptpPort: UInt16? = nil,
        lab: NamespaceLab? = nil, room: NamespaceLab.Room? = nil, name: String = "Test AirPlay 2", timing: String = "ptp",
        raop: Bool = false, authSetup: Bool = false, verification: Bool = false, answerDelay: Duration = .zero, eventFlood: Int = 0
    ) throws {
        self.identifier = identifier
        let address = room?.deviceAddress ?? address
        let ptpPort = room != nil ? ptpPort ?? 319 : ptpPort
        self.address = address
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Peers/airplay2_receiver.py").path
        logPath = NSTemporaryDirectory() + "mr-airplay2-\(UUID().uuidString.prefix(8)).log"
        var arguments = ["/usr/bin/env", "PYTHONPATH=\(Self.pythonPath)", "/usr/bin/python3", "-u", script, "--identifier", identifier]
        if let pin { arguments += ["--pin", pin] }
        arguments += ["--address", address]
        if let ptpPort { arguments += ["--ptp-port", String(ptpPort)] }
        arguments += ["--name", name, "--timing", timing]
        if raop { arguments.append("--raop") }
        if authSetup { arguments.append("--auth-setup") }
        if verification { arguments.append("--verification") }
        if eventFlood > 0 { arguments += ["--event-flood", String(eventFlood)] }
        if answerDelay > .zero { arguments += ["--answer-delay", String(Double(answerDelay.components.attoseconds) / 1e15 + Double(answerDelay.components.seconds) * 1000)] }
        process = try startPeer(arguments, logPath: logPath, lab: lab, room: room)
        var found: Int?
        for _ in 0..<500 {
            if let line = Self.lines(logPath).first(where: { $0["listening"] != nil }), let port = line["listening"] as? Int {
                found = port
                break
            }
            usleep(10_000)
        }
        guard let found else {
            process.kill(SIGKILL)
            process.wait()
            throw PrivateBusError(message: "the AirPlay 2 test receiver did not start: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
        }
        port = found
    }

    /// Kills the receiver and reaps it (once). Tests call it when they end: a process that exits
    /// first would leave the receiver running if the peer outlived the test.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        process.kill(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(atPath: logPath)
    }

    deinit { stop() }

    /// The first line with `key`, if printed yet.
    public func event(_ key: String) -> [String: Any]? { events.first { $0[key] != nil } }

    /// What the receiver decoded of the last stream it recorded (after TEARDOWN): interleaved
    /// stereo S16LE bytes, each packet's RTP time with its intended play time (CLOCK_MONOTONIC ns,
    /// nil before the receiver had a sync packet and the master's time) and its arrival, and the line itself.
    public func recording() -> (pcm: [UInt8], times: [(rtp: UInt32, playTime: Int64?, arrival: Int64)], line: [String: Any])? {
        guard let line = events.last(where: { $0["recording"] != nil }), let path = line["recording"] as? String,
            let data = FileManager.default.contents(atPath: path)
        else { return nil }
        let pcm = [UInt8](data)
        var times: [(UInt32, Int64?, Int64)] = []
        if let timesPath = line["times"] as? String, let json = FileManager.default.contents(atPath: timesPath),
            let list = (try? JSONSerialization.jsonObject(with: json)) as? [[Any]]
        {
            times = list.map { item in
                ((item.first as? NSNumber)?.uint32Value ?? 0, item.count > 1 ? (item[1] as? NSNumber)?.int64Value : nil, item.count > 2 ? (item[2] as? NSNumber)?.int64Value ?? 0 : 0)
            }
        }
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        return (pcm, times, line)
    }

    /// Restarts its PTP follower, as nqptp restarted: closed, its offset forgotten, open again a second later.
    public func restartPTP() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PrivateBusError(message: "no socket") }
        defer { close(fd) }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, address, &target.sin_addr)
        let connected = withUnsafePointer(to: &target) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw PrivateBusError(message: "cannot reach the receiver (errno \(errno))") }
        let request = Array("POST /test/restart-ptp RTSP/1.0\r\nCSeq: 1\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { throw PrivateBusError(message: "request not sent") }
        var answer = [UInt8](repeating: 0, count: 256)
        guard recv(fd, &answer, answer.count, 0) > 0, String(decoding: answer, as: UTF8.self).hasPrefix("RTSP/1.0 200") else {
            throw PrivateBusError(message: "the receiver did not restart its PTP follower")
        }
    }

    /// When each frame of its last recording (``recording()``) is meant to play (CLOCK_MONOTONIC
    /// seconds): its packet's intended play time and the frame's place in the packet.
    public static func playClock(_ times: [(rtp: UInt32, playTime: Int64?, arrival: Int64)]) -> @Sendable (Int) -> Double? {
        let starts = times.map { $0.playTime.map { Double($0) / 1e9 } }
        return { frame in
            let packet = frame / 352
            guard packet >= 0, packet < starts.count, let start = starts[packet] else { return nil }
            return start + Double(frame % 352) / 44_100
        }
    }

    /// Every line the receiver printed so far (requests, pairings, refusals).
    public var events: [[String: Any]] { Self.lines(logPath) }

    private static func lines(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
}
