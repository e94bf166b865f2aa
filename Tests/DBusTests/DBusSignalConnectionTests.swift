import DBus
import Foundation
import MediaRouteTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
import MediaRouteTesting
#endif

/// The rule for the test object's `Ping` signal from `sender`.
func pings(from sender: String) -> DBusMatchRule {
    DBusMatchRule(sender: sender, path: "/test", interface: "org.mediaroute.Test1", member: "Ping")
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable)) struct DBusSignalConnectionTests {
    let bus: PrivateBus

    init() throws { bus = try PrivateBus() }

    func server() async throws -> DBusConnection { try await testServer(on: bus) }

    @Test func callsSignalsAndOwnersAsOnALibdbusConnection() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        #expect(client.uniqueName.hasPrefix(":"))
        #expect(client.isConnected)

        let sum = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Add", [.int32(2), .int32(3)])
        #expect(sum == [.int32(5)])
        let echoed = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "EchoAll", [.array(elementSignature: "v", everyKindOfValue.map(DBusValue.variant))])
        #expect(echoed == [.array(elementSignature: "v", everyKindOfValue.map(DBusValue.variant))])
        await #expect(throws: DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress")) {
            _ = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Fail")
        }
        #expect(try await client.nameOwner(of: "org.mediaroute.Test") == server.uniqueName)
        #expect(try await client.nameOwner(of: "org.mediaroute.Nobody") == nil)

        // Signals from the owner of the name, in order; another sender's are dropped.
        let received = Locked<[UInt32]>([])
        let subscription = try await client.handleSignals(matchingAny: [pings(from: "org.mediaroute.Test")]) { signal in
            received.withLock { $0.append(UInt32(signal.body.first?.integer ?? 0)) }
        }
        defer { subscription.cancel() }
        let impostor = try await DBusConnection.connect(to: .address(bus.address))
        defer { impostor.close() }
        for count in 1...200 {
            server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(UInt32(count))])
            if count == 100 { impostor.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(9999)]) }
        }
        #expect(await eventually { received.value.count == 200 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(received.value == Array(1...200))
        #expect(client.statistics.messages >= 200)
    }

    @Test func rawHandlersReadTheBodyInPlace() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        let seen = Locked<[(String, [DBusValue], String)]>([])
        let properties = DBusValue.properties(["Name": .string("Kitchen"), "RSSI": .int16(-50), "UUIDs": .strings(["0000184e"])])
        let subscription = try await client.handleRawSignals(matchingAny: [pings(from: server.uniqueName)]) { header, body throws(DBusWireError) in
            // Read in place with the signature's shape, and also as values: the same.
            let read = try body.read { reader throws(DBusWireError) -> String in
                var names: [String] = []
                try reader.dictionary { reader throws(DBusWireError) in
                    names.append(try reader.string())
                    _ = try reader.variant()
                }
                return names.joined(separator: ",")
            }
            let values = try body.values()
            #expect(body.hasSignature("a{sv}") && !body.hasSignature("s") && !body.hasSignature("a{sv}s"))
            seen.withLock { $0.append((body.signature, values, read)) }
            #expect(header.body.isEmpty)
            #expect(header.member == "Ping")
        }
        defer { subscription.cancel() }
        server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [properties])
        #expect(await eventually { seen.value.count == 1 })
        let (signature, values, names) = try #require(seen.value.first)
        #expect(signature == "a{sv}")
        #expect(seen.value.count == 1)
        #expect(values == [properties])
        #expect(names == "Name,RSSI,UUIDs")
        await #expect(throws: DBusError.self) {
            _ = try await client.handleRawSignals(matchingAny: [DBusNameOwnerChange.matchRule(for: "org.example")]) { _, _ in }
        }
    }

    @Test func aRawHandlerThatCannotReadABodyEndsTheConnection() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        let finished = Locked(false)
        let subscription = try await client.handleRawSignals(matchingAny: [pings(from: server.uniqueName)], finished: { finished.withLock { $0 = true } }) { _, body throws(DBusWireError) in
            // Reads a string where the body holds a uint32.
            _ = try body.read { reader throws(DBusWireError) in try reader.objectPath() }
        }
        defer { subscription.cancel() }
        server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(7)])
        #expect(await eventually { finished.value })
        #expect(!client.isConnected)
    }

    @Test func aBurstIsReadInBatches() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address), coalescing: .milliseconds(30))
        defer { client.close() }
        let received = Locked<[UInt32]>([])
        let subscription = try await client.handleSignals(matchingAny: [pings(from: server.uniqueName)]) { signal in
            received.withLock { $0.append(UInt32(signal.body.first?.integer ?? 0)) }
        }
        defer { subscription.cancel() }
        let before = client.statistics.reads
        let start = ContinuousClock.now
        // Signals 2 ms apart: without coalescing each would be read alone, as it comes.
        for count in 1...40 {
            server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(UInt32(count))])
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(await eventually { received.value.count == 40 })
        let elapsed = ContinuousClock.now - start
        let reads = client.statistics.reads - before
        #expect(received.value == Array(1...40))
        // Reads that found messages are at least 30 ms apart, however slow this machine is today.
        // (+3: the first read, and a read each side of a scheduler hiccup on a loaded machine.)
        #expect(reads <= Int(elapsed / .milliseconds(30)) + 3, "\(reads) reads in \(elapsed)")
        #expect(reads < 40)
    }

    @Test func repliesAndLargeMessagesAreNotHeldBack() async throws {
        let server = try await server()
        defer { server.close() }
        // Were replies or the pieces of a large one held back, this would take 30 s per call.
        let client = try await DBusSignalConnection.connect(to: .address(bus.address), coalescing: .seconds(30))
        defer { client.close() }
        let start = ContinuousClock.now
        for value in 1...10 {
            let sum = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Add", [.int32(Int32(value)), .int32(1)])
            #expect(sum == [.int32(Int32(value + 1))])
        }
        let large = DBusValue.bytes([UInt8](repeating: 7, count: 256 << 10))
        let echoed = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Echo", [.variant(large)])
        #expect(echoed == [.variant(large)])
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    @Test func withoutCoalescingEachMessageIsReadAsItComes() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address), coalescing: .zero)
        defer { client.close() }
        let received = Locked<[UInt32]>([])
        let subscription = try await client.handleSignals(matchingAny: [pings(from: server.uniqueName)]) { signal in
            received.withLock { $0.append(UInt32(signal.body.first?.integer ?? 0)) }
        }
        defer { subscription.cancel() }
        // Each signal is delivered before the next is sent.
        for count in 1...20 {
            server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(UInt32(count))])
            #expect(await eventually { received.value.count == count })
        }
        #expect(received.value == Array(1...20))
    }

    @Test func tasksPreferringItRunOnItsThread() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        let handlerThread = Locked<pthread_t?>(nil)
        let (stream, continuation) = AsyncStream.makeStream(of: UInt32.self)
        let subscription = try await client.handleSignals(matchingAny: [pings(from: server.uniqueName)], finished: { continuation.finish() }) { signal in
            handlerThread.withLock { $0 = pthread_self() }
            continuation.yield(UInt32(signal.body.first?.integer ?? 0))
        }
        defer { subscription.cancel() }
        let consumer = Task(executorPreference: client) { () -> (UInt32, pthread_t) in
            var total: UInt32 = 0
            for await value in stream {
                total += value
                if value == 3 { break }
            }
            return (total, pthread_self())
        }
        for count in 1...3 { server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(UInt32(count))]) }
        let (total, consumerThread) = await consumer.value
        #expect(total == 6)
        let reader = try #require(handlerThread.value)
        #expect(pthread_equal(reader, consumerThread) != 0, "the consumer ran on the connection's thread")
        #expect(pthread_equal(reader, pthread_self()) == 0)
    }

    @Test func aTaskThatKeepsYieldingOnItsThreadDoesNotStopReading() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        let received = Locked(0)
        let subscription = try await client.handleSignals(matchingAny: [pings(from: server.uniqueName)]) { _ in received.withLock { $0 += 1 } }
        defer { subscription.cancel() }
        let spinning = Task(executorPreference: client) {
            while !Task.isCancelled { await Task.yield() }
        }
        defer { spinning.cancel() }
        for count in 1...10 { server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(UInt32(count))]) }
        #expect(await eventually { received.value == 10 })
        let sum = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Add", [.int32(1), .int32(1)])
        #expect(sum == [.int32(2)])
    }

    @Test func closingFailsCallsAndFinishesSubscriptionsOnce() async throws {
        let server = try await server()
        defer { server.close() }
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        let finished = Locked(0)
        let subscription = try await client.handleSignals(matchingAny: [pings(from: server.uniqueName), pings(from: "org.mediaroute.Test")], finished: {
            finished.withLock { $0 += 1 }
        }) { _ in }
        await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Slow", [.uint32(2000)], timeout: .milliseconds(100))
        }
        let slow = Task {
            try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Slow", [.uint32(3000)])
        }
        try await Task.sleep(for: .milliseconds(100))
        client.close()
        do {
            _ = try await slow.value
            Issue.record("a pending call survived close()")
        } catch let error as DBusError {
            #expect(error.name == DBusError.disconnectedName)
        }
        #expect(await eventually { finished.value == 1 })
        subscription.cancel()
        #expect(finished.value == 1)
        #expect(!client.isConnected)
        await #expect(throws: DBusError.self) { _ = try await client.nameOwner(of: "org.mediaroute.Test") }
    }

    @Test func aDyingBusEndsTheConnection() async throws {
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        let finished = Locked(false)
        let subscription = try await client.handleSignals(matchingAny: [pings(from: ":1.999")], finished: { finished.withLock { $0 = true } }) { _ in }
        defer { subscription.cancel() }
        bus.stop()
        #expect(await eventually { finished.value })
        #expect(!client.isConnected)
    }

    @Test func onlyUnixSocketAddressesAreTaken() async {
        await #expect(throws: DBusError.self) { _ = try await DBusSignalConnection.connect(to: .address("tcp:host=127.0.0.1,port=9")) }
        await #expect(throws: DBusError.self) { _ = try await DBusSignalConnection.connect(to: .address("not an address")) }
        await #expect(throws: DBusError.self) { _ = try await DBusSignalConnection.connect(to: .address("unix:path=/nonexistent/bus")) }
    }
}

/// A fake bus on a unix socket: answers authentication and `Hello` as told, then sends `after`.
final class FakeBus: Sendable {
    let path: String
    private let listener: Int32

    init(authReply: String = "OK 0123456789abcdef0123456789abcdef\r\n", after: [UInt8], hangUpAfterHello: Bool = false) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("fake-bus-\(UUID().uuidString.prefix(8))").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0, listen(listener, 1) == 0 else { throw PrivateBusError(message: "cannot listen on \(path)") }
        var hello = DBusMessage(kind: .methodReturn)
        hello.replySerial = 1
        hello.sender = "org.freedesktop.DBus"
        hello.body = [.string(":1.1")]
        let helloBytes = try hello.marshalled(serial: 1)
        Thread.detachNewThread {
            let peer = accept(listener, nil, nil)
            guard peer >= 0 else { return }
            defer { close(peer) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            // AUTH line, then BEGIN and the Hello call (maybe in one read).
            _ = read(peer, &buffer, buffer.count)
            _ = authReply.utf8CString.withUnsafeBufferPointer { write(peer, $0.baseAddress, $0.count - 1) }
            guard authReply.hasPrefix("OK") else {
                _ = read(peer, &buffer, buffer.count)
                return
            }
            var received: [UInt8] = []
            while !received.contains(UInt8(ascii: "H")) || received.count < 40 {
                let count = read(peer, &buffer, buffer.count)
                if count <= 0 { return }
                received += buffer[..<count]
            }
            _ = helloBytes.withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
            if hangUpAfterHello {
                usleep(20_000)
                return
            }
            // Until the client's call named "Wait" came: then it is pending for sure.
            while !received.indices.contains(where: { received[$0...].starts(with: Array("Wait".utf8)) }) {
                let count = read(peer, &buffer, buffer.count)
                if count <= 0 { return }
                received += buffer[..<count]
            }
            _ = after.withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
            // Wait until the client hangs up.
            while read(peer, &buffer, buffer.count) > 0 {}
        }
    }

    deinit {
        close(listener)
        unlink(path)
    }

    var address: String { "unix:path=" + path }
}

struct DBusSignalConnectionHostileBusTests {
    /// A connection that got `after` from its bus has ended, with `reason` in the error of a call made before.
    func expectEnded(after bytes: [UInt8], reason: String) async throws {
        let bus = try FakeBus(after: bytes)
        let client = try await DBusSignalConnection.connect(to: .address(bus.address))
        defer { client.close() }
        #expect(client.uniqueName == ":1.1")
        // Sent to the fake bus, which never answers: the connection must end it.
        do {
            _ = try await client.call(destination: "org.example", path: "/", interface: "org.example.I", member: "Wait", timeout: .seconds(20))
            Issue.record("a call survived a malformed stream")
        } catch {
            #expect(error.name == DBusError.disconnectedName)
            #expect(error.message.contains(reason), "\(error)")
        }
        #expect(!client.isConnected)
    }

    @Test func garbageEndsTheConnectionWithATypedError() async throws {
        try await expectEnded(after: Array("this is not D-Bus at all, not even close".utf8), reason: "byte order")
    }

    @Test func aHugeMessageIsRefusedBeforeItIsRead() async throws {
        var header = WireBuilder()
        header.bytes = [UInt8(ascii: "l"), 4, 0, 1]
        header.uint32(200 << 20)
        header.uint32(2)
        header.uint32(0)
        try await expectEnded(after: header.bytes, reason: "larger than")
    }

    @Test func aMalformedReplyEndsTheConnection() async throws {
        // The answer to `Wait` (serial 2, after Hello), with a string that is not UTF-8.
        let bad = WireBuilder.message(type: 2, fields: { builder in
            builder.field(5, "u") { $0.uint32(2) }
            builder.field(7, "s") { $0.string(":1.5") }
            builder.field(8, "g") { $0.signature("s") }
        }) { $0.string([0x61, 0xFF]) }
        try await expectEnded(after: bad, reason: "UTF-8")
    }

    @Test func callsRacingABusThatHangsUpFailOnce() async throws {
        for _ in 0..<5 {
            let bus = try FakeBus(after: [], hangUpAfterHello: true)
            let client = try await DBusSignalConnection.connect(to: .address(bus.address))
            defer { client.close() }
            // Each call fails exactly once, whether its write or the reading thread notices first.
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        try? await Task.sleep(for: .microseconds(index * 500))
                        do {
                            _ = try await client.call(destination: "org.example", path: "/", interface: "org.example.I", member: "Call", timeout: .seconds(10))
                            Issue.record("a call succeeded on a closed bus")
                        } catch {
                            #expect((error as? DBusError)?.name == DBusError.disconnectedName)
                        }
                    }
                }
            }
            #expect(!client.isConnected)
        }
    }

    @Test func aBusThatNeverAnswersAuthenticationTimesOut() async throws {
        // Listens, accepts, never says a word.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("silent-bus-\(UUID().uuidString.prefix(8))").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0 && listen(listener, 1) == 0)
        let start = ContinuousClock.now
        await #expect(throws: DBusError.self) { _ = try await DBusSignalConnection.connect(to: .address("unix:path=" + path)) }
        #expect(ContinuousClock.now - start < .seconds(15))
    }

    @Test func aRefusedAuthenticationIsAccessDenied() async throws {
        let bus = try FakeBus(authReply: "REJECTED EXTERNAL\r\n", after: [])
        await #expect(throws: DBusError(name: DBusError.accessDeniedName, message: "the bus refused EXTERNAL authentication: REJECTED EXTERNAL")) {
            _ = try await DBusSignalConnection.connect(to: .address(bus.address))
        }
    }
}
