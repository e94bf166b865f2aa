import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteTestSupport
import MediaRouteTesting

/// #37's figures: what each attack costs the daemon. The daemon discovers (a picker is open) on
/// a namespace lab's interface with an honest renderer there, while a host beside the renderer
/// sends one attack at a time for a few seconds; measured: the daemon's CPU seconds per
/// 1 000 attack datagrams (from /proc/PID/stat), how long `mediaroutectl status` takes meanwhile,
/// and whether `devices` still lists the renderer afterwards. Goal: under 20 % of a core at 10 000 datagrams/s, status within 1 s.
extension Bench {
    static let attackScript = #"""
        import random, socket, struct, sys, time
        source, kind, rate, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((source, 0))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
        def name(n): return b"".join(bytes([len(l)]) + l.encode() for l in n.split(".")) + b"\0"
        def ptrs(first, count):
            records = b"".join(name("_googlecast._tcp.local") + struct.pack(">HHIH", 12, 1, 86400, len(name("Fake %d._googlecast._tcp.local" % i)))
                               + name("Fake %d._googlecast._tcp.local" % i) for i in range(first, first + count))
            return struct.pack(">HHHHHH", 0, 0x8400, 0, count, 0, 0) + records
        def ssdp(nts, udn, location):
            return ("NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nCACHE-CONTROL: max-age=1800\r\nLOCATION: " + location +
                    "\r\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\r\nNTS: " + nts + "\r\nUSN: " + udn + "::urn:schemas-upnp-org:device:MediaRenderer:1\r\n\r\n").encode()
        udn = sys.argv[5] if len(sys.argv) > 5 else "uuid:none"
        sent, start, n = 0, time.monotonic(), 0
        if kind == "none":              # the same measure with no attack, for comparison
            time.sleep(seconds)
        while kind != "none" and time.monotonic() - start < seconds:
            if kind == "mdns-ptr":      # 9 KB responses full of PTRs, new instances each time
                data, target = ptrs(n * 120, 120), ("224.0.0.251", 5353)
            elif kind == "mdns-small":  # empty 12-byte responses (each used to re-resolve the whole cache)
                data, target = struct.pack(">HHHHHH", 0, 0x8400, 0, 0, 0, 0), ("224.0.0.251", 5353)
            elif kind == "ssdp-devices":  # made-up devices whose descriptions never answer
                data, target = ssdp("ssdp:alive", "uuid:fake-%d" % n, "http://%s:%d/d.xml" % (source, 40000 + n % 1000)), ("239.255.255.250", 1900)
            elif kind == "ssdp-byebye":   # byebyes for the honest renderer
                data, target = ssdp("ssdp:byebye", udn, "http://%s:80/d.xml" % source), ("239.255.255.250", 1900)
            s.sendto(data, target)
            sent += 1
            n += 1
            behind = sent / rate - (time.monotonic() - start)
            if behind > 0: time.sleep(behind)
        print(sent, flush=True)
        """#

    static func cpuTicks(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        return (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    }

    static func hostile(daemonBinary: String, mediaroutectl: String, rate: Int, seconds: Double) async throws {
        guard getuid() == 0, NamespaceLab.renderersAvailable else {
            print("hostile: needs root, network namespaces and gmediarender")
            return
        }
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let uuid = "0a1b2c3d-0000-4000-8000-0000000000b7"
        let renderer = try lab.gmediarender(in: room, name: "Bench TV", uuid: uuid)
        defer { renderer.kill() }
        let attacker = room.deviceAddress.split(separator: ".").dropLast().joined(separator: ".") + ".66"
        try NamespaceLab.ip(["-n", room.namespace, "addr", "add", "\(attacker)/24", "dev", room.inside])
        let bus = try PrivateBus()
        defer { bus.stop() }
        let daemon = try ChildProcess([
            daemonBinary, "--bus", bus.address, "--lan", "on", "--lan-interfaces", room.outside, "--adapters", "off",
            "--push-listen", "off", "--config", "/dev/null", "--log-level", "error",
        ])
        defer { daemon.kill(); daemon.wait() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        for _ in 0..<100 where (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil == nil { try await Task.sleep(for: .milliseconds(100)) }
        _ = try await connection.call(destination: DaemonNames.busName, path: DaemonNames.root, interface: DaemonNames.manager, member: "StartDiscovery")
        // The honest renderer first: found and described before any attack.
        var found = false
        for _ in 0..<30 where !found {
            let (_, output) = try ChildProcess.run([mediaroutectl, "devices", "--bus", bus.address, "--seconds", "1"])
            found = output.contains("Bench TV")
        }
        if !found { print("hostile: the daemon did not find the renderer before the attacks") }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        print("daemon \(daemonBinary); attacker beside the renderer, \(rate) datagrams/s for \(seconds) s each; status every 0.5 s meanwhile")
        print("| attack | datagrams sent | daemon CPU s / 1 000 datagrams | share of a core | `status` p50 ms | `status` max ms | renderer still listed after |")
        print("|---|---|---|---|---|---|---|")
        for kind in ["none", "mdns-ptr", "mdns-small", "ssdp-devices", "ssdp-byebye"] {
            let before = cpuTicks(daemon.pid)
            let started = monotonicSeconds()
            let sender = try LineCollector(["/usr/sbin/ip", "netns", "exec", room.namespace, "/usr/bin/python3", "-u", "-c", attackScript,
                                            attacker, kind, String(rate), String(seconds), "uuid:\(uuid)"], environment: [:])
            var latencies: [Double] = []
            var listed = true
            while monotonicSeconds() - started < seconds + 0.5 {
                let t0 = monotonicSeconds()
                _ = try ChildProcess.run([mediaroutectl, "status", "--bus", bus.address])
                latencies.append((monotonicSeconds() - t0) * 1000)
                try await Task.sleep(for: .milliseconds(500))
            }
            while sender.lines.value.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            listed = try ChildProcess.run([mediaroutectl, "devices", "--bus", bus.address, "--seconds", "0.5"]).1.contains("Bench TV")
            let elapsed = monotonicSeconds() - started
            let cpu = (cpuTicks(daemon.pid) - before) / ticks
            sender.stop()
            let sent = Int(sender.lines.value.first?.1 ?? "") ?? 0
            latencies.sort()
            print("| \(kind) | \(sent) | \(format(cpu / Double(max(sent, 1)) * 1000, 4)) | \(format(cpu / elapsed * 100, 1)) % | "
                + "\(format(latencies[latencies.count / 2], 0)) | \(format(latencies.last ?? 0, 0)) | \(listed ? "yes" : "**no**") |")
            try await Task.sleep(for: .seconds(2))
        }
    }
}
