public import MediaRouteTesting
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

    /// Where the recorder notes, for each read of the receiver's output, the CLOCK_MONOTONIC time
    /// and the bytes read so far (`timed` receivers only).
    public let timesPath: String

    /// shairport-sync 5 (AirPlay 2) and nqptp, built by hand beside the project (never kept in
    /// it): their paths from `MEDIAROUTE_SHAIRPORT_SYNC5` and `MEDIAROUTE_NQPTP`, or nil (printing why).
    public struct AirPlay2Build: Sendable {
        public var shairportSync: String
        public var nqptp: String

        public static func fromEnvironment() -> AirPlay2Build? {
            let environment = ProcessInfo.processInfo.environment
            guard let shairportSync = environment["MEDIAROUTE_SHAIRPORT_SYNC5"], let nqptp = environment["MEDIAROUTE_NQPTP"],
                FileManager.default.isExecutableFile(atPath: shairportSync), FileManager.default.isExecutableFile(atPath: nqptp)
            else {
                print("skipping: shairport-sync 5 (AirPlay 2) and nqptp are not packaged in Debian 12; build them by hand from their repositories "
                    + "and set MEDIAROUTE_SHAIRPORT_SYNC5 and MEDIAROUTE_NQPTP to the binaries")
                return nil
            }
            return AirPlay2Build(shairportSync: shairportSync, nqptp: nqptp)
        }
    }

    /// - Parameters:
    ///   - timed: the output goes through a recorder that notes when each piece came
    ///     (``outputClock()``), for measuring when the receiver plays a sample.
    ///   - airPlay2: shairport-sync 5 with nqptp instead of Debian's 3.3.8: nqptp runs in the
    ///     room on 319/320 with a `/dev/shm` of the room's own (its shared memory has one name).
    public init(in lab: NamespaceLab, room: NamespaceLab.Room, name: String, password: String? = nil, timed: Bool = false, airPlay2: AirPlay2Build? = nil) throws {
        self.name = name
        let directory = TestScratch.directory + "/airplay-\(room.inside)"
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
        // The stdout backend writes each sample this long before it is due (its buffer, set to
        // shairport-sync's default for backends other than alsa and pa, so the figure is ours).
        var general = "name = \"\(name)\"; output_backend = \"stdout\"; mdns_backend = \"avahi\"; port = 5000; audio_backend_buffer_desired_length_in_seconds = \(Self.outputLead);"
        if let password { general += " password = \"\(password)\";" }
        try """
            general = { \(general) };
            metadata = { enabled = "yes"; include_cover_art = "yes"; pipe_name = "\(directory)/metadata"; };
            diagnostics = { log_verbosity = 2; };
            \(airPlay2 == nil ? "" : "stdout = { output_rate = 44100; output_format = \"S16_LE\"; output_channels = 2; };")
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
        timesPath = directory + "/times.txt"
        // shairport-sync 5 and nqptp share a /dev/shm of the room's own: one shell, one mount namespace.
        let binary = airPlay2.map { "mount -t tmpfs tmpfs /dev/shm && (\($0.nqptp) >\(directory)/nqptp.log 2>&1 &) && sleep 0.3 && exec \($0.shairportSync)" }
            ?? "exec /usr/bin/shairport-sync"
        if timed {
            let recorder = try TimedOutput.writeRecorder(in: directory)
            process = try lab.start(in: room, [
                "/bin/sh", "-c",
                // The recorder reads a FIFO and shairport-sync execs: killing the process kills the receiver.
                "mkfifo \(directory)/out && (\(recorder) \(pcmPath) \(timesPath) <\(directory)/out &) && "
                    + "\(binary) -c \(directory)/shairport.conf -u 2>\(logPath) >\(directory)/out",
            ], environment: environment, asAnotherDevice: true)
        } else {
            process = try lab.start(in: room, ["/bin/sh", "-c", "\(binary) -c \(directory)/shairport.conf -u >\(pcmPath) 2>\(logPath)"],
                                    environment: environment, asAnotherDevice: true)
        }
        // shairport-sync writes metadata only while the pipe has a reader (it makes the pipe when it starts).
        metadataPath = directory + "/metadata.xml"
        // One process (the lab's kill ends it; a shell loop's `cat` would outlive it, blocked on the pipe).
        try lab.start(in: room, [
            "/usr/bin/python3", "-c",
            """
            import os, time
            pipe, out = "\(directory)/metadata", open("\(metadataPath)", "ab")
            while not os.path.exists(pipe): time.sleep(0.05)
            while True:
                with open(pipe, "rb", buffering=0) as source:
                    for chunk in iter(lambda: source.read(4096), b""):
                        out.write(chunk); out.flush()
            """,
        ])
    }

    /// The PCM written so far (interleaved stereo S16LE at 44.1 kHz).
    public var pcm: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: pcmPath)))) ?? [] }

    /// How long before it is due shairport-sync's stdout backend writes a sample.
    public static let outputLead = 1.0

    /// The receiver's output as a ``TimedOutput`` (its times are there for `timed` receivers),
    /// timed when each sample plays: written ``outputLead`` before it is due.
    public var output: TimedOutput { TimedOutput(pcmPath: pcmPath, timesPath: timesPath, lead: Self.outputLead) }

    /// The metadata items so far.
    public var metadata: String { (try? String(contentsOfFile: metadataPath, encoding: .utf8)) ?? "" }

    /// The receiver's log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

/// The impulse train the sync measurements play: low noise with a loud one-frame click every
/// half second (stereo S16LE at 44.1 kHz), so the same source sample can be found in every
/// receiver's output.
public func impulseTrain(seconds: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(seconds * 44_100 * 4)
    for frame in 0..<(seconds * 44_100) {
        let value: Int16 = frame % 22_050 == 11_025 ? 20_000 : Int16.random(in: -30...30, using: &generator)
        let low = UInt8(truncatingIfNeeded: value), high = UInt8(truncatingIfNeeded: value >> 8)
        bytes += [low, high, low, high]
    }
    return bytes
}

/// The frames of the clicks in a receiver's output (left channel above 300 after quiet: the
/// clicks stand out of the noise from shairport-sync's −36 dB up).
public func clickFrames(in pcm: [UInt8]) -> [Int] {
    var frames: [Int] = []
    var index = 0
    var lastClick = -44_100
    while index + 1 < pcm.count {
        let frame = index / 4
        let value = Int(Int16(bitPattern: UInt16(pcm[index]) | UInt16(pcm[index + 1]) << 8))
        if abs(value) > 300, frame - lastClick > 11_025 {
            frames.append(frame)
            lastClick = frame
        }
        index += 4
    }
    return frames
}

/// What a player wrote (interleaved stereo S16LE at 44.1 kHz), with, for each read of it by
/// the recorder (``writeRecorder(in:)``), the CLOCK_MONOTONIC time and the bytes so far.
public struct TimedOutput: Sendable {
    public let pcmPath: String
    public let timesPath: String
    /// How long before it plays a sample reaches the recorder (a player that writes ahead of
    /// time, as shairport-sync's stdout backend does): added to every time read.
    public let lead: Double

    public init(pcmPath: String, timesPath: String, lead: Double = 0) {
        self.pcmPath = pcmPath
        self.timesPath = timesPath
        self.lead = lead
    }

    /// Writes the recorder (python3: stdin to the PCM file, a line per read to the times file)
    /// into `directory`; returns the command to pipe a player's output into, followed by the two paths.
    public static func writeRecorder(in directory: String) throws -> String {
        try """
            import os, sys, time
            out = open(sys.argv[1], "wb"); times = open(sys.argv[2], "w"); total = 0
            # With a FIFO's path, every writer that opens it is read in turn (a player that stops
            # and plays again opens its sink again); else standard input, to its end.
            fifo = sys.argv[3] if len(sys.argv) > 3 else None
            while True:
                source = os.open(fifo, os.O_RDONLY) if fifo else 0
                while True:
                    piece = os.read(source, 65536)
                    if not piece: break
                    now = time.clock_gettime(time.CLOCK_MONOTONIC)
                    out.write(piece); out.flush(); total += len(piece)
                    times.write("%.6f %d\\n" % (now, total)); times.flush()
                if not fifo: break
                os.close(source)
            """.write(toFile: directory + "/recorder.py", atomically: true, encoding: .utf8)
        return "python3 -u \(directory)/recorder.py"
    }

    public var pcm: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: pcmPath)))) ?? [] }

    /// When the output's frames came out by a steady clock (as a DAC would take them): for each
    /// read, the time frame 0 would have come out if every frame had come at the rate; the least
    /// of those within a second of a frame is the clock there, since a read is only ever late.
    /// Returns the time (CLOCK_MONOTONIC seconds) of `frame`, or nil before the first read.
    /// A player that writes whole packets (shairport-sync: 352 frames) writes a packet's first
    /// frame up to a packet before its buffer's mark, so this clock reads up to a packet (7.98 ms)
    /// early; outputs of such players compared with each other share that.
    public func clock(rate: Double = 44_100) -> @Sendable (Int) -> Double? {
        let reads: [(time: Double, frames: Double)] = ((try? String(contentsOfFile: timesPath, encoding: .utf8)) ?? "")
            .split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count == 2, let time = Double(fields[0]), let bytes = Double(fields[1]) else { return nil }
                return (time, bytes / 4)
            }
        let lead = self.lead
        // In the order of the frames (the recorder's counts only grow), so each frame's window
        // is found by bisection: an output of hours holds hundreds of thousands of reads.
        let origins = reads.map { (frames: $0.frames, origin: $0.time + lead - $0.frames / rate) }.sorted { $0.frames < $1.frames }
        let earliest = origins.map(\.origin).min()
        /// The index of the first read at or past `frames`.
        @Sendable func first(atOrPast frames: Double) -> Int {
            var low = 0, high = origins.count
            while low < high {
                let middle = (low + high) / 2
                if origins[middle].frames < frames { low = middle + 1 } else { high = middle }
            }
            return low
        }
        return { frame in
            let position = Double(frame)
            let start = first(atOrPast: position - rate)
            var end = start
            while end < origins.count, origins[end].frames <= position + rate { end += 1 }
            guard let origin = start < end ? origins[start..<end].map(\.origin).min() : earliest else { return nil }
            return origin + position / rate
        }
    }
}

/// When each click came out of `a` less when the same click came out of `b`, in milliseconds,
/// by each output's steady clock (``TimedOutput/clock(rate:)``); the clicks are matched in
/// order. Nil when the two outputs hold different numbers of clicks.
public func clickOffsets(_ a: TimedOutput, _ b: TimedOutput) -> [Double]? {
    let clicksA = clickFrames(in: a.pcm), clicksB = clickFrames(in: b.pcm)
    guard clicksA.count == clicksB.count, !clicksA.isEmpty else { return nil }
    let clockA = a.clock(), clockB = b.clock()
    return zip(clicksA, clicksB).compactMap { frameA, frameB in
        guard let timeA = clockA(frameA), let timeB = clockB(frameB) else { return nil }
        return (timeA - timeB) * 1000
    }
}

/// For each click of `b`, when it came out less when the nearest click of `a` did (within a
/// quarter second), in milliseconds, by each output's steady clock: for outputs that hold
/// different stretches of the same impulse train (a receiver that left and rejoined).
/// `skippingA`/`skippingB` leave out each output's first clicks (what an earlier stream played).
public func nearestClickOffsets(_ a: TimedOutput, _ b: TimedOutput, skippingA: Int = 0, skippingB: Int = 0) -> [Double] {
    let clockA = a.clock(), clockB = b.clock()
    let timesA = clickFrames(in: a.pcm).dropFirst(skippingA).compactMap(clockA)
    return clickFrames(in: b.pcm).dropFirst(skippingB).compactMap { frame -> Double? in
        guard let timeB = clockB(frame), let nearest = timesA.min(by: { abs($0 - timeB) < abs($1 - timeB) }),
            abs(nearest - timeB) < 0.25
        else { return nil }
        return (timeB - nearest) * 1000
    }
}
