import MediaRouteTesting
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// PipeWire with no sound card: a private `XDG_RUNTIME_DIR`, a session bus of its own,
/// `pipewire` (its dummy driver clocks the graph) and `wireplumber` (which links streams
/// to targets). Everything stops when the value goes.
public final class HeadlessPipeWire: Sendable {
    public let runtimeDirectory: String
    private let bus: ChildProcess
    /// pipewire and wireplumber, while they run.
    private let servers = Locked<[ChildProcess]>([])

    /// Whether pipewire, wireplumber and pw-play are installed (prints why not when they are not).
    public static var available: Bool {
        let missing = ["/usr/bin/pipewire", "/usr/bin/wireplumber", "/usr/bin/pw-play", "/usr/bin/pw-cli"].filter { !FileManager.default.isExecutableFile(atPath: $0) }
        if !missing.isEmpty { print("skipping: \(missing.joined(separator: ", ")) missing (apt-get install pipewire wireplumber pipewire-bin)") }
        return missing.isEmpty && PrivateBus.isAvailable
    }

    /// Whether GStreamer's PipeWire elements, y4mdec and videotestsrc are installed, to send video
    /// into this PipeWire (prints why not when they are not).
    public static var videoAvailable: Bool {
        let plugins = "/usr/lib/\(multiarchTriplet)/gstreamer-1.0/"
        let missing = ["/usr/bin/gst-launch-1.0", plugins + "libgstpipewire.so", plugins + "libgsty4mdec.so", plugins + "libgstvideotestsrc.so"]
            .filter { !FileManager.default.fileExists(atPath: $0) }
        if !missing.isEmpty {
            print("skipping: \(missing.joined(separator: ", ")) missing (apt-get install gstreamer1.0-tools gstreamer1.0-pipewire gstreamer1.0-plugins-bad gstreamer1.0-plugins-base)")
        }
        return available && missing.isEmpty
    }

    static var multiarchTriplet: String {
        #if arch(arm64)
        "aarch64-linux-gnu"
        #else
        "x86_64-linux-gnu"
        #endif
    }

    /// Runs `gst-launch-1.0 -q` with `elements` (its pipeline, one word per argument) as a client of this PipeWire.
    public func gstreamer(_ elements: [String]) throws -> ChildProcess {
        try ChildProcess(["/usr/bin/gst-launch-1.0", "-q"] + elements, environment: environment)
    }

    /// The environment a client of this PipeWire needs.
    public var environment: [String: String] {
        ["XDG_RUNTIME_DIR": runtimeDirectory, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtimeDirectory)/bus", "PIPEWIRE_LOG_LEVEL": "0"]
    }

    public init() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-pw-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        runtimeDirectory = directory
        let environment = ["XDG_RUNTIME_DIR": directory, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory)/bus"]
        let bus = try ChildProcess(["/usr/bin/dbus-daemon", "--session", "--address=unix:path=\(directory)/bus", "--nofork", "--nopidfile"], environment: environment)
        do {
            try await Self.waitFor(directory + "/bus")
        } catch {
            bus.kill()
            bus.wait()
            throw error
        }
        self.bus = bus
        try await startServers()
    }

    private static func waitFor(_ path: String, toExist: Bool = true) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while FileManager.default.fileExists(atPath: path) != toExist {
            guard ContinuousClock.now < deadline else { throw PrivateBusError(message: "\(path) did not \(toExist ? "appear" : "go")") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts pipewire and wireplumber (again).
    public func startServers() async throws {
        let environment = ["XDG_RUNTIME_DIR": runtimeDirectory, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtimeDirectory)/bus"]
        var started: [ChildProcess] = []
        do {
            started.append(try ChildProcess(["/usr/bin/pipewire"], environment: environment))
            try await Self.waitFor(runtimeDirectory + "/pipewire-0")
            started.append(try ChildProcess(["/usr/bin/wireplumber"], environment: environment))
        } catch {
            for process in started.reversed() { process.kill(); process.wait() }
            throw error
        }
        servers.withLock { $0 = started }
    }

    /// Stops wireplumber and pipewire, as a restart of the box's audio does first.
    public func stopServers() async throws {
        let running = servers.withLock { servers in
            defer { servers = [] }
            return servers
        }
        for process in running.reversed() {
            process.kill()
            process.wait()
        }
        try await Self.waitFor(runtimeDirectory + "/pipewire-0", toExist: false)
    }

    /// `pw-cli ls Node` now.
    public func nodes() async -> String {
        (try? await ChildProcess.runOffPool(["/usr/bin/pw-cli", "ls", "Node"], environment: environment).output) ?? ""
    }

    /// The latency (ns) each input port of the node named `node` publishes toward its players
    /// (its `Latency` param of the input direction), from `pw-dump`.
    public func inputPortLatencies(node: String) async -> [UInt64] {
        guard let output = try? await ChildProcess.runOffPool(["/usr/bin/pw-dump"], environment: environment).output,
            let objects = try? JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]]
        else { return [] }
        func info(_ object: [String: Any]) -> [String: Any] { object["info"] as? [String: Any] ?? [:] }
        func props(_ object: [String: Any]) -> [String: Any] { info(object)["props"] as? [String: Any] ?? [:] }
        let ids = Set(objects.filter { props($0)["node.name"] as? String == node && ($0["type"] as? String)?.hasSuffix("Node") == true }.compactMap { $0["id"] as? Int })
        return objects.compactMap { object -> UInt64? in
            guard (object["type"] as? String)?.hasSuffix("Port") == true, let owner = props(object)["node.id"] as? Int, ids.contains(owner), info(object)["direction"] as? String == "input",
                let latencies = (info(object)["params"] as? [String: Any])?["Latency"] as? [[String: Any]],
                let input = latencies.first(where: { $0["direction"] as? String == "Input" }), let nanoseconds = input["minNs"] as? Int
            else { return nil }
            return UInt64(nanoseconds)
        }
    }

    /// Plays a file with `pw-play --target NODE`; returns its exit status.
    public func play(_ file: String, target: String) async throws -> Int32 {
        try await ChildProcess.runOffPool(["/usr/bin/pw-play", "--target", target, file], environment: environment).status
    }

    deinit {
        for process in servers.value.reversed() + [bus] {
            process.kill()
            process.wait()
        }
        try? FileManager.default.removeItem(atPath: runtimeDirectory)
    }
}

/// A stereo S16 WAV file of `frames` frames of `samples(frame)` in a new temporary directory.
public func writeWAV(rate: Int, frames: Int, _ samples: (Int) -> Int16) throws -> String {
    func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
    var pcm: [UInt8] = []
    pcm.reserveCapacity(frames * 4)
    for frame in 0..<frames {
        let value = UInt16(bitPattern: samples(frame))
        pcm += [UInt8(value & 0xFF), UInt8(value >> 8), UInt8(value & 0xFF), UInt8(value >> 8)]
    }
    let fmt: [UInt8] = [1, 0, 2, 0] + le32(rate) + le32(rate * 4) + [4, 0, 16, 0]
    let body = Array("WAVEfmt ".utf8) + le32(16) + fmt + Array("data".utf8) + le32(pcm.count) + pcm
    let directory = URL(fileURLWithPath: TestScratch.path("wav"))
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let path = directory.appendingPathComponent("tone.wav").path
    try Data(Array("RIFF".utf8) + le32(body.count) + body).write(to: URL(fileURLWithPath: path))
    return path
}
