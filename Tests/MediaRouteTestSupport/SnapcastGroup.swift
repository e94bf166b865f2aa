public import MediaRouteTesting
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Snapcast 0.26 as a sync anchor: snapserver on the host reading a FIFO (44.1 kHz S16 stereo,
/// PCM codec), and a snapclient in each room of a ``NamespaceLab`` playing with `--player
/// file` into a recorder (``TimedOutput``), so its output is measured as the AirPlay
/// receivers' is.
public final class SnapcastGroup: Sendable {
    public let fifo: String
    public let outputs: [TimedOutput]
    public let server: ChildProcess

    /// Whether snapserver, snapclient and python3 are installed (prints why not).
    public static var available: Bool {
        guard NamespaceLab.isAvailable else { return false }
        for path in ["/usr/bin/snapserver", "/usr/bin/snapclient", "/usr/bin/python3"] where !FileManager.default.isExecutableFile(atPath: path) {
            print("skipping: \(path) is missing (apt-get install snapserver snapclient)")
            return false
        }
        return true
    }

    public init(in lab: NamespaceLab) throws {
        let directory = NSTemporaryDirectory() + "mr-snapcast-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        fifo = directory + "/fifo"
        guard mkfifo(fifo, 0o600) == 0 else { throw NSError(domain: "snapcast", code: Int(errno)) }
        try "[server]\ndatadir = \(directory)\n[http]\nenabled = false\n[tcp]\nenabled = false\n[stream]\nbind_to_address = 0.0.0.0\n[logging]\nsink = file:\(directory)/server.log\n"
            .write(toFile: directory + "/snapserver.conf", atomically: true, encoding: .utf8)
        server = try ChildProcess([
            "/usr/bin/snapserver", "-c", directory + "/snapserver.conf",
            "--stream.source", "pipe://\(fifo)?name=default&sampleformat=44100:16:2&codec=pcm",
        ])
        let recorder = try TimedOutput.writeRecorder(in: directory)
        var outputs: [TimedOutput] = []
        for (index, room) in lab.rooms.enumerated() {
            let output = TimedOutput(pcmPath: directory + "/pcm\(index).raw", timesPath: directory + "/times\(index).txt")
            try lab.start(in: room, [
                "/bin/sh", "-c",
                // The recorder reads a FIFO and snapclient execs: the lab's kill reaches the player itself.
                "mkfifo \(directory)/out\(index) && (\(recorder) \(output.pcmPath) \(output.timesPath) <\(directory)/out\(index) &) && "
                    + "exec /usr/bin/snapclient -h \(room.hostAddress) -p 1704 --hostID room\(index) --player file:filename=stdout "
                    + "--logsink file:\(directory)/client\(index).log >\(directory)/out\(index)",
            ])
            outputs.append(output)
        }
        self.outputs = outputs
    }
}
