import BlueZTransport
import DBus
import Foundation
import MediaRouteTestSupport
import Transport
import MediaRouteTesting

/// Issue 5's figures: object-manager sync and event handling for 1 000 mock
/// devices, next to bleak scanning the same mock in the same run.
extension Bench {
    static let template = BlueZMock.template

    static func cpuSeconds() -> Double {
        let (user, system) = cpuSplit()
        return user + system
    }

    /// Minor page faults of this process so far.
    static func minorFaults() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_minflt
    }

    /// User and system CPU seconds of this process.
    static func cpuSplit() -> (Double, Double) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6, Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
    }

    /// A private bus with the mock and one adapter.
    static func startMock() async throws -> (PrivateBus, ChildProcess, DBusConnection) {
        let bus = try PrivateBus()
        let mock = try ChildProcess(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", template, "-l", "/dev/null"],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        while (try? await connection.nameOwner(of: BlueZ.busName)) ?? nil == nil { try await Task.sleep(for: .milliseconds(20)) }
        _ = try await connection.call(destination: BlueZ.busName, path: "/", interface: "org.mediaroute.BlueZMock", member: "AddAdapter",
                                      [.string("hci0"), .string("00:11:22:33:44:55")])
        return (bus, mock, connection)
    }

    static func addDevices(_ connection: DBusConnection, _ count: Int) async throws -> Double {
        let reply = try await connection.call(
            destination: BlueZ.busName, path: "/", interface: "org.mediaroute.BlueZMock", member: "AddDevices",
            [.string("hci0"), .uint32(UInt32(count)), .string(BlueZ.volumeControlService)], timeout: .seconds(120))
        return reply.first?.double ?? .nan
    }

    static func bluez() async throws {
        guard FileManager.default.fileExists(atPath: template) else {
            print("bluez: run from the repository root (needs \(template))")
            return
        }
        let count = 1000
        print("| case | client | devices reported | wall ms | mock's own ms | ratio | CPU µs per device |")
        print("|---|---|---|---|---|---|---|")
        for run in 0..<3 {
            // 1. Devices arriving while discovering (InterfacesAdded).
            do {
                let (bus, mock, connection) = try await startMock()
                defer { mock.kill(SIGKILL); mock.wait(); connection.close(); bus.stop() }
                let manager = BlueZObjectManager(connection: connection)
                try await manager.start()
                let transport = BlueZTransport(objectManager: manager)
                let reported = Locked(0)
                let done = Locked<ContinuousClock.Instant?>(nil)
                // The consumer says when the last device came: no polling in the measured window.
                let (finished, finish) = AsyncStream.makeStream(of: Void.self)
                // The consumer runs on the thread that reads BlueZ's signals (no hand-off per device).
                var observation: BlueZObservation?
                if ProcessInfo.processInfo.environment["BENCH_MANAGER_ONLY"] != nil {
                    observation = manager.snapshotAndObserve { event, _ in
                        if case .added = event {
                            let total = reported.withLock { $0 += 1; return $0 }
                            if total == count { done.withLock { $0 = .now }; finish.finish() }
                        }
                    }.1
                }
                defer { observation?.cancel() }
                let discovery = Task(executorPreference: manager.signalExecutor ?? globalConcurrentExecutor) {
                    if ProcessInfo.processInfo.environment["BENCH_MANAGER_ONLY"] != nil { return }
                    for await event in transport.discover() {
                        if case .appeared = event {
                            let total = reported.withLock { $0 += 1; return $0 }
                            if total == count {
                                done.withLock { $0 = .now }
                                finish.finish()
                            }
                        }
                    }
                }
                try await Task.sleep(for: .milliseconds(200))
                let cpu = cpuSeconds()
                let split = cpuSplit()
                let switches = contextSwitches(getpid())
                let faults = minorFaults()
                let start = ContinuousClock.now
                perfControl("enable")
                let mockSeconds = try await addDevices(connection, count)
                let timeout = Task {
                    try await Task.sleep(for: .seconds(60))
                    finish.finish()
                }
                for await _ in finished {}
                timeout.cancel()
                let wall = milliseconds((done.value ?? .now) - start)
                let cpuPerDevice = (cpuSeconds() - cpu) / Double(count) * 1e6
                perfControl("disable")
                let after = cpuSplit()
                if ProcessInfo.processInfo.environment["BENCH_SPLIT"] != nil {
                    let perDevice = wakeups(from: switches, to: contextSwitches(getpid())) / Double(count)
                    let faultsPerDevice = Double(minorFaults() - faults) / Double(count)
                    print("user \(format((after.0 - split.0) / Double(count) * 1e6, 1)) µs, system \(format((after.1 - split.1) / Double(count) * 1e6, 1)) µs, \(format(perDevice, 2)) context switches, \(format(faultsPerDevice, 2)) page faults per device")
                }
                discovery.cancel()
                print("| devices added while scanning, run \(run + 1) | MediaRoute | \(reported.value) | \(format(wall, 1)) | \(format(mockSeconds * 1000, 1)) | \(format(wall / (mockSeconds * 1000), 2)) | \(format(cpuPerDevice, 1)) |")
            }
            // BENCH_ONLY_MEDIAROUTE: the first case alone, for profiling.
            if ProcessInfo.processInfo.environment["BENCH_ONLY_MEDIAROUTE"] != nil { continue }
            // 2. The same with bleak, and with a C client doing nothing but libdbus's own work.
            try await bleak(count: count, run: run, present: false)
            try await libdbusFloor(count: count, run: run)
            // 3. Devices already there when the client starts.
            do {
                let (bus, mock, connection) = try await startMock()
                defer { mock.kill(SIGKILL); mock.wait(); connection.close(); bus.stop() }
                let mockSeconds = try await addDevices(connection, count)
                let cpu = cpuSeconds()
                let start = ContinuousClock.now
                let manager = BlueZObjectManager(connection: connection)
                try await manager.start()
                let transport = BlueZTransport(objectManager: manager)
                var reported = 0
                for await event in transport.discover() {
                    if case .appeared = event { reported += 1 }
                    if reported == count { break }
                }
                let wall = milliseconds(ContinuousClock.now - start)
                let cpuPerDevice = (cpuSeconds() - cpu) / Double(count) * 1e6
                print("| 1 000 already present at start, run \(run + 1) | MediaRoute | \(reported) | \(format(wall, 1)) | (\(format(mockSeconds * 1000, 1)) to create) | – | \(format(cpuPerDevice, 1)) |")
            }
            try await bleak(count: count, run: run, present: true)
        }
    }

    /// With `BENCH_PERF_CONTROL=FIFO`, tells `perf record --control=fifo:FIFO -D -1`
    /// to sample only while devices are being added (not the set-up and tear-down).
    static func perfControl(_ command: String) {
        guard let fifo = ProcessInfo.processInfo.environment["BENCH_PERF_CONTROL"], let handle = FileHandle(forWritingAtPath: fifo) else { return }
        handle.write(Data((command + "\n").utf8))
        try? handle.close()
    }

    /// The user-space part of one device without the bus: an `InterfacesAdded`
    /// as the mock sends it, read by ``DBusWireReader``, then judged and made an
    /// endpoint as discovery does. Deterministic, for tuning.
    static func bluezDecode() async throws {
        let properties: [String: DBusValue] = [
            "Address": .string("02:00:00:00:01:2A"), "AddressType": .string("random"), "Name": .string("Speaker 298"),
            "Alias": .string("Speaker 298"), "Adapter": .objectPath("/org/bluez/hci0"), "Paired": .bool(false), "Bonded": .bool(false),
            "Trusted": .bool(false), "Blocked": .bool(false), "Connected": .bool(false), "ServicesResolved": .bool(false),
            "LegacyPairing": .bool(false), "UUIDs": .strings([BlueZ.volumeControlService]), "RSSI": .int16(-58),
            "ManufacturerData": .dictionary(keySignature: "q", valueSignature: "v", [DBusDictEntry(.uint16(0x004C), .variant(.bytes([1, 2])))]),
            "ServiceData": .dictionary(keySignature: "s", valueSignature: "v", []), "AdvertisingFlags": .bytes([6]),
        ]
        var message = DBusMessage.signal(
            path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
            body: [.objectPath("/org/bluez/hci0/dev_02_00_00_00_01_2A"),
                   .dictionary(keySignature: "s", valueSignature: "a{sv}", [DBusDictEntry(.string(BlueZ.device), .properties(properties))])])
        message.sender = ":1.7"
        let bytes = try message.marshalled()
        let transport = BlueZTransport.Configuration()
        _ = transport
        let count = 200_000
        let strings = DBusStringTable()
        var start = cpuSeconds()
        var seen = 0
        for _ in 0..<count {
            let decoded = try bytes.withUnsafeBytes { try DBusWireReader.decode($0, strings: strings) }
            seen += decoded?.body.count ?? 0
        }
        let decodeOnly = (cpuSeconds() - start) / Double(count) * 1e6
        start = cpuSeconds()
        for _ in 0..<count {
            let decoded = try bytes.withUnsafeBytes { try DBusWireReader.decode($0, strings: strings) }
            guard let body = decoded?.body, body.count == 2, let path = body[0].objectPath,
                let deviceValue = body[1].dictionary?[BlueZ.device], let device = BlueZProperties(deviceValue),
                BlueZTransport.endpoint(path: path, properties: device) != nil
            else { continue }
            seen += 1
        }
        let withEndpoint = (cpuSeconds() - start) / Double(count) * 1e6
        // As the object manager reads it: header, then the body into its types.
        start = cpuSeconds()
        for _ in 0..<count {
            try bytes.withUnsafeBytes { raw in
                guard let (_, body) = try DBusWireReader.decodeHeader(raw, strings: strings) else { return }
                let properties = try body.read { reader throws(DBusWireError) -> BlueZProperties? in
                    _ = try reader.objectPath()
                    var device: BlueZProperties?
                    try reader.dictionary { reader throws(DBusWireError) in
                        _ = try reader.string()
                        var entries: [BlueZProperties.Entry] = []
                        entries.reserveCapacity(16)
                        try reader.dictionary { reader throws(DBusWireError) in
                            let name = try reader.string()
                            entries.append(BlueZProperties.Entry(name: name, kept: try reader.variantKeepingContainers()))
                        }
                        device = BlueZProperties(entries: entries)
                    }
                    return device
                }
                if properties?.isEmpty == false { seen += 1 }
            }
        }
        let typed = (cpuSeconds() - start) / Double(count) * 1e6
        print("\(bytes.count)-byte InterfacesAdded: decode \(format(decodeOnly, 2)) µs, decode + endpoint \(format(withEndpoint, 2)) µs, read into BlueZProperties \(format(typed, 2)) µs (\(seen))")
        try await handOver(seen: seen)
    }

    /// What handing a discovery event to its consumer costs: `AsyncStream`
    /// against ``DiscoveryEvents``, 100 events yielded then 100 read.
    static func handOver(seen: Int) async throws {
        guard let device = BlueZProperties(DBusValue.properties([
            "Address": .string("02:00:00:00:01:2A"), "Name": .string("Speaker 298"), "Adapter": .objectPath("/org/bluez/hci0"),
            "UUIDs": .strings([BlueZ.volumeControlService]), "RSSI": .int16(-58),
        ])), let endpoint = BlueZTransport.endpoint(path: "/org/bluez/hci0/dev_02_00_00_00_01_2A", properties: device)
        else { return }
        let rounds = 2_000
        var seen = seen
        let (stream, continuation) = AsyncStream.makeStream(of: DiscoveryEvent.self)
        var start = cpuSeconds()
        var iterator = stream.makeAsyncIterator()
        for _ in 0..<rounds {
            for _ in 0..<100 { continuation.yield(.appeared(endpoint)) }
            for _ in 0..<100 { if case .appeared = await iterator.next() { seen += 1 } }
        }
        let asyncStream = (cpuSeconds() - start) / Double(rounds * 100) * 1e6
        let (events, eventsContinuation) = DiscoveryEvents.makeStream()
        start = cpuSeconds()
        var eventsIterator = events.makeAsyncIterator()
        for _ in 0..<rounds {
            for _ in 0..<100 { eventsContinuation.yield(.appeared(endpoint)) }
            for _ in 0..<100 { if case .appeared = await eventsIterator.next() { seen += 1 } }
        }
        let discoveryEvents = (cpuSeconds() - start) / Double(rounds * 100) * 1e6
        print("one discovery event yielded and read: AsyncStream \(format(asyncStream, 2)) µs, DiscoveryEvents \(format(discoveryEvents, 2)) µs (\(seen))")
    }

    /// Until a peer client (bleak, the libdbus floor) prints "ready".
    static func waitForReady(_ client: LineCollector) async throws {
        while !client.lines.value.contains(where: { $0.1 == "ready" }) { try await Task.sleep(for: .milliseconds(5)) }
    }

    /// The peer client's result line: `fields` numbers separated by spaces.
    static func waitForResult(_ client: LineCollector, fields: Int) async throws -> [String] {
        while true {
            try await Task.sleep(for: .milliseconds(5))
            let result = client.lines.value.last.map { $0.1.split(separator: " ").map(String.init) } ?? []
            if result.count == fields && result.first != "ready" { return result }
        }
    }

    /// `dbus-signal-floor` (Benchmarks/DBusSignalFloor): what libdbus alone
    /// costs per signal here — receive, validate, iterate every value.
    static func libdbusFloor(count: Int, run: Int) async throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("dbus-signal-floor").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            print("| | libdbus alone (C) | skipped: no \(binary) (swift build -c release --product dbus-signal-floor) | | | | |")
            return
        }
        let (bus, mock, connection) = try await startMock()
        defer { mock.kill(SIGKILL); mock.wait(); connection.close(); bus.stop() }
        let client = try LineCollector([binary, "\(count)"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        defer { client.stop() }
        try await waitForReady(client)
        let mockSeconds = try await addDevices(connection, count)
        let result = try await waitForResult(client, fields: 2)
        let seen = Int(result[0]) ?? 0
        let cpu = Double(result[1]) ?? .nan
        print("| devices added while scanning, run \(run + 1) | libdbus alone (C: receive + walk every value) | \(seen + 1) | – | \(format(mockSeconds * 1000, 1)) | – | \(seen > 0 ? format(cpu / Double(seen) * 1e6, 1) : "–") |")
    }

    /// bleak in its own process against a fresh mock.
    static func bleak(count: Int, run: Int, present: Bool) async throws {
        let python = ProcessInfo.processInfo.environment["BLEAK_PYTHON"] ?? "/var/tmp/bleak-venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            print("| | bleak | skipped: no \(python) (python3 -m venv /var/tmp/bleak-venv && /var/tmp/bleak-venv/bin/pip install bleak) | | | | |")
            return
        }
        let (bus, mock, connection) = try await startMock()
        defer { mock.kill(SIGKILL); mock.wait(); connection.close(); bus.stop() }
        var mockSeconds = Double.nan
        if present { mockSeconds = try await addDevices(connection, count) }
        let scanner = try LineCollector([python, "Benchmarks/bleak_scan.py", "\(count)", present ? "5" : "60"],
                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        defer { scanner.stop() }
        try await waitForReady(scanner)
        if !present { mockSeconds = try await addDevices(connection, count) }
        let result = try await waitForResult(scanner, fields: 3)
        let seen = Int(result[0]) ?? 0
        let cpu = Double(result[1]) ?? .nan
        let wall = (Double(result[2]) ?? .nan) * 1000
        let label = present ? "1 000 already present at start, run \(run + 1)" : "devices added while scanning, run \(run + 1)"
        let ratio = present ? "–" : format(wall / (mockSeconds * 1000), 2)
        let mockCell = present ? "(\(format(mockSeconds * 1000, 1)) to create)" : format(mockSeconds * 1000, 1)
        print("| \(label) | bleak | \(seen) | \(format(wall, 1)) | \(mockCell) | \(ratio) | \(seen > 0 ? format(cpu / Double(seen) * 1e6, 1) : "–") |")
    }
}
