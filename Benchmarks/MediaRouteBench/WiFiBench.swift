import Foundation
import LANTransport
import MediaRouteTestSupport
import Transport
import WiFiTransport
import MediaRouteTesting

/// Issue 8's figures: scan-dump parsing throughput, and how fast LAN discovery
/// restarts after the box's network changes.
extension Bench {
    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func wifi() async throws {
        // 1 000 BSS entries with SSID, P2P and Wi-Fi Display elements, as one dump.
        var dump: [UInt8] = []
        for index in 0..<1000 {
            let bssid: [UInt8] = [0x02, 0, 0, 0, UInt8(index >> 8), UInt8(index & 0xFF)]
            dump += Bytes.scanMessage(bssid: bssid, frequency: 2412 + UInt32(index % 3) * 25, signal: -4000 - Int32(index), elements: Bytes.tvElements)
        }
        dump += Bytes.done
        let mapper = WiFiDeviceMapper(setupSSIDPatterns: ["Sonos_*"])
        var rates: [Double] = []
        for _ in 0..<9 {
            let start = monotonicSeconds()
            let results = try ScanResult.parseDump(dump, familyID: Bytes.familyID)
            let endpoints = results.compactMap(mapper.endpoint(for:))
            let elapsed = monotonicSeconds() - start
            precondition(endpoints.count == 1000)
            rates.append(1000 / elapsed)
        }
        rates.sort()
        print("scan dump: \(dump.count) bytes, 1000 BSS with SSID + P2P + WFD elements, parsed and mapped to endpoints")
        print("| runs | median BSS/s | min | max |")
        print("|---|---|---|---|")
        print("| 9 | \(format(rates[4], 0)) | \(format(rates[0], 0)) | \(format(rates[8], 0)) |")
        try await rediscovery()
    }

    /// A veth whose far end is in a namespace with a listener on the SSDP group; the
    /// near end gets an address and comes up; time until the M-SEARCH arrives there.
    static func rediscovery() async throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            print("rediscovery: needs root, ip and python3")
            return
        }
        var latencies: [Double] = []
        var commands: [Double] = []
        for run in 0..<9 {
            let namespace = "mrbench\(run)", outside = "mrbench\(run)a", inside = "mrbench\(run)b"
            func ip(_ arguments: [String]) throws { _ = try ChildProcess.run(["/usr/sbin/ip"] + arguments) }
            try ip(["netns", "add", namespace])
            defer {
                try? ip(["link", "del", outside])
                try? ip(["netns", "del", namespace])
            }
            try ip(["link", "add", outside, "type", "veth", "peer", "name", inside])
            try ip(["link", "set", inside, "netns", namespace])
            try ip(["-n", namespace, "addr", "add", "198.51.100.2/24", "dev", inside])
            try ip(["-n", namespace, "link", "set", inside, "up"])
            try ip(["addr", "add", "198.51.100.1/24", "dev", outside])
            let listener = try LineCollector(["/usr/sbin/ip", "netns", "exec", namespace, "/usr/bin/python3", "-u", "-c", """
                import socket, time
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("", 1900))
                s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("239.255.255.250") + socket.inet_aton("198.51.100.2"))
                print("ready", flush=True)
                while True:
                    data, _ = s.recvfrom(4096)
                    if data.startswith(b"M-SEARCH"):
                        print("%.6f" % time.clock_gettime(time.CLOCK_MONOTONIC), flush=True)
                """], environment: [:])
            defer { listener.stop() }
            while !listener.lines.value.contains(where: { $0.1 == "ready" }) { try await Task.sleep(for: .milliseconds(5)) }
            let monitor = try NetworkChangeMonitor()
            defer { monitor.stop() }
            let searcher = SSDPSearcher()
            let restarter = DiscoveryRestarter(changes: monitor.changes, searcher: searcher)
            defer { restarter.stop() }
            try await Task.sleep(for: .milliseconds(50))
            let start = monotonicSeconds()
            try ip(["link", "set", outside, "up"])
            commands.append(monotonicSeconds() - start)
            var arrival: Double?
            for _ in 0..<400 {
                if let line = listener.lines.value.first(where: { Double($0.1) != nil }) {
                    arrival = Double(line.1)
                    break
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            guard let arrival else {
                print("run \(run): no M-SEARCH arrived")
                continue
            }
            latencies.append(arrival - start)
        }
        latencies.sort()
        commands.sort()
        guard latencies.count >= 5 else { return }
        print("\nlink up → M-SEARCH received in the namespace (from just before `ip link set up` runs)")
        print("| runs | median ms | min ms | max ms | of which the `ip` command itself, median ms |")
        print("|---|---|---|---|---|")
        print("| \(latencies.count) | \(format(latencies[latencies.count / 2] * 1000, 2)) | \(format(latencies[0] * 1000, 2)) | \(format(latencies[latencies.count - 1] * 1000, 2)) | \(format(commands[commands.count / 2] * 1000, 2)) |")
    }
}
