@testable import IOReactor
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Waits (polling, bounded) until `condition` holds.
private func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// A pipe whose two ends the test closes itself.
private struct Pipe {
    let read: Int32
    let write: Int32
    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        read = fds[0]
        write = fds[1]
        _ = fcntl(read, F_SETFL, O_NONBLOCK)
    }
    func send(_ byte: UInt8) {
        var value = byte
        _ = Glibc.write(write, &value, 1)
    }
    func drain() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = Glibc.read(read, &buffer, buffer.count)
        return count > 0 ? Array(buffer.prefix(count)) : []
    }
    func close() {
        Glibc.close(read)
        Glibc.close(write)
    }
}

@Suite struct IOReactorTests {
    let reactor = IOReactor(name: "test-reactor")

    @Test func aReadableDescriptorCallsItsHandlerOnTheReactorThread() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let seen = Mutex<[(bytes: [UInt8], onReactor: Bool, events: IOEvents)]>([])
        let reactor = reactor
        let watch = try reactor.watch(pipe.read, for: .readable) { events in
            let bytes = pipe.drain()
            seen.withLock { $0.append((bytes, reactor.isCurrent, events)) }
        }
        defer { watch.cancel() }
        pipe.send(7)
        #expect(await eventually { seen.withLock { !$0.isEmpty } })
        pipe.send(8)
        #expect(await eventually { seen.withLock { $0.count == 2 } })
        let calls = seen.withLock { $0 }
        #expect(calls.map(\.bytes) == [[7], [8]])
        #expect(calls.allSatisfy { $0.onReactor && $0.events.contains(.readable) })
        #expect(!reactor.isCurrent)
    }

    @Test func noInterestHoldsReadsBackUntilAskedAgain() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let reads = Mutex<[UInt8]>([])
        let watch = try reactor.watch(pipe.read, for: .readable) { _ in
            let bytes = pipe.drain()
            reads.withLock { $0 += bytes }
        }
        defer { watch.cancel() }
        watch.setInterest([])
        pipe.send(1)
        // Level-triggered: had the descriptor still been watched, the byte would be read at once.
        let flushed = Mutex(false)
        reactor.execute { flushed.withLock { $0 = true } }
        #expect(await eventually { flushed.withLock { $0 } })
        try await Task.sleep(for: .milliseconds(50))
        #expect(reads.withLock { $0 }.isEmpty)
        watch.setInterest(.readable)
        #expect(await eventually { reads.withLock { $0 } == [1] })
    }

    @Test func aCancelledWatchIsNotCalledAndItsDescriptorClosesOnTheReactor() async throws {
        let pipe = Pipe()
        let calls = Mutex(0)
        let closedOnReactor = Mutex<Bool?>(nil)
        let reactor = reactor
        let watch = try reactor.watch(pipe.read, for: .readable) { _ in
            _ = pipe.drain()
            calls.withLock { $0 += 1 }
        }
        pipe.send(1)
        #expect(await eventually { calls.withLock { $0 } == 1 })
        watch.cancel {
            closedOnReactor.withLock { $0 = reactor.isCurrent }
        }
        #expect(await eventually { closedOnReactor.withLock { $0 } != nil })
        #expect(closedOnReactor.withLock { $0 } == true)
        pipe.send(2)
        try await Task.sleep(for: .milliseconds(50))
        #expect(calls.withLock { $0 } == 1)
        #expect(pipe.drain() == [2])
        pipe.close()
    }

    @Test func aHangUpIsReportedWithoutBeingAskedFor() async throws {
        let pipe = Pipe()
        defer { Glibc.close(pipe.read) }
        let events = Mutex<IOEvents>([])
        let watch = try reactor.watch(pipe.read, for: []) { ready in events.withLock { $0.formUnion(ready) } }
        defer { watch.cancel() }
        Glibc.close(pipe.write)
        #expect(await eventually { events.withLock { $0.contains(.hangup) } })
    }

    @Test func aDescriptorThatIsNotOpenIsATypedError() {
        #expect(throws: IOReactorError.self) { try reactor.watch(-1, for: .readable) { _ in } }
        do {
            _ = try reactor.watch(9_999, for: .readable) { _ in }
            Issue.record("watching a closed descriptor succeeded")
        } catch {
            #expect(error.errno == EBADF)
        }
    }

    @Test func timersFireInDeadlineOrderAndACancelledOneNever() async {
        let fired = Mutex<[Int]>([])
        let now = ContinuousClock.now
        reactor.schedule(at: now + .milliseconds(40)) { fired.withLock { $0.append(3) } }
        let cancelled = reactor.schedule(at: now + .milliseconds(20)) { fired.withLock { $0.append(99) } }
        reactor.schedule(at: now + .milliseconds(10)) { fired.withLock { $0.append(1) } }
        reactor.schedule(at: now + .milliseconds(30)) { fired.withLock { $0.append(2) } }
        #expect(cancelled.cancel())
        #expect(await eventually { fired.withLock { $0.count == 3 } })
        #expect(fired.withLock { $0 } == [1, 2, 3])
        #expect(ContinuousClock.now >= now + .milliseconds(40))
        #expect(!cancelled.cancel())
    }

    @Test func aTimerScheduledWhileTheReactorSleepsWakesIt() async {
        // Asleep with no deadline at all: the new timer must make it look again.
        let idle = Mutex(false)
        reactor.execute { idle.withLock { $0 = true } }
        #expect(await eventually { idle.withLock { $0 } })
        try? await Task.sleep(for: .milliseconds(20))
        let fired = Mutex<ContinuousClock.Instant?>(nil)
        let deadline = ContinuousClock.now + .milliseconds(10)
        reactor.schedule(at: deadline) { fired.withLock { $0 = .now } }
        #expect(await eventually(within: .seconds(2)) { fired.withLock { $0 } != nil })
    }

    @Test func tasksPreferringTheReactorRunOnItsThread() async {
        let reactor = reactor
        let onReactor = await Task(executorPreference: reactor) { reactor.isCurrent }.value
        #expect(onReactor)
    }

    @Test func anIdleReactorDoesNotWakeUp() async throws {
        // A reactor of its own, found among the process's threads by its name.
        let idle = IOReactor(name: "idle-reactor")
        let started = Mutex(false)
        idle.execute { started.withLock { $0 = true } }
        #expect(await eventually { started.withLock { $0 } })
        func switches() -> Int? {
            guard let tasks = opendir("/proc/self/task") else { return nil }
            defer { closedir(tasks) }
            while let entry = readdir(tasks) {
                let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard tid.first?.isNumber == true, read("/proc/self/task/\(tid)/comm") == "idle-reactor\n" else { continue }
                guard let status = read("/proc/self/task/\(tid)/status") else { return nil }
                let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
                return line.flatMap { Int($0.split(separator: "\t").last ?? "") }
            }
            return nil
        }
        func read(_ path: String) -> String? {
            guard let file = fopen(path, "r") else { return nil }
            defer { fclose(file) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = fread(&buffer, 1, buffer.count, file)
                if count <= 0 { break }
                bytes += buffer.prefix(count)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        try await Task.sleep(for: .milliseconds(20))
        let before = try #require(switches())
        try await Task.sleep(for: .milliseconds(300))
        let after = try #require(switches())
        #expect(after == before, "the idle reactor thread woke \(after - before) times")
    }
}

@Suite struct SpawnedProcessTests {
    /// What `arguments` prints, run with ``spawnProcess(_:environment:output:)``.
    func output(of arguments: [String]) throws -> [Substring] {
        var output: [Int32] = [-1, -1]
        #expect(pipe(&output) == 0)
        let pid = try spawnProcess(arguments, environment: ["PATH": "/usr/bin:/bin"], output: .descriptor(output[1]))
        close(output[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(output[0], &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer.prefix(count)
        }
        close(output[0])
        var status: Int32 = 0
        #expect(waitpid(pid, &status, 0) == pid)
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n")
    }

    @Test func aChildGetsNoDescriptorOfOursAndDefaultSignals() throws {
        // A descriptor without close-on-exec, as swift-nio opens its sockets.
        var leaky: [Int32] = [-1, -1]
        #expect(pipe(&leaky) == 0)
        defer { close(leaky[0]); close(leaky[1]) }
        // ls's own directory descriptor is 3.
        let descriptors = Set(try output(of: ["/bin/ls", "/proc/self/fd"]).compactMap { Int($0) })
        #expect(descriptors.isSubset(of: [0, 1, 2, 3]), "the child has \(descriptors.sorted())")
        let lines = try output(of: ["/bin/grep", "-E", "^(SigBlk|SigIgn)", "/proc/self/status"])
        #expect(lines.contains("SigBlk:\t0000000000000000"), "\(lines)")
        let ignored = lines.first { $0.hasPrefix("SigIgn") }.flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) } ?? 0
        #expect(ignored & (1 << (UInt64(SIGTERM) - 1)) == 0, "SIGTERM is not ignored in the child")
    }
}
