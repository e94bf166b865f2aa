public import MediaRouteTesting
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Network namespaces for LAN tests: one per "room", each joined to this
/// process's namespace by a veth pair. The host side gets `SUBNET.1/24`, the
/// room `SUBNET.2/24`, a multicast route and `lo`. Nothing leaves the machine:
/// discovery in tests is limited to the host-side interfaces.
public final class NamespaceLab: Sendable {
    public struct Room: Sendable {
        public let namespace: String
        /// The interface in this process's namespace.
        public let outside: String
        /// The interface inside the room.
        public let inside: String
        public let hostAddress: String
        public let deviceAddress: String
    }

    public let rooms: [Room]
    private let processes = Locked<[ChildProcess]>([])
    private let directory: String

    /// Whether namespaces can be made here (root, iproute2).
    public static var isAvailable: Bool {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") else {
            print("skipping: network namespaces need root and /usr/sbin/ip (apt-get install iproute2)")
            return false
        }
        return true
    }

    /// Whether gmediarender and rygel are installed (CI installs them).
    public static var renderersAvailable: Bool {
        guard isAvailable else { return false }
        for path in ["/usr/bin/gmediarender", "/usr/bin/rygel"] where !FileManager.default.isExecutableFile(atPath: path) {
            print("skipping: \(path) is missing (apt-get install gmediarender rygel rygel-playbin)")
            return false
        }
        return true
    }

    private static let nextSubnet = Locked(Int.random(in: 0..<200))

    /// `count` /24 subnets of the shared address space 100.64.0.0/10, different for
    /// every lab of this process (labs may run at once; a subnet on two host
    /// interfaces would confuse routing).
    /// Subnets already on a host interface are skipped: a lab that another process left behind
    /// (killed before its deinit) keeps its veth and route, and a new room on the same /24
    /// would send its unicast through the old one — connections refused by an empty
    /// namespace while multicast discovery, bound to the right interface, still worked.
    public static func subnets(_ count: Int) -> [String] {
        let inUse = (try? ChildProcess.run(["/usr/sbin/ip", "-4", "-o", "addr", "show"]))?.output ?? ""
        return nextSubnet.withLock { next in
            var chosen: [String] = []
            var tries = 0
            while chosen.count < count, tries < 250 {
                let subnet = "100.\(64 + next / 250).\(next % 250 + 1)"
                next = (next + 1) % 250
                tries += 1
                if !inUse.contains(" \(subnet).") { chosen.append(subnet) }
            }
            return chosen
        }
    }

    /// Rooms on these /24 subnets (by default one fresh subnet per room).
    public convenience init(rooms: Int = 1) throws {
        try self.init(subnets: Self.subnets(rooms))
    }

    public init(subnets: [String]) throws {
        let suffix = String(UUID().uuidString.prefix(4)).lowercased()
        directory = NSTemporaryDirectory() + "mrlab-\(suffix)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var rooms: [Room] = []
        do {
            for (index, subnet) in subnets.enumerated() {
                let room = Room(
                    namespace: "mrlab\(suffix)\(index)", outside: "mrl\(suffix)\(index)a", inside: "mrl\(suffix)\(index)b",
                    hostAddress: "\(subnet).1", deviceAddress: "\(subnet).2")
                rooms.append(room)
                try Self.ip(["netns", "add", room.namespace])
                try Self.ip(["link", "add", room.outside, "type", "veth", "peer", "name", room.inside])
                try Self.ip(["link", "set", room.inside, "netns", room.namespace])
                try Self.ip(["addr", "add", "\(room.hostAddress)/24", "dev", room.outside])
                try Self.ip(["link", "set", room.outside, "up"])
                try Self.ip(["-n", room.namespace, "addr", "add", "\(room.deviceAddress)/24", "dev", room.inside])
                try Self.ip(["-n", room.namespace, "link", "set", room.inside, "up"])
                try Self.ip(["-n", room.namespace, "link", "set", "lo", "up"])
                try Self.ip(["-n", room.namespace, "route", "add", "224.0.0.0/4", "dev", room.inside])
            }
        } catch {
            Self.remove(rooms)
            throw error
        }
        self.rooms = rooms
        // The veth link needs a moment before multicast flows (IPv6 DAD does not matter for IPv4).
        usleep(100_000)
    }

    deinit {
        for process in processes.value {
            process.kill(SIGKILL)
            process.wait()
        }
        Self.remove(rooms)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func remove(_ rooms: [Room]) {
        for room in rooms {
            _ = try? ChildProcess.run(["/usr/sbin/ip", "link", "del", room.outside])
            _ = try? ChildProcess.run(["/usr/sbin/ip", "netns", "del", room.namespace])
        }
    }

    public static func ip(_ arguments: [String]) throws {
        let (status, output) = try ChildProcess.run(["/usr/sbin/ip"] + arguments)
        guard status == 0 else { throw PrivateBusError(message: "ip \(arguments.joined(separator: " ")): \(output)") }
    }

    /// Starts `arguments` inside the room; killed with the lab unless stopped earlier.
    /// - Parameter asAnotherDevice: a peer that stands for a device of its own (a renderer, a
    ///   receiver, with what records its output) runs at nice −10: on a real network it has
    ///   its own CPU, so the load a test puts on the box's cores ("both cores busy") must not
    ///   delay it — a renderer whose pipeline starts late keeps that offset for the whole stream.
    @discardableResult
    public func start(
        in room: Room, _ arguments: [String], log: String? = nil, environment: [String: String] = [:], asAnotherDevice: Bool = false
    ) throws -> ChildProcess {
        let arguments = asAnotherDevice ? ["/usr/bin/nice", "-n", "-10"] + arguments : arguments
        var fd: Int32? = nil
        if let log { fd = open(directory + "/" + log, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        defer { if let fd { close(fd) } }
        // A group of its own: the lab's kill also ends what a shell started in the background.
        let process = try ChildProcess(["/usr/sbin/ip", "netns", "exec", room.namespace] + arguments, outputFD: fd, environment: environment,
                                       ownProcessGroup: true)
        processes.withLock { $0.append(process) }
        return process
    }

    /// A path in the lab's own directory (removed with the lab).
    public func path(_ name: String) -> String { directory + "/" + name }

    /// A log written by ``start(in:_:log:environment:)``.
    public func log(_ name: String) -> String { (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? "" }

    /// gmediarender playing in real time into fake sinks, once it says it is ready
    /// (commands sent while GStreamer is still starting can crash gmediarender 0.1).
    /// With `recording`, what it plays is written there as stereo S16LE at 44.1 kHz by a sink
    /// that syncs to the pipeline's clock (so each write is when the sample plays), through a
    /// FIFO to the timing recorder (``TimedOutput/writeRecorder(in:)``).
    @discardableResult
    /// With `video`, the pictures it shows are recorded there (``VideoOutput``) the same way.
    public func gmediarender(
        in room: Room, name: String, uuid: String, port: Int = 49494, recording: TimedOutput? = nil, video: VideoOutput? = nil
    ) throws -> ChildProcess {
        let log = "gmediarender-\(room.inside).log"
        var audio = "--gstout-audiopipe=fakesink sync=true"
        var prefix = ""
        if let recording {
            let fifo = directory + "/gmediarender-\(room.inside).fifo"
            let recorder = try TimedOutput.writeRecorder(in: directory)
            audio = "--gstout-audiopipe=audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=44100,channels=2 ! filesink location=\(fifo) sync=true buffer-mode=unbuffered"
            // The recorder waits on the FIFO until the sink opens it (when the first stream plays),
            // and again each time the renderer stops and plays (the sink closes and opens it).
            prefix = "rm -f \(fifo) && mkfifo \(fifo) && (\(recorder) \(recording.pcmPath) \(recording.timesPath) \(fifo) &) && "
        }
        var videoSink = "--gstout-videosink=fakesink"
        if let video {
            let fifo = directory + "/gmediarender-\(room.inside)-video.fifo"
            let recorder = try TimedOutput.writeRecorder(in: directory)
            videoSink = "--gstout-videopipe=" + video.sink(into: fifo)
            prefix += "rm -f \(fifo) && mkfifo \(fifo) && (\(recorder) \(video.framesPath) \(video.timesPath) \(fifo) &) && "
        }
        let command = ["/usr/bin/gmediarender", "-I", room.inside, "-p", String(port), "-f", name, "-u", uuid, audio, videoSink]
        let process = try start(in: room, ["/bin/sh", "-c", prefix + "exec " + command.map { "'\($0)'" }.joined(separator: " ")], log: log, asAnotherDevice: true)
        for _ in 0..<500 where !self.log(log).contains("Ready for rendering") && process.isRunning {
            usleep(10_000)
        }
        return process
    }

    /// rygel with only its Playbin renderer, on the room's interface. With `recording`, what it
    /// plays is written there (stereo S16LE at 44.1 kHz) by a sink synced to its pipeline clock.
    @discardableResult
    public func rygel(in room: Room, title: String, recording: String? = nil) throws -> ChildProcess {
        let home = directory + "/rygel-\(room.inside)"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        var config = """
            [general]
            interface=\(room.inside)
            port=49500
            media-engine=librygel-media-engine-gst.so
            enable-transcoding=false
            upnp-enabled=true
            [Playbin]
            enabled=true
            title=\(title)
            audio-sink=\(recording.map { "audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=44100,channels=2 ! filesink location=\($0) sync=true" } ?? "fakesink sync=true")
            video-sink=fakesink sync=true

            """
        for plugin in ["Tracker3", "Tracker", "LMS", "MediaExport", "GstLaunch", "MPRIS", "External", "Ruih"] {
            config += "[\(plugin)]\nenabled=false\n"
        }
        try config.write(toFile: home + "/rygel.conf", atomically: true, encoding: .utf8)
        return try start(in: room, ["/usr/bin/env", "HOME=\(home)", "XDG_CONFIG_HOME=\(home)", "XDG_CACHE_HOME=\(home)", "/usr/bin/rygel", "-c", home + "/rygel.conf"], log: "rygel-\(room.inside).log")
    }

    /// rygel as a media server with one gst-launch live item (Debian's `rygel-gst-launch`): `title`
    /// served as `mime`, made by the GStreamer pipeline `launch` when a renderer fetches it.
    @discardableResult
    public func rygelGstLaunch(in room: Room, title: String, mime: String, launch: String, port: Int = 49500) throws -> ChildProcess {
        let home = directory + "/rygel-gst-launch-\(room.inside)"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        var config = """
            [general]
            interface=\(room.inside)
            port=\(port)
            media-engine=librygel-media-engine-gst.so
            enable-transcoding=false
            upnp-enabled=true
            [GstLaunch]
            enabled=true
            launch-items=live
            live-title=\(title)
            live-mime=\(mime)
            live-launch=\(launch)

            """
        for plugin in ["Tracker3", "Tracker", "LMS", "MediaExport", "Playbin", "MPRIS", "External", "Ruih"] {
            config += "[\(plugin)]\nenabled=false\n"
        }
        try config.write(toFile: home + "/rygel.conf", atomically: true, encoding: .utf8)
        return try start(
            in: room, ["/usr/bin/env", "HOME=\(home)", "XDG_CONFIG_HOME=\(home)", "XDG_CACHE_HOME=\(home)", "/usr/bin/rygel", "-c", home + "/rygel.conf"],
            log: "rygel-gst-launch-\(room.inside).log")
    }

    /// A WAV file of a quiet tone (16-bit mono, 8 kHz), for renderers to play.
    public func wavFile(seconds: Int, name: String = "tone.wav") throws -> String {
        let rate = 8_000
        let samples = rate * seconds
        var bytes: [UInt8] = []
        func word(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        func half(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        bytes += Array("RIFF".utf8); word(UInt32(36 + samples * 2)); bytes += Array("WAVEfmt ".utf8)
        word(16); half(1); half(1); word(UInt32(rate)); word(UInt32(rate * 2)); half(2); half(16)
        bytes += Array("data".utf8); word(UInt32(samples * 2))
        for index in 0..<samples {
            let value = Int16(1000 * sin(Double(index) * 2 * Double.pi * 440 / Double(rate)))
            half(UInt16(bitPattern: value))
        }
        let path = directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
