import LoopbackExtension
import LoopbackTransport
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import Testing
import RoutingModel

func activationError(_ body: () async throws -> ActiveRoute) async -> MediaDeviceError? {
    do {
        _ = try await body()
        return nil
    } catch let error as MediaDeviceError {
        return error
    } catch {
        return MediaDeviceError(.invalidArgument, "unexpected \(error)")
    }
}

@Suite(.timeLimit(.minutes(1))) struct ActivationTests {
    @Test func pairingWithTheRightCodeActivates() async throws {
        let rig = try await LoopbackRig()
        let agent = ScriptedPairingAgent([.code("1234")])
        await rig.system.setPairingAgent(agent)
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Living Room TV")
        #expect(route.device.displayName == "Living Room TV")
        #expect(agent.receivedRequests.count == 1)
        #expect(agent.receivedRequests.first?.authorizationMethod == .numericCode(length: .fourCharacter))
        let key = route.key
        #expect(await rig.system.state(of: key) == .active)
        let states = { @Sendable in rig.recorder.events.compactMap { event -> ActivationState? in
            if case .activationStateChanged(key, _, let state) = event { return state }
            return nil
        } }
        #expect(await eventually { states().count == 4 })
        #expect(states() == [.activating, .awaitingPairingCode, .activating, .active])
    }

    @Test func aWrongCodeFailsWithAuthorizationFailedAndLeavesTheDeviceIdle() async throws {
        let rig = try await LoopbackRig()
        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("9999"), .code("1234")]))
        let list = await rig.discover(expecting: 2)
        let error = await activationError { try await rig.system.activate(deviceID: "Living Room TV") }
        #expect(error?.code == .authorizationFailed)
        let key = list[0].members[0].key
        #expect(await rig.system.state(of: key) == .idle)
        #expect(await eventually { await rig.transport.connectionCount(to: "tv") == 0 }, "the connection is released")
        // A second try with the right code works: nothing was left behind.
        _ = try await rig.system.activate(deviceID: "Living Room TV")
        #expect(await rig.system.state(of: key) == .active)
    }

    @Test func cancellingThePromptFailsTheActivation() async throws {
        let rig = try await LoopbackRig()
        await rig.system.setPairingAgent(ScriptedPairingAgent([.cancel]))
        await rig.discover(expecting: 2)
        let error = await activationError { try await rig.system.activate(deviceID: "Living Room TV") }
        #expect(error?.code == .authorizationFailed)
        #expect(error?.message == "pairing was cancelled")
        #expect(await rig.system.activeRoutes.isEmpty)
    }

    @Test func noAnswerWithinThePairingTimeoutFailsWithTimedOut() async throws {
        var configuration = RouteSystem.Configuration()
        configuration.pairingTimeout = .seconds(60)
        let rig = try await LoopbackRig(configuration: configuration)
        await rig.system.setPairingAgent(ScriptedPairingAgent([.never]))
        let list = await rig.discover(expecting: 2)
        let key = list[0].members[0].key
        let activation = Task { await activationError { try await rig.system.activate(deviceID: "Living Room TV") } }
        #expect(await eventually { await rig.system.state(of: key) == .awaitingPairingCode })
        let start = rig.clock.now()
        #expect(await advance(rig.clock, by: .seconds(5), upTo: .seconds(120)) { await rig.system.state(of: key) == .idle })
        #expect(rig.clock.now() - start >= .seconds(60), "not before the timeout")
        let error = await activation.value
        #expect(error?.code == .timedOut)
        #expect(await eventually { await rig.transport.connectionCount(to: "tv") == 0 })
    }

    @Test func aDeviceThatNeverAnswersTimesOut() async throws {
        var configuration = RouteSystem.Configuration()
        // Shorter than the extension's own 5 s request timeout, so the system's fires first.
        configuration.activationTimeout = .seconds(3)
        var silent = LoopbackRig.speaker
        silent.replyDelay = 3600
        let rig = try await LoopbackRig(devices: [silent], configuration: configuration)
        let list = await rig.discover(expecting: 1)
        let key = list[0].members[0].key
        let activation = Task { await activationError { try await rig.system.activate(deviceID: "Kitchen Speaker") } }
        #expect(await eventually { await rig.system.state(of: key) == .activating })
        #expect(await advance(rig.clock, by: .milliseconds(500), upTo: .seconds(30)) {
            await rig.system.state(of: key) == .idle
        })
        #expect(await activation.value?.code == .timedOut)
    }

    @Test func aSecondActivationWhileActivatingIsRefused() async throws {
        let rig = try await LoopbackRig()
        await rig.system.setPairingAgent(ScriptedPairingAgent([.never]))
        await rig.discover(expecting: 2)
        let first = Task { await activationError { try await rig.system.activate(deviceID: "Living Room TV") } }
        let key = await rig.system.devicesList[0].members[0].key
        #expect(await eventually { await rig.system.state(of: key) == .awaitingPairingCode })
        let second = await activationError { try await rig.system.activate(deviceID: "Living Room TV") }
        #expect(second?.code == .activationInProgress)
        #expect(await rig.system.state(of: key) == .awaitingPairingCode, "the first activation is untouched")
        first.cancel()
        await rig.system.shutdown()
    }

    @Test func anActiveDeviceIsNotActivatedTwice() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        _ = try await rig.system.activate(deviceID: "Kitchen Speaker")
        let error = await activationError { try await rig.system.activate(deviceID: "Kitchen Speaker") }
        #expect(error?.code == .deviceAlreadyActive)
    }

    @Test func aSecondSessionIsRefusedWithoutSimultaneousSessions() async throws {
        let single = MediaSharingProtocol("org.mediaroute.loopback.single", displayName: "Single")
        let rig = try await LoopbackRig(
            devices: [LoopbackRig.speaker, LoopbackDeviceSpec(name: "den", displayName: "Den Speaker", kind: .speaker)],
            protocols: [(single, false)])
        await rig.discover(expecting: 2)
        let first = try await rig.system.activate(deviceID: "Kitchen Speaker")
        let error = await activationError { try await rig.system.activate(deviceID: "Den Speaker") }
        #expect(error?.code == .simultaneousSessionsUnsupported)
        await rig.system.deactivate(first.session)
        _ = try await rig.system.activate(deviceID: "Den Speaker")
    }

    @Test func aSecondSessionIsAcceptedWithSimultaneousSessions() async throws {
        let rig = try await LoopbackRig(
            devices: [LoopbackRig.speaker, LoopbackDeviceSpec(name: "den", displayName: "Den Speaker", kind: .speaker)])
        await rig.discover(expecting: 2)
        _ = try await rig.system.activate(deviceID: "Kitchen Speaker")
        _ = try await rig.system.activate(deviceID: "Den Speaker")
        #expect(await rig.system.activeRoutes.count == 2)
    }

    @Test func refusedConnectionsFailWithConnectionFailed() async throws {
        var grumpy = LoopbackRig.speaker
        grumpy.refusesConnections = true
        let rig = try await LoopbackRig(devices: [grumpy])
        await rig.discover(expecting: 1)
        let error = await activationError { try await rig.system.activate(deviceID: "Kitchen Speaker") }
        #expect(error?.code == .connectionFailed)
        #expect(await activationError { try await rig.system.activate(deviceID: "Nowhere") }?.code == .deviceNotFound)
    }

    @Test func deactivationEndsTheRouteAndReleasesTheConnection() async throws {
        let rig = try await LoopbackRig()
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Kitchen Speaker")
        #expect(await rig.transport.connectionCount(to: "speaker") == 1)
        await rig.system.deactivate(route.session)
        #expect(await rig.system.activeRoutes.isEmpty)
        #expect(await eventually { await rig.transport.connectionCount(to: "speaker") == 0 })
        let reason = await rig.recorder.first { event -> String? in
            if case .routeDeactivated(let r, let reason) = event, r == route { return reason.map { "\($0)" } ?? "requested" }
            return nil
        }
        #expect(reason == "requested")
    }
}
