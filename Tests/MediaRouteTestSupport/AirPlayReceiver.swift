import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// shairport-sync 3.3.8 (an AirPlay 1 receiver) in a room of a ``NamespaceLab``: a private
/// system bus and Avahi there (it announces itself over mDNS on the room's link), its
/// `stdout` backend written to a file as it plays, its log beside it.
public final class AirPlayReceiver: Sendable {
    public let name: String
    public let pcmPath: String
    public let logPath: String
    /// What shairport-sync wrote to its metadata pipe (its XML items), as a reader copied it.
    public let metadataPath: String
    public let process: ChildProcess

    /// Whether shairport-sync, avahi-daemon and dbus-daemon are installed (prints why not).
    public static var available: Bool {
        guard NamespaceLab.isAvailable else { return false }
        for path in ["/usr/bin/shairport-sync", "/usr/sbin/avahi-daemon", "/usr/bin/dbus-daemon"] where !FileManager.default.isExecutableFile(atPath: path) {
            print("skipping: \(path) is missing (apt-get install shairport-sync avahi-daemon)")
            return false
        }
        return true
    }

    public init(in lab: NamespaceLab, room: NamespaceLab.Room, name: String, password: String? = nil) throws {
        self.name = name
        let directory = NSTemporaryDirectory() + "mr-airplay-\(room.inside)"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bus = directory + "/system_bus"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>system</type><listen>unix:path=\(bus)</listen><auth>EXTERNAL</auth>
            <policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/><allow user="*"/></policy></busconfig>
            """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        try """
            [server]
            host-name=\(room.inside)
            use-ipv4=yes
            use-ipv6=no
            allow-interfaces=\(room.inside)
            enable-dbus=yes
            [publish]
            publish-hinfo=no
            publish-workstation=no
            """.write(toFile: directory + "/avahi.conf", atomically: true, encoding: .utf8)
        pcmPath = directory + "/pcm.raw"
        logPath = directory + "/shairport.log"
        var general = "name = \"\(name)\"; output_backend = \"stdout\"; mdns_backend = \"avahi\"; port = 5000;"
        if let password { general += " password = \"\(password)\";" }
        try """
            general = { \(general) };
            metadata = { enabled = "yes"; include_cover_art = "yes"; pipe_name = "\(directory)/metadata"; };
            diagnostics = { log_verbosity = 2; };
            """.write(toFile: directory + "/shairport.conf", atomically: true, encoding: .utf8)
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus)"]
        try lab.start(in: room, ["/usr/bin/dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"])
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: bus) { usleep(10_000) }
        // Each Avahi gets a /run/avahi-daemon of its own (its pid file and socket; the directory exists
        // only where the service ran once): `ip netns exec`
        // already runs it in a mount namespace of its own, so the mount stays there.
        let avahiLog = "avahi-\(room.inside).log"
        try lab.start(in: room, [
            "/bin/sh", "-c",
            "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && exec /usr/sbin/avahi-daemon --no-chroot --no-drop-root --no-rlimits -f \(directory)/avahi.conf",
        ], log: avahiLog, environment: environment)
        for _ in 0..<300 where !lab.log(avahiLog).contains("Server startup complete") { usleep(10_000) }
        process = try lab.start(in: room, ["/bin/sh", "-c", "exec /usr/bin/shairport-sync -c \(directory)/shairport.conf -u >\(pcmPath) 2>\(logPath)"],
                                environment: environment)
        // shairport-sync writes metadata only while the pipe has a reader (it makes the pipe when it starts).
        metadataPath = directory + "/metadata.xml"
        try lab.start(in: room, [
            "/bin/sh", "-c",
            "while [ ! -p \(directory)/metadata ]; do sleep 0.05; done; while true; do cat \(directory)/metadata >>\(metadataPath); done",
        ])
    }

    /// The PCM written so far (interleaved stereo S16LE at 44.1 kHz).
    public var pcm: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: pcmPath)))) ?? [] }

    /// The metadata items so far.
    public var metadata: String { (try? String(contentsOfFile: metadataPath, encoding: .utf8)) ?? "" }

    /// The receiver's log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
