public import MediaRouteTesting
#if canImport(Glibc)
import Glibc
#endif

/// Starts a test peer (`arguments`), its output to `logPath`: in `room` of `lab` when given,
/// announcing itself there (`--announce`), else here. `exec`: the peer replaces the shell, so
/// killing the process kills the peer; the lab's own log directory is private to it, so the
/// output goes to the peer's.
public func startPeer(_ arguments: [String], logPath: String, lab: NamespaceLab?, room: NamespaceLab.Room?) throws -> ChildProcess {
    if let lab, let room {
        let command = (arguments + ["--announce"]).map { "'\($0)'" }.joined(separator: " ")
        return try lab.start(in: room, ["/bin/sh", "-c", "exec \(command) > \(logPath) 2>&1"])
    }
    let fd = open(logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    defer { close(fd) }
    return try ChildProcess(arguments, outputFD: fd)
}
