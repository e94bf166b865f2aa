import BoxConfiguration
import BuildStamp
import Foundation
import MediaRouteTestSupport
import Testing
import MediaRouteTesting
import RoutingModel

/// The unit, the sysusers entry, the example configuration, and make install/uninstall.
@Suite(.timeLimit(.minutes(1)))
struct DeploymentTests {
    static var mediarouted: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("mediarouted").path
    }

    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-deploy-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// `systemd-analyze verify` on the unit with its binary paths pointing at this build.
    func verify(_ unit: String) async throws -> (Int32, String) {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/mediarouted.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/mediarouted", with: Self.mediarouted).write(toFile: path, atomically: true, encoding: .utf8)
        return try await ChildProcess.runOffPool(["/usr/bin/systemd-analyze", "verify", path], environment: ["SYSTEMD_LOG_LEVEL": "info"])
    }

    @Test func theUnitVerifiesAndIsHardened() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), FileManager.default.fileExists(atPath: "/lib/systemd/system/dbus.socket") else {
            print("skipping: systemd-analyze verify needs systemd and dbus.socket (apt-get install systemd dbus)")
            return
        }
        let unit = try String(contentsOfFile: repository + "/systemd/mediarouted.service", encoding: .utf8)
        let (status, output) = try await verify(unit)
        #expect(status == 0, "\(output)")
        #expect(!output.contains("mediarouted.service:"), "\(output)")
        for directive in ["Type=dbus", "BusName=org.mediaroute", "ProtectSystem=strict", "PrivateTmp=yes", "NoNewPrivileges=yes",
                          "User=mediaroute", "RuntimeDirectory=mediaroute", "CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_BIND_SERVICE", "AmbientCapabilities=CAP_NET_ADMIN CAP_NET_BIND_SERVICE",
                          "RestrictRealtime=yes", "ProtectProc=invisible", "ProcSubset=pid", "ProtectHome=tmpfs", "LimitNOFILE=4096",
                          "MemoryMax=160M", "TasksMax=128"] {
            #expect(unit.contains(directive + "\n"), "\(directive)")
        }
        // Nothing opens a raw or packet socket: the capability is not granted.
        #expect(!unit.contains("CAP_NET_RAW"))
        // systemd's own reading of the hardening (Docs/operations.md gives the figure): no worse than 2.3
        // (2.2 before CAP_NET_BIND_SERVICE, which AirPlay 2's PTP on 319/320 needs).
        let (_, security) = try await ChildProcess.runOffPool(["/usr/bin/systemd-analyze", "security", "--offline=yes", repository + "/systemd/mediarouted.service"])
        if let line = security.split(separator: "\n").last(where: { $0.contains("Overall exposure level") }),
            let score = line.split(separator: " ").compactMap({ Double($0) }).first
        {
            #expect(score <= 2.3, "\(line)")
        } else {
            Issue.record("no exposure level in: \(security.suffix(300))")
        }
        // A mistake in the unit is caught.
        let (_, broken) = try await verify(unit.replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSystem=stricter"))
        #expect(broken.contains("mediarouted.service:") && broken.lowercased().contains("protect system"), "\(broken)")
    }

    /// The session helper's user unit: systemd reads it as a user unit, it starts and stops with
    /// the session's PipeWire (as WirePlumber does), and the command it runs exists: in a session
    /// without PipeWire it says so in one line and ends without error (no restart loop).
    @Test func theSessionHelpersUserUnitVerifiesAndItsCommandRuns() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            print("skipping: systemd-analyze verify needs systemd (apt-get install systemd)")
            return
        }
        let unit = try String(contentsOfFile: repository + "/systemd/mediaroute-pipewire.service", encoding: .utf8)
        for directive in ["BindsTo=pipewire.service", "After=pipewire.service", "WantedBy=pipewire.service", "ConditionUser=!@system",
                          "ExecStart=/usr/local/bin/mediarouted pipewire-session --bus system"] {
            #expect(unit.contains(directive + "\n"), "\(directive)")
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func verify(_ text: String) async throws -> (Int32, String) {
            let path = directory + "/mediaroute-pipewire.service"
            try text.replacingOccurrences(of: "/usr/local/bin/mediarouted", with: Self.mediarouted).write(toFile: path, atomically: true, encoding: .utf8)
            return try await ChildProcess.runOffPool(
                ["/usr/bin/systemd-analyze", "--user", "verify", path], environment: ["SYSTEMD_LOG_LEVEL": "info", "XDG_RUNTIME_DIR": directory])
        }
        let (status, output) = try await verify(unit)
        #expect(status == 0 && !output.contains("mediaroute-pipewire.service:"), "\(output)")
        let (brokenStatus, broken) = try await verify(unit.replacingOccurrences(of: "ExecStart=/", with: "ExecStart=relative/"))
        #expect(brokenStatus != 0 || broken.contains("mediaroute-pipewire.service:"), "\(broken)")
        let session = directory + "/run-user"
        try FileManager.default.createDirectory(atPath: session, withIntermediateDirectories: true)
        let (helperStatus, said) = try await ChildProcess.runOffPool(
            [Self.mediarouted, "pipewire-session", "--bus", "unix:path=\(directory)/no-bus"], environment: ["XDG_RUNTIME_DIR": session])
        #expect(helperStatus == 0, "\(said)")
        let lines = said.split(separator: "\n").filter { !$0.contains("[ServiceLifecycle]") }
        #expect(lines.count == 1 && lines[0].contains("no PipeWire in this session"), "\(said)")
    }

    @Test func theSysusersEntryCreatesTheUserAndGroup() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-sysusers") else {
            print("skipping: /usr/bin/systemd-sysusers is missing (apt-get install systemd)")
            return
        }
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        let (status, output) = try await ChildProcess.runOffPool(["/usr/bin/systemd-sysusers", "--root=\(root)", repository + "/systemd/mediaroute.sysusers"])
        #expect(status == 0, "\(output)")
        #expect(try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8).hasPrefix("mediaroute:x:"))
        let groups = try String(contentsOfFile: root + "/etc/group", encoding: .utf8)
        #expect(groups.hasPrefix("mediaroute:x:"))
        // The unit's SupplementaryGroups=bluetooth needs the group even where bluez is not installed.
        #expect(groups.split(separator: "\n").contains { $0.hasPrefix("bluetooth:x:") }, "\(groups)")
    }

    /// The daemon and the tool (the same binary, run as mediaroutectl) say one version, the
    /// package's, and the commit they were built from: the checkout's, stamped at build time.
    @Test func theDaemonAndTheToolSayThePackagesVersionAndCommit() async throws {
        let (status, output) = try await ChildProcess.runOffPool([Self.mediarouted, "--version"])
        #expect(status == 0, "\(output)")
        let said = output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(said == "mediarouted \(MediaRouteVersion.current) (commit \(MediaRouteBuild.commit))", "\(output)")
        let version = MediaRouteVersion.current
        #expect(version.split(separator: ".").count == 3 && version.split(separator: ".").allSatisfy { Int($0) != nil })
        let (gitStatus, head) = try await ChildProcess.runOffPool(["/usr/bin/git", "-C", repository, "rev-parse", "--short=12", "HEAD"])
        if gitStatus == 0 {
            #expect(
                MediaRouteBuild.commit.hasPrefix(head.trimmingCharacters(in: .whitespacesAndNewlines)),
                "stamped \(MediaRouteBuild.commit), checkout at \(head): build with make, which stamps the commit (scripts/build-stamp.sh)")
        } else {
            print("skipping the commit check: \(repository) is not a git checkout (\(head))")
        }
        let tool = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: tool) }
        try FileManager.default.createSymbolicLink(atPath: tool + "/mediaroutectl", withDestinationPath: Self.mediarouted)
        let (toolStatus, toolOutput) = try await ChildProcess.runOffPool([tool + "/mediaroutectl", "--version"])
        #expect(toolStatus == 0 && toolOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "mediaroutectl " + said.dropFirst("mediarouted ".count), "\(toolOutput)")
    }

    /// The manual pages the package installs say what `--help` says: every option of the
    /// daemon and every subcommand of the tool (the development-only `demo` aside).
    @Test func theManualPagesNameEveryOptionAndSubcommand() async throws {
        let daemonPage = try String(contentsOfFile: repository + "/man/mediarouted.8", encoding: .utf8).replacingOccurrences(of: "\\-", with: "-")
        let (status, help) = try await ChildProcess.runOffPool([Self.mediarouted, "--help"])
        #expect(status == 0)
        let options = Set(help.split(whereSeparator: { !($0.isLetter || $0 == "-") }).filter { $0.hasPrefix("--") && $0.count > 2 }.map(String.init))
        #expect(options.count > 15, "\(help)")
        for option in options { #expect(daemonPage.contains(".B " + option), "man/mediarouted.8 lacks \(option)") }
        let toolPage = try String(contentsOfFile: repository + "/man/mediaroutectl.1", encoding: .utf8)
        let tool = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: tool) }
        try FileManager.default.createSymbolicLink(atPath: tool + "/mediaroutectl", withDestinationPath: Self.mediarouted)
        let (_, toolHelp) = try await ChildProcess.runOffPool([tool + "/mediaroutectl", "--help"])
        let subcommands = toolHelp.components(separatedBy: "SUBCOMMANDS:").last?.split(separator: "\n")
            .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }.compactMap { $0.split(separator: " ").first.map(String.init) } ?? []
        #expect(subcommands.count >= 14, "\(toolHelp)")
        for subcommand in subcommands where subcommand != "demo" && subcommand != "See" {
            #expect(toolPage.contains(".B " + subcommand + "\n"), "man/mediaroutectl.1 lacks \(subcommand)")
        }
    }

    /// One version everywhere: the code's, CHANGELOG.md's newest entry and debian/changelog's.
    @Test func theChangelogsNameTheCodesVersion() throws {
        let changelog = try String(contentsOfFile: repository + "/CHANGELOG.md", encoding: .utf8)
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") }
        #expect(newest?.hasPrefix("## \(MediaRouteVersion.current) ") == true, "CHANGELOG.md's newest entry: \(newest ?? "none")")
        let debian = try String(contentsOfFile: repository + "/debian/changelog", encoding: .utf8)
        #expect(debian.hasPrefix("mediaroute (\(MediaRouteVersion.current)) "), "debian/changelog begins: \(debian.prefix(40))")
    }

    @Test func theExampleConfigurationIsValidAndTheDaemonChecksIt() async throws {
        let example = repository + "/config/mediaroute.conf"
        #expect(try DaemonConfiguration.load(path: example, required: true) == DaemonConfiguration())
        let (status, output) = try await ChildProcess.runOffPool([Self.mediarouted, "--config", example, "--check-config"])
        #expect(status == 0, "\(output)")
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "[daemon]\nbus = system\n\n[wifi]\nscan-mode = sideways\n".write(toFile: directory + "/bad.conf", atomically: true, encoding: .utf8)
        let (badStatus, badOutput) = try await ChildProcess.runOffPool([Self.mediarouted, "--config", directory + "/bad.conf", "--bus", "session"])
        #expect(badStatus == 78)
        #expect(badOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            == "mediarouted: \(directory)/bad.conf:5: scan-mode must be off, passive, active, p2p, not \"sideways\"")
    }

    @Test func makeInstallAndUninstallUseTheStandardPlaces() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/make") else {
            print("skipping: make is missing")
            return
        }
        let destination = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let binaries = URL(fileURLWithPath: Self.mediarouted).deletingLastPathComponent().path
        let (status, output) = try await ChildProcess.runOffPool([
            "/usr/bin/make", "-s", "-C", repository, "install-files", "DESTDIR=\(destination)", "BINARIES=\(binaries)",
        ])
        try #require(status == 0, "\(output)")
        let expected = [
            "/usr/local/bin/mediarouted", "/usr/local/bin/mediaroutectl", "/usr/share/dbus-1/system.d/org.mediaroute.conf",
            "/lib/systemd/system/mediarouted.service", "/usr/lib/systemd/user/mediaroute-pipewire.service",
            "/usr/lib/sysusers.d/mediaroute.conf", "/usr/lib/udev/rules.d/70-mediaroute.rules",
            "/etc/mediaroute/mediaroute.conf", "/usr/local/share/doc/mediaroute/operations.md", "/usr/local/share/doc/mediaroute/audio.md",
            "/usr/local/share/man/man8/mediarouted.8", "/usr/local/share/man/man1/mediaroutectl.1",
        ]
        for file in expected { #expect(FileManager.default.fileExists(atPath: destination + file), "\(file)") }
        // One binary, stripped; the tool is a link to it.
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: destination + "/usr/local/bin/mediaroutectl") == "mediarouted")
        let installedSize = try FileManager.default.attributesOfItem(atPath: destination + "/usr/local/bin/mediarouted")[.size] as? Int
        let builtSize = try FileManager.default.attributesOfItem(atPath: Self.mediarouted)[.size] as? Int
        #expect(installedSize ?? 0 > 0 && installedSize ?? 0 < builtSize ?? 0, "installed \(installedSize ?? 0) bytes of \(builtSize ?? 0)")
        // An administrator's edited configuration survives a reinstall and an uninstall.
        try "[lan]\nenabled = no\n".write(toFile: destination + "/etc/mediaroute/mediaroute.conf", atomically: true, encoding: .utf8)
        _ = try await ChildProcess.runOffPool(["/usr/bin/make", "-s", "-C", repository, "install-files", "DESTDIR=\(destination)", "BINARIES=\(binaries)"])
        #expect(try String(contentsOfFile: destination + "/etc/mediaroute/mediaroute.conf", encoding: .utf8) == "[lan]\nenabled = no\n")
        let (removed, removeOutput) = try await ChildProcess.runOffPool(["/usr/bin/make", "-s", "-C", repository, "uninstall", "DESTDIR=\(destination)"])
        #expect(removed == 0, "\(removeOutput)")
        for file in expected where file != "/etc/mediaroute/mediaroute.conf" {
            #expect(!FileManager.default.fileExists(atPath: destination + file), "\(file) left behind")
        }
        #expect(FileManager.default.fileExists(atPath: destination + "/etc/mediaroute/mediaroute.conf"))
    }
}
