import DBus
import Foundation
import MediaRouteTestSupport
import Synchronization
import Testing
import MediaRouteTesting

/// A test object at /test with methods that exercise the layer.
func testObject(emitter: @escaping @Sendable () -> DBusConnection?) -> DBusObject {
    let volume = Locked<Double>(0.5)
    return DBusObject(interfaces: [
        DBusInterface("org.mediaroute.Test1", methods: [
            DBusMethod("Echo", inputs: [DBusArgument("value", "v")], outputs: [DBusArgument("value", "v")]) { call in
                call.arguments
            },
            DBusMethod("EchoAll", inputs: [DBusArgument("values", "av")], outputs: [DBusArgument("values", "av")]) { call in
                call.arguments
            },
            DBusMethod("ReadFD", inputs: [DBusArgument("fd", "h")], outputs: [DBusArgument("text", "s")]) { call in
                guard case .unixFD(let fd) = call.arguments[0] else { throw DBusError(name: DBusError.invalidArgsName, message: "no fd") }
                var buffer = [UInt8](repeating: 0, count: 64)
                let count = read(fd.rawValue, &buffer, 64)
                return [.string(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self))]
            },
            DBusMethod("Fail") { _ in throw DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress") },
            DBusMethod("Slow", inputs: [DBusArgument("ms", "u")]) { call in
                try await Task.sleep(for: .milliseconds(Int(call.arguments[0].integer ?? 0)))
                return []
            },
            DBusMethod("Add", inputs: [DBusArgument("a", "i"), DBusArgument("b", "i")], outputs: [DBusArgument("sum", "i")]) { call in
                [.int32(Int32(call.arguments[0].integer! + call.arguments[1].integer!))]
            },
        ], properties: [
            DBusProperty("Name", signature: "s") { .string("test object") },
            DBusProperty("Volume", signature: "d", get: { .double(volume.value) }, set: { value in
                guard let level = value.double, (0...1).contains(level) else {
                    throw DBusError(name: DBusError.invalidArgsName, message: "volume out of range")
                }
                volume.withLock { $0 = level }
                emitter()?.emitPropertiesChanged(path: "/test", interface: "org.mediaroute.Test1", changed: ["Volume": .double(level)])
            }),
        ], signals: [DBusSignalDescription("Ping", arguments: [DBusArgument("count", "u")])]),
    ])
}

/// A libdbus connection on `bus` exporting the test object at /test as `org.mediaroute.Test`.
func testServer(on bus: PrivateBus) async throws -> DBusConnection {
    let server = try await DBusConnection.connect(to: .address(bus.address))
    let weakServer = WeakBox(server)
    await server.export(testObject { weakServer.value }, at: "/test")
    #expect(try await server.requestName("org.mediaroute.Test"))
    return server
}

func call(_ connection: DBusConnection, _ destination: String, _ member: String, _ args: [DBusValue] = [],
          timeout: Duration = .seconds(5)) async throws(DBusError) -> [DBusValue] {
    try await connection.call(destination: destination, path: "/test", interface: "org.mediaroute.Test1",
                              member: member, args, timeout: timeout)
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable)) struct DBusConnectionTests {
    let bus: PrivateBus

    init() throws { bus = try PrivateBus() }

    func server() async throws -> DBusConnection { try await testServer(on: bus) }

    @Test func everyTypeRoundTrips() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let values: [DBusValue] = [
            .byte(255), .bool(true), .bool(false), .int16(-32768), .uint16(65535), .int32(Int32.min), .uint32(UInt32.max),
            .int64(Int64.min), .uint64(UInt64.max), .double(-1.5e300), .string("Grüße, 📺"), .string(""),
            .objectPath("/org/bluez/hci0/dev_AA_BB"), .signature("a{sv}"),
            .strings(["a", "b"]), .array(elementSignature: "s", []), .bytes([0, 1, 2, 255]),
            .properties(["Powered": .bool(true), "Name": .string("hci0"), "RSSI": .int16(-60)]),
            .dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", [
                DBusDictEntry(.objectPath("/org/bluez/hci0"), .dictionary(keySignature: "s", valueSignature: "a{sv}", [
                    DBusDictEntry(.string("org.bluez.Adapter1"), .properties(["Address": .string("00:11:22:33:44:55")])),
                ])),
            ]),
            .structure([.string("x"), .int32(1), .array(elementSignature: "(ii)", [.structure([.int32(1), .int32(2)])])]),
            .variant(.variant(.uint32(7))),
            .dictionary(keySignature: "q", valueSignature: "ay", [DBusDictEntry(.uint16(76), .bytes([1, 2]))]),
        ]
        for value in values {
            let reply = try await call(client, "org.mediaroute.Test", "Echo", [.variant(value)])
            #expect(reply == [.variant(value)], "round trip of \(value.signature)")
        }
        let all = try await call(client, "org.mediaroute.Test", "EchoAll", [.array(elementSignature: "v", values.map(DBusValue.variant))])
        #expect(all.first?.array?.count == values.count)
        _ = server
    }

    @Test func malformedValuesAreRefusedLocally() async throws {
        let client = try await DBusConnection.connect(to: .address(bus.address))
        await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: "org.freedesktop.DBus", path: "/", interface: "x.y", member: "Z",
                                      [.array(elementSignature: "s", [.int32(1)])])
        }
        #expect(client.isConnected, "a bad message does not break the connection")
        #expect(!DBusObjectPath.isValid("/a//b"))
        #expect(!DBusObjectPath.isValid("/a/b-c"))
        #expect(DBusObjectPath("/org/x").appending("dev 1:2").rawValue == "/org/x/dev_1_2")
        #expect(dbusSplitSignature("a{sv}i(ss)") == ["a{sv}", "i", "(ss)"])
        #expect(dbusSplitSignature("a{sv") == nil)
    }

    @Test func fileDescriptorsPass() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = "hello over fd".withCString { write(fds[1], $0, 13) }
        close(fds[1])
        let reply = try await call(client, "org.mediaroute.Test", "ReadFD", [.unixFD(DBusFileDescriptor(owning: fds[0]))])
        #expect(reply == [.string("hello over fd")])
        _ = server
    }

    @Test func peerErrorsKeepTheirNameAndLocalOnesAreTyped() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        await #expect(throws: DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress")) {
            _ = try await call(client, "org.mediaroute.Test", "Fail")
        }
        do {
            _ = try await call(client, "org.mediaroute.Test", "Nope")
            Issue.record("an unknown method succeeded")
        } catch {
            #expect(error.name == DBusError.unknownMethodName)
        }
        do {
            _ = try await call(client, "org.mediaroute.Test", "Add", [.string("1"), .int32(2)])
            Issue.record("wrong arguments were accepted")
        } catch {
            #expect(error.name == DBusError.invalidArgsName)
        }
        do {
            _ = try await client.call(destination: "org.mediaroute.Nobody", path: "/", interface: nil, member: "X")
            Issue.record("a call to nobody succeeded")
        } catch {
            #expect(error.name == DBusError.serviceUnknownName)
        }
        _ = server
    }

    @Test func callsTimeOut() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let start = ContinuousClock.now
        do {
            _ = try await call(client, "org.mediaroute.Test", "Slow", [.uint32(3000)], timeout: .milliseconds(100))
            Issue.record("a slow call did not time out")
        } catch {
            #expect(error.name == DBusError.timeoutName)
        }
        #expect(ContinuousClock.now - start < .seconds(2))
        // The connection is still usable afterwards.
        #expect(try await call(client, "org.mediaroute.Test", "Add", [.int32(2), .int32(3)]) == [.int32(5)])
        _ = server
    }

    @Test func aVanishedPeerFailsPendingCallsPromptly() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let pending = Task { () -> DBusError? in
            do {
                _ = try await call(client, "org.mediaroute.Test", "Slow", [.uint32(60_000)], timeout: .seconds(30))
                return nil
            } catch { return error as? DBusError }
        }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        server.close()
        let error = await pending.value
        #expect(error?.name == DBusError.noReplyName)
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func aThousandCallsInFlight() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let sums = try await withThrowingTaskGroup(of: (Int32, Int32).self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let reply = try await call(client, "org.mediaroute.Test", "Add", [.int32(Int32(index)), .int32(1)])
                    return (Int32(index), Int32(reply.first?.integer ?? -1))
                }
            }
            var results: [(Int32, Int32)] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(sums.count == 1000)
        #expect(sums.allSatisfy { $0.1 == $0.0 + 1 })
        _ = server
    }

    @Test func propertiesGetSetAndChangeSignals() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let changes = try await client.signals(matching: DBusMatchRule(
            sender: "org.mediaroute.Test", path: "/test", interface: "org.freedesktop.DBus.Properties",
            member: "PropertiesChanged", arg0: "org.mediaroute.Test1"))
        func properties(_ member: String, _ args: [DBusValue]) async throws(DBusError) -> [DBusValue] {
            try await client.call(destination: "org.mediaroute.Test", path: "/test",
                                  interface: "org.freedesktop.DBus.Properties", member: member, args)
        }
        #expect(try await properties("Get", [.string("org.mediaroute.Test1"), .string("Name")]) == [.variant(.string("test object"))])
        let all = try await properties("GetAll", [.string("org.mediaroute.Test1")])
        #expect(all.first?.dictionary?["Volume"] == .variant(.double(0.5)))
        _ = try await properties("Set", [.string("org.mediaroute.Test1"), .string("Volume"), .variant(.double(0.8))])
        var iterator = changes.makeAsyncIterator()
        let signal = await iterator.next()
        #expect(signal?.body[1].dictionary?["Volume"] == .variant(.double(0.8)))
        for (args, expected) in [
            ([DBusValue.string("org.mediaroute.Test1"), .string("Name"), .variant(.string("x"))], DBusError.propertyReadOnlyName),
            ([.string("org.mediaroute.Test1"), .string("Volume"), .variant(.string("loud"))], DBusError.invalidArgsName),
            ([.string("org.mediaroute.Test1"), .string("Volume"), .variant(.double(3))], DBusError.invalidArgsName),
            ([.string("org.mediaroute.Test1"), .string("Missing"), .variant(.double(3))], DBusError.unknownPropertyName),
        ] {
            do {
                _ = try await properties("Set", args)
                Issue.record("Set \(args) was accepted")
            } catch {
                #expect(error.name == expected)
            }
        }
        _ = server
    }

    @Test func aSnapshotInterfaceAnswersGetAllWithOneRead() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let reads = Locked(0)
        await server.export(DBusObject(interfaces: [
            DBusInterface("org.mediaroute.Snapshot1", properties: [("Level", "d"), ("Name", "s"), ("Tags", "as"), ("Missing", "a{sv}")]) {
                reads.withLock { $0 += 1 }
                return ["Level": .double(0.25), "Name": .string("kitchen"), "Tags": .strings(["a"]), "Extra": .bool(true)]
            },
        ]), at: "/snapshot")
        let all = try await client.call(destination: "org.mediaroute.Test", path: "/snapshot", interface: "org.freedesktop.DBus.Properties",
                                        member: "GetAll", [.string("org.mediaroute.Snapshot1")]).first?.dictionary
        #expect(reads.withLock { $0 } == 1)
        // Only declared properties; one the snapshot lacks is absent from GetAll, and Get answers its zero value.
        #expect(Set(all?.keys ?? [:].keys) == ["Level", "Name", "Tags"])
        #expect(all?["Level"] == .variant(.double(0.25)))
        let missing = try await client.call(destination: "org.mediaroute.Test", path: "/snapshot", interface: "org.freedesktop.DBus.Properties",
                                            member: "Get", [.string("org.mediaroute.Snapshot1"), .string("Missing")])
        #expect(missing == [.variant(.dictionary(keySignature: "s", valueSignature: "v", []))])
        _ = server
    }

    @Test func zeroValuesFollowTheirSignature() {
        #expect(DBusValue.zero(of: "s") == .string(""))
        #expect(DBusValue.zero(of: "o") == .objectPath("/"))
        #expect(DBusValue.zero(of: "a(sss)") == .array(elementSignature: "(sss)", []))
        #expect(DBusValue.zero(of: "a{sa{sv}}") == .dictionary(keySignature: "s", valueSignature: "a{sv}", []))
        #expect(DBusValue.zero(of: "(ib)") == .structure([.int32(0), .bool(false)]))
        for malformed in ["", "ss", "a", "a{s", "(", "()", "z", "a{sv"] {
            #expect(DBusValue.zero(of: malformed) == nil, "\(malformed)")
        }
    }

    @Test func signalsFromOtherSendersAreDropped() async throws {
        let server = try await server()
        let impostor = try await DBusConnection.connect(to: .address(bus.address))
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let pings = try await client.signals(matching: DBusMatchRule(sender: "org.mediaroute.Test", interface: "org.mediaroute.Test1", member: "Ping"))
        impostor.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(666)])
        try await Task.sleep(for: .milliseconds(50))
        server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(1)])
        var iterator = pings.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.body == [.uint32(1)], "the impostor's signal never arrives")
        #expect(first?.sender == server.uniqueName)
    }

    @Test func synchronousHandlersGetSignalsAndRepliesInArrivalOrder() async throws {
        let server = try await server()
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let log = Locked<[String]>([])
        let finished = Locked(0)
        let subscription = try await client.handleSignals(
            matchingAny: [DBusMatchRule(sender: "org.mediaroute.Test", interface: "org.mediaroute.Test1", member: "Ping")],
            finished: { finished.withLock { $0 += 1 } }
        ) { signal in
            log.withLock { $0.append("ping \(signal.body.first?.integer ?? -1)") }
        }
        // The server sends Ping 1 before it sees the call, so the bus delivers it before the reply.
        server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(1)])
        let sum = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Add",
                                        [.int32(2), .int32(3)], replyHandler: { body in
            log.withLock { $0.append("reply \(body.first?.integer ?? -1)") }
        })
        #expect(sum == [.int32(5)])
        // The reply handler ran before the call returned, after the signal that preceded it.
        #expect(log.value == ["ping 1", "reply 5"])
        server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(2)])
        #expect(await eventually { log.value.count == 3 })
        #expect(log.value.last == "ping 2")
        subscription.cancel()
        subscription.cancel()
        #expect(finished.value == 1)
        server.emitSignal(path: "/test", interface: "org.mediaroute.Test1", member: "Ping", [.uint32(3)])
        _ = try await call(client, "org.mediaroute.Test", "Add", [.int32(0), .int32(0)])
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.value.count == 3, "no signal after cancel: \(log.value)")
        // A failed call does not run its reply handler.
        await #expect(throws: DBusError.self) {
            _ = try await client.call(destination: "org.mediaroute.Test", path: "/test", interface: "org.mediaroute.Test1", member: "Fail",
                                      replyHandler: { _ in log.withLock { $0.append("reply to a failure") } })
        }
        #expect(!log.value.contains("reply to a failure"))
    }

    @Test func closingTheConnectionFinishesSynchronousHandlersOnce() async throws {
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let finished = Locked(0)
        let subscription = try await client.handleSignals(
            matchingAny: [DBusMatchRule(interface: "org.mediaroute.Nothing"), DBusMatchRule(interface: "org.mediaroute.Other")],
            finished: { finished.withLock { $0 += 1 } }) { _ in }
        client.close()
        #expect(await eventually { finished.value == 1 })
        subscription.cancel()
        try await Task.sleep(for: .milliseconds(20))
        #expect(finished.value == 1)
    }

    @Test func nameOwnerChangedShowsAPeerLeaving() async throws {
        let server = try await server()
        let watcher = try await DBusConnection.connect(to: .address(bus.address))
        #expect(try await watcher.nameOwner(of: "org.mediaroute.Test") == server.uniqueName)
        let changes = try await watcher.nameOwnerChanges(of: "org.mediaroute.Test")
        server.close()
        var iterator = changes.makeAsyncIterator()
        let change = await iterator.next()
        #expect(change == DBusNameOwnerChange(name: "org.mediaroute.Test", oldOwner: server.uniqueName, newOwner: nil))
        #expect(try await watcher.nameOwner(of: "org.mediaroute.Test") == nil)
        // A restarted peer: the watcher sees the new owner.
        let restarted = try await self.server()
        let next = await iterator.next()
        #expect(next?.newOwner == restarted.uniqueName)
    }

    @Test func introspectionIsValidForGdbus() async throws {
        let server = try await server()
        let (status, output) = try await bus.run("/usr/bin/gdbus", [
            "introspect", "--address", bus.address, "--dest", "org.mediaroute.Test", "--object-path", "/test",
        ])
        #expect(status == 0, "gdbus introspect failed: \(output)")
        #expect(output.contains("interface org.mediaroute.Test1"))
        #expect(output.contains("Add(in  i a,"))
        #expect(output.contains("readwrite d Volume"))
        #expect(output.contains("Ping(u count);"))
        #expect(output.contains("interface org.freedesktop.DBus.Properties"))
        let root = try await bus.run("/usr/bin/gdbus", ["introspect", "--address", bus.address, "--dest", "org.mediaroute.Test", "--object-path", "/"])
        #expect(root.output.contains("node test"), "\(root.output)")
        let sum = try await bus.run("/usr/bin/gdbus", [
            "call", "--address", bus.address, "--dest", "org.mediaroute.Test", "--object-path", "/test",
            "--method", "org.mediaroute.Test1.Add", "40", "2",
        ])
        #expect(sum.output.trimmingCharacters(in: .whitespacesAndNewlines) == "(42,)")
        _ = server
    }

    @Test func objectManagerListsAndAnnouncesObjects() async throws {
        let server = try await DBusConnection.connect(to: .address(bus.address))
        _ = try await server.requestName("org.mediaroute.Managed")
        await server.export(DBusObject(interfaces: [], isObjectManager: true), at: "/org/mediaroute")
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let added = try await client.signals(matching: DBusMatchRule(
            sender: "org.mediaroute.Managed", interface: "org.freedesktop.DBus.ObjectManager"))
        let device = DBusObject(interfaces: [DBusInterface("org.mediaroute.Device1", properties: [
            DBusProperty("Name", signature: "s") { .string("TV") },
        ])])
        await server.export(device, at: "/org/mediaroute/dev_1")
        var iterator = added.makeAsyncIterator()
        let signal = await iterator.next()
        #expect(signal?.member == "InterfacesAdded")
        #expect(signal?.body.first == .objectPath("/org/mediaroute/dev_1"))
        let objects = try await client.call(destination: "org.mediaroute.Managed", path: "/org/mediaroute",
                                            interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        let managed = objects.first?.dictionary
        #expect(managed?.keys.sorted() == ["/org/mediaroute/dev_1"])
        #expect(managed?["/org/mediaroute/dev_1"]?.dictionary?["org.mediaroute.Device1"]?.dictionary?["Name"] == .variant(.string("TV")))
        server.unexport("/org/mediaroute/dev_1")
        let removed = await iterator.next()
        #expect(removed?.member == "InterfacesRemoved")
    }

    @Test func closingEndsSignalStreamsAndFailsLaterCalls() async throws {
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let stream = try await client.signals(matching: DBusMatchRule(interface: "org.mediaroute.Nothing"))
        client.close()
        for await _ in stream {}
        await #expect(throws: DBusError.self) { _ = try await client.nameOwner(of: "x.y") }
        #expect(!client.isConnected)
    }

    @Test func aDyingBusDisconnectsCleanly() async throws {
        let client = try await DBusConnection.connect(to: .address(bus.address))
        let stream = try await client.signals(matching: DBusMatchRule(interface: "org.mediaroute.Nothing"))
        bus.stop()
        for await _ in stream {}
        #expect(await eventually { !client.isConnected })
    }
}

final class WeakBox<T: AnyObject & Sendable>: Sendable {
    private let box: Locked<WeakReference<T>>
    init(_ value: T) { box = Locked(WeakReference(value)) }
    var value: T? { box.value.value }
}

struct WeakReference<T: AnyObject & Sendable>: Sendable {
    weak var value: T?
    init(_ value: T) { self.value = value }
}
