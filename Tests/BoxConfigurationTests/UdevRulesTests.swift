import BoxConfiguration
import Foundation
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// The repository's files.
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

@Suite(.timeLimit(.minutes(1)))
struct UdevRulesTests {
    static var canRunUdevadm: Bool {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/udevadm"),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        else {
            print("skipping: udevadm test needs root, /usr/bin/udevadm (apt-get install udev) and unshare")
            return false
        }
        return true
    }

    /// `udevadm test` with only `rules` installed, in a private mount namespace: tmpfs
    /// over every rules directory (so no stock rule renames an interface) and over /run.
    func udevadmTest(_ device: String, rules: [String: String], recordDatabaseInto record: String? = nil) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-rules-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, text) in rules { try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8) }
        let script = """
            set -e
            for d in /etc/udev/rules.d /usr/lib/udev/rules.d /lib/udev/rules.d /run; do
              if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi
            done
            cp \(directory)/*.rules /etc/udev/rules.d/
            udevadm test --action=add \(device) || true
            \(record.map { "cp /run/udev/data/* \($0)/ 2>/dev/null || true" } ?? "")
            """
        return try await ChildProcess.runOffPool(["/usr/bin/unshare", "-m", "/bin/sh", "-c", script]).output
    }

    func properties(_ output: String) -> [String: String] {
        SysfsAdapterReader.parseUevent(output)
    }

    @Test func theShippedRulesPassTheChecker() throws {
        let text = try String(contentsOfFile: repository + "/udev/70-mediaroute.rules", encoding: .utf8)
        #expect(UdevRulesChecker.check(text, file: "70-mediaroute.rules").isEmpty)
    }

    @Test func theCheckerNamesFileAndLineOfBadValues() {
        let text = """
            # a box's local rules
            SUBSYSTEM=="net", KERNEL=="wlan1", ENV{MEDIAROUTE_WIFI_SCAN}="loud"
            SUBSYSTEM=="net", ENV{MEDIAROUTE_ENABLED}=="1", GOTO="x"
            SUBSYSTEM=="net", KERNEL=="eth1", \\
              ENV{MEDIAROUTE_ENABLED}="yes"
            SUBSYSTEM=="net", ENV{MEDIAROUTE_COLOUR}:="blue", ENV{MEDIAROUTE_ROLE}="primary"
            """
        let errors = UdevRulesChecker.check(text, file: "/etc/udev/rules.d/71-local.rules")
        #expect(errors.map(\.line) == [2, 4, 6])
        #expect(errors.map(\.file) == Array(repeating: "/etc/udev/rules.d/71-local.rules", count: 3))
        #expect(errors[0].message.contains("MEDIAROUTE_WIFI_SCAN must be one of off, passive, active, p2p, not \"loud\""))
        #expect(errors[1].message.contains("MEDIAROUTE_ENABLED must be 0 or 1"))
        #expect(errors[2].message.contains("unknown MediaRoute property MEDIAROUTE_COLOUR"))
    }

    @Test func udevadmGivesThisMachinesInterfacesTheirProperties() async throws {
        guard Self.canRunUdevadm else { return }
        let rules = ["70-mediaroute.rules": try String(contentsOfFile: repository + "/udev/70-mediaroute.rules", encoding: .utf8)]
        // The machine's own interfaces (other tests plug "mr…" veths in parallel).
        func machineInterfaces() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: "/sys/class/net").filter { !$0.hasPrefix("mr") }.sorted()
        }
        let names = try machineInterfaces()
        for name in names {
            let uevent = try String(contentsOfFile: "/sys/class/net/\(name)/uevent", encoding: .utf8)
            let devtype = SysfsAdapterReader.parseUevent(uevent)["DEVTYPE"] ?? ""
            let output = try await udevadmTest("/sys/class/net/\(name)", rules: rules)
            let values = properties(output)
            #expect(values["INTERFACE"] == name, "\(output.suffix(400))")
            if name == "lo" || !devtype.isEmpty && devtype != "wlan" {
                #expect(values["MEDIAROUTE_TRANSPORT"] == nil, "\(name)")
            } else {
                #expect(values["MEDIAROUTE_TRANSPORT"] == (devtype == "wlan" ? "wifi" : "lan"), "\(name)")
                #expect(values["SYSTEMD_WANTS"]?.contains("mediarouted.service") == true)
                #expect(values["TAGS"]?.contains(":systemd:") == true)
            }
        }
        // Nothing was renamed.
        #expect(try machineInterfaces() == names)
    }

    @Test func aVethCreatedByTheTestIsTaggedAndALocalRuleOverridesIt() async throws {
        guard Self.canRunUdevadm, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") || FileManager.default.isExecutableFile(atPath: "/sbin/ip") else { return }
        let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"
        let suffix = String(UUID().uuidString.prefix(4)).lowercased()
        let (status, output) = try await ChildProcess.runOffPool([ip, "link", "add", "mrv\(suffix)a", "type", "veth", "peer", "name", "mrv\(suffix)b"])
        try #require(status == 0, "\(output)")
        defer { _ = try? ChildProcess.run([ip, "link", "del", "mrv\(suffix)a"]) }
        var rules = ["70-mediaroute.rules": try String(contentsOfFile: repository + "/udev/70-mediaroute.rules", encoding: .utf8)]
        let plain = properties(try await udevadmTest("/sys/class/net/mrv\(suffix)a", rules: rules))
        #expect(plain["MEDIAROUTE_TRANSPORT"] == "lan")
        #expect(plain["MEDIAROUTE_ENABLED"] == nil)
        rules["71-local.rules"] = "SUBSYSTEM==\"net\", KERNEL==\"mrv\(suffix)b\", ENV{MEDIAROUTE_ENABLED}=\"0\", ENV{MEDIAROUTE_ROLE}=\"standby\"\n"
        let overridden = properties(try await udevadmTest("/sys/class/net/mrv\(suffix)b", rules: rules))
        #expect(overridden["MEDIAROUTE_TRANSPORT"] == "lan")
        #expect(overridden["MEDIAROUTE_ENABLED"] == "0")
        #expect(overridden["MEDIAROUTE_ROLE"] == "standby")

        // The database file udevadm wrote (in the private /run), read back by the daemon's reader
        // together with the real sysfs uevent.
        let recorded = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-udevdb-\(suffix)").path
        try FileManager.default.createDirectory(atPath: recorded, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: recorded) }
        _ = try await udevadmTest("/sys/class/net/mrv\(suffix)b", rules: rules, recordDatabaseInto: recorded)
        let files = try FileManager.default.contentsOfDirectory(atPath: recorded)
        #expect(files.count == 1 && files[0].hasPrefix("n"), "\(files)")
        let record = try #require(SysfsAdapterReader(udevDataRoot: recorded).record(subsystem: "net", name: "mrv\(suffix)b"))
        #expect(record.devtype == "")
        #expect(record.properties["MEDIAROUTE_TRANSPORT"] == "lan")
        #expect(record.properties["MEDIAROUTE_ENABLED"] == "0")
        let settings = try AdapterSettings.resolve(record, configuration: DaemonConfiguration()).get()
        #expect(settings.transport == .lan && !settings.enabled && settings.role == .standby && settings.source == "udev")
    }

    @Test func brokenRulesAreReportedByUdevadm() async throws {
        guard Self.canRunUdevadm else { return }
        let output = try await udevadmTest("/sys/class/net/lo", rules: [
            "70-mediaroute.rules": try String(contentsOfFile: repository + "/udev/70-mediaroute.rules", encoding: .utf8),
            "71-broken.rules": "SUBSYSTEM==\"net\", ENV{MEDIAROUTE_TRANSPORT}=\"lan\nSUBSYSTEM==\"net\", BOGUS{x}=\"1\"\n",
        ])
        // systemd 252's udevadm test exits 1 even for good rules: the output is what tells.
        #expect(output.contains("71-broken.rules:1"), "\(output.prefix(2000))")
        #expect(output.contains("71-broken.rules:2"))
        #expect(!output.contains("70-mediaroute.rules:"), "the shipped rules parse cleanly")
    }
}
