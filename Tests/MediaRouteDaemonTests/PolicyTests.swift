import DBus
import Foundation
import MediaRouteBusAPI
import MediaRouteClient
import SystemRouting
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// The repository's D-Bus policy file.
let policyFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("dbus/org.mediaroute.conf").path

/// A system-type bus with Debian's default-deny rules and our policy included.
final class PolicyBus: Sendable {
    let directory: String
    let address: String
    let daemon: ChildProcess

    init() throws {
        directory = "/tmp/mediaroute-policy-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        address = "unix:path=\(directory)/bus"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <deny own="*"/>
                <deny send_type="method_call"/>
                <allow send_destination="org.freedesktop.DBus"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
              </policy>
              <!-- logind as the system's policy has it: its name for root, its methods for everyone. -->
              <policy user="root"><allow own="org.freedesktop.login1"/></policy>
              <policy context="default"><allow send_destination="org.freedesktop.login1"/></policy>
              <include>\(policyFile)</include>
            </busconfig>
            """
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        daemon = try ChildProcess(["/usr/bin/dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"])
        let deadline = Date().addingTimeInterval(5)
        while !PrivateBus.accepts(directory + "/bus") {
            guard Date() < deadline else { throw PrivateBusError(message: "the policy bus did not start") }
            usleep(5_000)
        }
        chmod(directory + "/bus", 0o777)
    }

    deinit {
        daemon.kill()
        daemon.wait()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable && getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct PolicyTests {
    @Test func onlyRootAndTheGroupControlRoutesEveryoneMayLook() async throws {
        let bus = try PolicyBus()
        let daemon = try ChildProcess([RunningDaemon.binary, "--bus", bus.address, "--simulate", "--log-level", "warning", "--push-listen", "127.0.0.1:0"])
        defer { daemon.kill(); daemon.wait() }
        let probe = try await DBusConnection.connect(to: .address(bus.address))
        #expect(await eventually(timeout: .seconds(10)) { (try? await probe.nameOwner(of: DaemonNames.busName)) ?? nil != nil })

        func gdbus(asNobody: Bool, _ arguments: [String]) async throws -> (Int32, String) {
            let call = ["/usr/bin/gdbus", "call", "--address", bus.address, "--dest", DaemonNames.busName,
                        "--object-path", "/org/mediaroute"] + arguments
            let command = asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + call : call
            return try await ChildProcess.runOffPool(command)
        }
        let start = ["--method", "org.mediaroute.Manager1.StartDiscovery"]
        let look = ["--method", "org.freedesktop.DBus.Properties.Get", "org.mediaroute.Manager1", "Protocols"]

        let (rootStatus, _) = try await gdbus(asNobody: false, start)
        #expect(rootStatus == 0, "root controls routes")
        let (nobodyStatus, nobodyOutput) = try await gdbus(asNobody: true, start)
        #expect(nobodyStatus != 0)
        #expect(nobodyOutput.contains("AccessDenied"), "\(nobodyOutput)")
        // Pins are managed by root and the group only: nobody may forget or accept one.
        for method in ["ListTrust", "ForgetTrust", "AcceptTrust"] {
            let arguments = ["--method", "org.mediaroute.Manager1." + method] + (method == "ListTrust" ? [] : ["Living Room TV"])
            let (status, output) = try await gdbus(asNobody: true, arguments)
            #expect(status != 0 && output.contains("AccessDenied"), "\(method): \(output)")
        }
        let (listStatus, listOutput) = try await gdbus(asNobody: false, ["--method", "org.mediaroute.Manager1.ListTrust"])
        #expect(listStatus == 0, "root lists the pins: \(listOutput)")
        let (lookStatus, lookOutput) = try await gdbus(asNobody: true, look)
        #expect(lookStatus == 0, "\(lookOutput)")
        #expect(lookOutput.contains("org.mediaroute.loopback"))
        // MPRIS: anyone may read, only root and the group may control; push tokens are not for everyone.
        func mpris(asNobody: Bool, _ arguments: [String]) async throws -> (Int32, String) {
            let call = ["/usr/bin/gdbus", "call", "--address", bus.address, "--dest", "org.mpris.MediaPlayer2.mediaroute",
                        "--object-path", "/org/mpris/MediaPlayer2"] + arguments
            let command = asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + call : call
            return try await ChildProcess.runOffPool(command)
        }
        let (readStatus, readOutput) = try await mpris(asNobody: true, [
            "--method", "org.freedesktop.DBus.Properties.Get", "org.mpris.MediaPlayer2.Player", "PlaybackStatus"])
        #expect(readStatus == 0, "\(readOutput)")
        #expect(readOutput.contains("Stopped"))
        let (pauseStatus, pauseOutput) = try await mpris(asNobody: true, ["--method", "org.mpris.MediaPlayer2.Player.Pause"])
        #expect(pauseStatus != 0)
        #expect(pauseOutput.contains("AccessDenied"), "\(pauseOutput)")
        let (rootPause, rootPauseOutput) = try await mpris(asNobody: false, ["--method", "org.mpris.MediaPlayer2.Player.Pause"])
        #expect(rootPause == 0, "\(rootPauseOutput)")
        let (tokenStatus, tokenOutput) = try await ChildProcess.runOffPool([
            "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/gdbus", "call", "--address", bus.address,
            "--dest", DaemonNames.busName, "--object-path", "/org/mediaroute/push", "--method", "org.mediaroute.Push1.GetPushToStartToken",
        ])
        #expect(tokenStatus != 0)
        #expect(tokenOutput.contains("AccessDenied"), "\(tokenOutput)")
        // Nobody but root may own the daemon's name.
        let (ownStatus, ownOutput) = try await ChildProcess.runOffPool([
            "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", RunningDaemon.binary,
            "--bus", bus.address, "--name", DaemonNames.busName, "--push-listen", "off", "--mpris", "off",
        ])
        #expect(ownStatus != 0)
        #expect(ownOutput.contains("AccessDenied"), "\(ownOutput)")
    }

    /// A user's session PipeWire node acquires a route's audio as that user: the policy lets
    /// everyone call `AcquireAudio`, and the daemon admits only the seat's active user (logind's
    /// `User.State`), never an inactive one or a user logind does not know.
    @Test func onlyTheActiveSeatUserPlaysIntoARoute() async throws {
        let bus = try PolicyBus()
        let daemon = try ChildProcess([
            RunningDaemon.binary, "--bus", bus.address, "--simulate", "--log-level", "warning", "--push-listen", "off", "--config", "/dev/null",
        ])
        defer { daemon.kill(); daemon.wait() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
        let backend = try await DaemonRoutingBackend.connect(connection)
        await backend.beginDiscovery(client: "policy-test")
        #expect(await eventually { await backend.devicesList.contains { $0.displayName == "Kitchen Speaker" } })
        let speaker = try #require(await backend.devicesList.first { $0.displayName == "Kitchen Speaker" })
        let route = try await backend.activate(try #require(speaker.key), protocolID: nil, features: [.realtimeAudioStreaming])
        let path = DaemonNames.sessionPath(route.session).description

        func gdbus(asNobody: Bool, destination: String = DaemonNames.busName, _ arguments: [String]) async throws -> (Int32, String) {
            let call = ["/usr/bin/gdbus", "call", "--address", bus.address, "--dest", destination] + arguments
            return try await ChildProcess.runOffPool(asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + call : call)
        }
        let acquire = ["--object-path", path, "--method", "org.mediaroute.Session1.AcquireAudio", "'s16le'", "44100", "2"]
        // No system-wide PipeWire here: the route's node is left to the session helpers.
        let (_, node) = try await gdbus(asNobody: true, ["--object-path", path, "--method", "org.freedesktop.DBus.Properties.Get", DaemonNames.session, "SinkNode"])
        #expect(node.contains("'session'"), "\(node)")
        // Without logind nobody is refused, by the daemon (the policy let the call through).
        let (refusedStatus, refused) = try await gdbus(asNobody: true, acquire)
        #expect(refusedStatus != 0 && refused.contains("AccessDenied") && refused.contains("active seat session"), "\(refused)")
        // AcquireVideo is open on the bus too (a seat user's PipeWire video node): the daemon refuses
        // nobody before it looks at the route.
        let acquireVideo = ["--object-path", path, "--method", "org.mediaroute.Session1.AcquireVideo", "'i420'", "320", "180", "25", "1"]
        let (videoRefusedStatus, videoRefused) = try await gdbus(asNobody: true, acquireVideo)
        #expect(videoRefusedStatus != 0 && videoRefused.contains("AccessDenied") && videoRefused.contains("show video"), "\(videoRefused)")

        // logind knows the user, logged in but not in the foreground: still refused.
        let template = bus.directory + "/logind.py"
        try """
            import dbus
            BUS_NAME = 'org.freedesktop.login1'
            MAIN_OBJ = '/org/freedesktop/login1'
            MAIN_IFACE = 'org.freedesktop.login1.Manager'
            SYSTEM_BUS = True

            def load(mock, parameters):
                mock.AddMethod(MAIN_IFACE, 'GetUser', 'u', 'o', 'ret = dbus.ObjectPath("/org/freedesktop/login1/user/_%d" % args[0])')
                mock.AddObject('/org/freedesktop/login1/user/_65534', 'org.freedesktop.login1.User',
                               {'UID': dbus.UInt32(65534), 'State': 'online'}, [])
            """.write(toFile: template, atomically: true, encoding: .utf8)
        let logind = try ChildProcess(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", template, "-l", bus.directory + "/logind.log"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        defer { logind.kill(); logind.wait() }
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: "org.freedesktop.login1")) ?? nil != nil })
        let (onlineStatus, online) = try await gdbus(asNobody: true, acquire)
        #expect(onlineStatus != 0 && online.contains("AccessDenied"), "\(online)")

        // The seat switches to that user: now the call succeeds and hands over a socket.
        let (updateStatus, update) = try await gdbus(asNobody: false, destination: "org.freedesktop.login1", [
            "--object-path", "/org/freedesktop/login1/user/_65534", "--method", "org.freedesktop.DBus.Mock.UpdateProperties",
            "org.freedesktop.login1.User", "{'State': <'active'>}",
        ])
        #expect(updateStatus == 0, "\(update)")
        let (acceptedStatus, accepted) = try await gdbus(asNobody: true, acquire)
        #expect(acceptedStatus == 0 && accepted.contains("'s16le'") && accepted.contains("handle"), "\(accepted)")
        // Admitted for video as well: a speaker shows none, which is what it says now.
        let (videoStatus, video) = try await gdbus(asNobody: true, acquireVideo)
        #expect(videoStatus != 0 && !video.contains("AccessDenied") && video.contains("Unsupported"), "\(video)")
        // Other controls stay root's and the group's.
        let (stopStatus, stop) = try await gdbus(asNobody: true, ["--object-path", path, "--method", "org.mediaroute.Session1.Stop"])
        #expect(stopStatus != 0 && stop.contains("AccessDenied"), "\(stop)")
        await backend.deactivate(route.session)
        await backend.close()
    }

    /// What plays and what a session's app exchanges is not for every local user: another user
    /// cannot read a session's URL (Get refused, GetAll and GetManagedObjects without it) and is
    /// not delivered its data-channel bytes, while root (and the group) see both.
    @Test func aSessionsURLAndDataAreHiddenFromOtherUsers() async throws {
        let bus = try PolicyBus()
        let daemon = try ChildProcess([RunningDaemon.binary, "--bus", bus.address, "--simulate", "--log-level", "warning", "--push-listen", "off"])
        defer { daemon.kill(); daemon.wait() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        #expect(await eventually(timeout: .seconds(10)) { (try? await connection.nameOwner(of: DaemonNames.busName)) ?? nil != nil })
        let backend = try await DaemonRoutingBackend.connect(connection)
        let controller = await SystemRouteController(backend: backend, applicationIdentifier: "org.example.remote")
        await controller.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
        let picker = controller.makePicker(prioritizesVideoDevices: true)
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        let route = try await picker.pick(try #require(await picker.entries().first { $0.displayName == "Living Room TV" }))
        let secret = "http://media.example/private.mp4?token=s3cret"
        let session = SystemRouteSession(url: URL(string: secret)!, mode: .application)
        #expect(route.addSession(session))
        let media = try await session.start()

        func gdbus(asNobody: Bool, _ arguments: [String]) async throws -> (Int32, String) {
            let call = ["/usr/bin/gdbus", "call", "--address", bus.address, "--dest", DaemonNames.busName] + arguments
            return try await ChildProcess.runOffPool(asNobody ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + call : call)
        }
        let (_, managed) = try await gdbus(asNobody: false, ["--object-path", "/org/mediaroute", "--method", "org.freedesktop.DBus.ObjectManager.GetManagedObjects"])
        #expect(managed.contains(secret), "root reads the URL")
        let path = try #require(managed.components(separatedBy: "'").first { $0.hasPrefix("/org/mediaroute/session/") }, "\(managed)")
        let (hiddenStatus, hidden) = try await gdbus(asNobody: true, ["--object-path", "/org/mediaroute", "--method", "org.freedesktop.DBus.ObjectManager.GetManagedObjects"])
        #expect(hiddenStatus == 0 && hidden.contains("PlaybackState") && !hidden.contains("token=") && !hidden.contains("'Url'"), "\(hidden)")
        let (getStatus, get) = try await gdbus(asNobody: true, ["--object-path", path, "--method", "org.freedesktop.DBus.Properties.Get", "org.mediaroute.Session1", "Url"])
        #expect(getStatus != 0 && get.contains("AccessDenied"), "\(get)")
        let (_, all) = try await gdbus(asNobody: true, ["--object-path", path, "--method", "org.freedesktop.DBus.Properties.GetAll", "org.mediaroute.Session1"])
        #expect(all.contains("PlaybackState") && !all.contains("token="), "\(all)")
        let (_, rootGet) = try await gdbus(asNobody: false, ["--object-path", path, "--method", "org.freedesktop.DBus.Properties.Get", "org.mediaroute.Session1", "Url"])
        #expect(rootGet.contains(secret))

        // Another user listening to everything the daemon sends: no data-channel bytes reach it.
        let monitorLog = bus.directory + "/monitor.log"
        let logFD = open(monitorLog, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let monitor = try ChildProcess(
            ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/gdbus", "monitor", "--address", bus.address, "--dest", DaemonNames.busName],
            outputFD: logFD)
        close(logFD)
        defer { monitor.kill(); monitor.wait() }
        try await Task.sleep(for: .milliseconds(500))
        let channel = try #require(media.dataChannel)
        let replies = channel.messages()
        try await channel.send(Data("hi".utf8))
        var iterator = replies.makeAsyncIterator()
        #expect(await iterator.next().map { String(decoding: $0, as: UTF8.self) } == "ack:hi", "the owner gets its reply")
        media.playbackControl.isPlaying = false
        let seen: @Sendable () -> String = { (try? String(contentsOfFile: monitorLog, encoding: .utf8)) ?? "" }
        // The monitor does hear the daemon (the pause's property change), never the data.
        #expect(await eventually(timeout: .seconds(5)) { seen().contains("PropertiesChanged") }, "\(seen())")
        #expect(!seen().contains("Received") && !seen().contains("token="), "\(seen())")
        await session.stop()
        await picker.close()
    }
}
