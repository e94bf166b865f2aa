import Foundation
import IPNetwork
import MediaClock
import MediaRouteTestSupport
import PTP
import Synchronization
import Testing
@testable import Coordination

/// The PTP master on loopback: the master on 127.0.0.1, a follower's two ports on 127.0.0.2
/// (the same port numbers, as PTP wants), a stranger on 127.0.0.3; time on a manual clock.
@Suite(.timeLimit(.minutes(1))) struct PTPMasterTests {
    static let identity = PTPPortIdentity(hardwareAddress: [0x02, 0, 0, 0, 0, 1])

    /// A master and a follower on two free port numbers (tried until both addresses bind them).
    static func rig(clock: ManualHostClock, foreign: @escaping @Sendable (String, PTPAnnounce) -> Void = { _, _ in }) throws -> (PTPMaster, UDPSocket, UDPSocket) {
        for _ in 0..<20 {
            let base = UInt16.random(in: 20_000...60_000)
            var configuration = PTPMaster.Configuration()
            configuration.bindAddress = "127.0.0.1"
            configuration.eventPort = base
            configuration.generalPort = base + 1
            guard let master = try? PTPMaster(identity: identity, clock: clock, configuration: configuration, foreignMaster: foreign) else { continue }
            guard let event = try? UDPSocket(binding: UDPAddress(host: "127.0.0.2", port: base), clock: clock),
                let general = try? UDPSocket(binding: UDPAddress(host: "127.0.0.2", port: base + 1), clock: clock)
            else {
                master.close()
                continue
            }
            return (master, event, general)
        }
        throw PTPError("no free pair of ports")
    }

    /// A master serving one follower, 127.0.0.2, whose two ports the test speaks from.
    struct FollowedRig {
        let master: PTPMaster, event: UDPSocket, general: UDPSocket, events: Inbox
        init(clock: ManualHostClock) throws {
            (master, event, general) = try PTPMasterTests.rig(clock: clock)
            events = Inbox(event)
            master.setFollowers(["127.0.0.2"])
        }
        func to(_ port: UInt16) -> UDPAddress { UDPAddress(host: "127.0.0.1", port: port) }
        var eventPort: UInt16 { master.configuration.eventPort }
        var generalPort: UInt16 { master.configuration.generalPort }
        /// The follower's two-step Sync `sequence` in `source`'s name, its Follow_Up saying `origin`.
        func sync(_ sequence: UInt16, from source: PTPPortIdentity, origin: @Sendable () -> Duration) async throws {
            event.send(PTPMessage(kind: .sync, source: source, sequence: sequence, flags: PTPMessage.twoStepFlag, body: .timestamp(PTPTimestamp(seconds: 0, nanoseconds: 0))).bytes, to: to(eventPort))
            try await Task.sleep(for: .milliseconds(50))
            general.send(PTPMessage(kind: .followUp, source: source, sequence: sequence, body: .preciseOrigin(PTPTimestamp(origin()))).bytes, to: to(generalPort))
        }
        func close() { master.close(); event.close(); general.close() }
    }

    /// After a ``run(_:until:)``: waits until the master sleeps again and nothing more arrives
    /// for 100 ms. `run` returns once the clock is at its target, and on a loaded machine the
    /// last step's Syncs may still be on their way: a count taken then is short, and the next
    /// one seems to have too many.
    static func settle(_ clock: ManualHostClock, _ inboxes: Inbox...) async {
        _ = await eventually(timeout: .seconds(5)) { clock.nextDeadline != nil }
        var last = inboxes.map { inbox in inbox.messages.withLock { $0.count } }, quiet = 0
        while quiet < 5 {
            try? await Task.sleep(for: .milliseconds(20))
            let counts = inboxes.map { inbox in inbox.messages.withLock { $0.count } }
            if counts == last { quiet += 1 } else { (quiet, last) = (0, counts) }
        }
    }

    /// Collects what arrives on a socket.
    final class Inbox: Sendable {
        let messages: Locked<[(PTPMessage, UDPAddress)]>
        let task: Task<Void, Never>
        init(_ socket: UDPSocket) {
            let messages = Locked<[(PTPMessage, UDPAddress)]>([])
            self.messages = messages
            task = Task {
                for await datagram in socket.datagrams {
                    if let message = try? PTPMessage(decoding: datagram.bytes) { messages.withLock { $0.append((message, datagram.from)) } }
                }
            }
        }
        func of(_ kind: PTPMessage.Kind) -> [(PTPMessage, UDPAddress)] { messages.withLock { $0.filter { $0.0.kind == kind } } }
        deinit { task.cancel() }
    }

    @Test func followersGetAnnounceAndTwoStepSyncsFromThePTPPortsAndNothingWhenThereAreNone() async throws {
        let clock = ManualHostClock(now: .seconds(100))
        let (master, event, general) = try Self.rig(clock: clock)
        defer { master.close(); event.close(); general.close() }
        let events = Inbox(event), generals = Inbox(general)
        master.setFollowers(["127.0.0.2"])
        await run(clock, until: .seconds(101))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= 8 && generals.of(.followUp).count >= 8 })
        let syncs = events.of(.sync), followUps = generals.of(.followUp), announces = generals.of(.announce)
        #expect(syncs.allSatisfy { $0.0.flags & PTPMessage.twoStepFlag != 0 && $0.0.source == Self.identity && $0.1.port == master.configuration.eventPort })
        #expect(followUps.allSatisfy { $0.1.port == master.configuration.generalPort })
        // Each Follow_Up carries its Sync's sequence and the master's clock when it left.
        for (followUp, _) in followUps {
            guard case .preciseOrigin(let time) = followUp.body else { continue }
            #expect(syncs.contains { $0.0.sequence == followUp.sequence })
            #expect(time.duration >= .seconds(100) && time.duration <= .seconds(101))
        }
        #expect(announces.count >= 1)
        if case .announce(let body)? = announces.first?.0.body { #expect(body.grandmaster == Self.identity.clock) }
        // No followers: the master stops ticking (no sleeper on the clock).
        master.setFollowers([])
        await run(clock, until: .seconds(102))
        let count = events.of(.sync).count
        await run(clock, until: .seconds(103))
        #expect(events.of(.sync).count == count)
        #expect(await eventually(timeout: .seconds(2)) { clock.sleeperCount == 0 })
    }

    /// A follower newly set gets an Announce at the master's next step (not at the next
    /// second's); one kept quick (on a slow link) a Sync every 15.625 ms from the next step while
    /// the others stay at eight a second, until it is no longer kept quick or no longer a
    /// follower; a host that is not a follower is not made one.
    @Test func aNewFollowerIsAnnouncedAtTheNextStepAndOneKeptQuickGetsSixtyFourSyncsASecond() async throws {
        let clock = ManualHostClock(now: .seconds(100))
        let (master, event, general) = try Self.rig(clock: clock)
        let port = master.configuration.eventPort
        let laterEvent = try UDPSocket(binding: UDPAddress(host: "127.0.0.3", port: port), clock: clock)
        let laterGeneral = try UDPSocket(binding: UDPAddress(host: "127.0.0.3", port: port + 1), clock: clock)
        defer { master.close(); event.close(); general.close(); laterEvent.close(); laterGeneral.close() }
        let events = Inbox(event), laterEvents = Inbox(laterEvent), laterGenerals = Inbox(laterGeneral)
        master.setFollowers(["127.0.0.2"])
        await run(clock, until: .seconds(101))
        // 100.0 through 101.0, the last perhaps not sent yet.
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= 8 })
        #expect((8...9).contains(events.of(.sync).count) && events.of(.sync).allSatisfy { $0.0.logInterval == -3 })
        // Kept quick from the next step.
        master.syncQuickly("127.0.0.2", true)
        master.syncQuickly("127.0.0.9", true)
        await run(clock, until: .seconds(101) + .milliseconds(125))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= 10 })
        await Self.settle(clock, events)
        let quickFrom = events.of(.sync).count
        await run(clock, until: .seconds(102) + .milliseconds(125))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= quickFrom + 64 })
        #expect(events.of(.sync).count <= quickFrom + 65 && events.of(.sync).contains { $0.0.logInterval == -6 })
        // A second follower: an Announce at the next step, eight Syncs a second while the first gets 64.
        master.setFollowers(["127.0.0.2", "127.0.0.3"])
        await run(clock, until: .seconds(102) + .milliseconds(150))
        #expect(await eventually(timeout: .seconds(5)) { !laterGenerals.of(.announce).isEmpty }, "an Announce before the next second's")
        await Self.settle(clock, events, laterEvents)
        let (first, later) = (events.of(.sync).count, laterEvents.of(.sync).count)
        await run(clock, until: .seconds(104) + .milliseconds(150))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= first + 127 && laterEvents.of(.sync).count >= later + 15 })
        #expect(laterEvents.of(.sync).count <= later + 17 && laterEvents.of(.sync).allSatisfy { $0.0.logInterval == -3 })
        // No longer quick: eight a second again; and not quick again after leaving and coming back.
        master.syncQuickly("127.0.0.2", false)
        await run(clock, until: .seconds(105) + .milliseconds(150))
        await Self.settle(clock, events)
        let regular = events.of(.sync).count
        await run(clock, until: .seconds(106) + .milliseconds(150))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= regular + 8 })
        #expect(events.of(.sync).count <= regular + 9 && master.followers == ["127.0.0.2", "127.0.0.3"])
        master.syncQuickly("127.0.0.3", true)
        master.setFollowers(["127.0.0.2"])
        master.setFollowers(["127.0.0.2", "127.0.0.3"])
        await Self.settle(clock, laterEvents)
        let back = laterEvents.of(.sync).count
        await run(clock, until: .seconds(108) + .milliseconds(150))
        #expect(await eventually(timeout: .seconds(5)) { laterEvents.of(.sync).count >= back + 15 })
        #expect(laterEvents.of(.sync).count <= back + 17, "its quick Syncs went with it")
    }

    @Test func delayRequestsAreAnsweredForFollowersOnlyAndWithinTheirBudget() async throws {
        let clock = ManualHostClock(now: .seconds(50))
        let (master, event, general) = try Self.rig(clock: clock)
        defer { master.close(); event.close(); general.close() }
        let generals = Inbox(general)
        master.setFollowers(["127.0.0.2"])
        let requester = PTPPortIdentity(clock: 0xABCD, port: 1)
        let request = PTPMessage(kind: .delayRequest, source: requester, sequence: 42, body: .timestamp(PTPTimestamp(seconds: 0, nanoseconds: 0)))
        event.send(request.bytes, to: UDPAddress(host: "127.0.0.1", port: master.configuration.eventPort))
        #expect(await eventually(timeout: .seconds(5)) { !generals.of(.delayResponse).isEmpty })
        if case .delayResponse(let received, let who)? = generals.of(.delayResponse).first?.0.body {
            #expect(who == requester)
            #expect(received.duration >= .seconds(50))
        }
        #expect(generals.of(.delayResponse).first?.0.sequence == 42)
        // A follower that asks measures its path itself (no slow-link allowance for it) while it keeps asking.
        #expect(master.measuresPathDelay("127.0.0.2") && !master.measuresPathDelay("127.0.0.3"))
        clock.advance(by: PTPMaster.pathMeasurementMemory)
        #expect(!master.measuresPathDelay("127.0.0.2"), "it stopped asking")
        // A stranger (not a follower) gets nothing, and does not count.
        let stranger = try UDPSocket(binding: UDPAddress(host: "127.0.0.3", port: master.configuration.eventPort), clock: clock)
        defer { stranger.close() }
        stranger.send(request.bytes, to: UDPAddress(host: "127.0.0.1", port: master.configuration.eventPort))
        // A flood from the follower: at most its burst is answered.
        for _ in 0..<100 { event.send(request.bytes, to: UDPAddress(host: "127.0.0.1", port: master.configuration.eventPort)) }
        #expect(await eventually(timeout: .seconds(5)) { master.statistics.refusedRequests > 0 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(master.statistics.delayResponses <= 49, "its burst (48) and the first")
        #expect(master.measuresPathDelay("127.0.0.2") && !master.measuresPathDelay("127.0.0.3"))
    }

    @Test func anAnnounceFromAFollowerIsReportedAndFromAStrangerIgnored() async throws {
        let clock = ManualHostClock(now: .seconds(10))
        let heard = Mutex<[String]>([])
        let (master, event, general) = try Self.rig(clock: clock) { host, _ in heard.withLock { $0.append(host) } }
        defer { master.close(); event.close(); general.close() }
        master.setFollowers(["127.0.0.2"])
        let theirs = PTPMessage(kind: .announce, source: PTPPortIdentity(clock: 0x1111), sequence: 1, body: .announce(PTPAnnounce(priority1: 0, grandmaster: 0x1111)))
        let stranger = try UDPSocket(binding: UDPAddress(host: "127.0.0.3", port: master.configuration.generalPort), clock: clock)
        defer { stranger.close() }
        stranger.send(theirs.bytes, to: UDPAddress(host: "127.0.0.1", port: master.configuration.generalPort))
        general.send(theirs.bytes, to: UDPAddress(host: "127.0.0.1", port: master.configuration.generalPort))
        #expect(await eventually(timeout: .seconds(5)) { heard.withLock { !$0.isEmpty } })
        try await Task.sleep(for: .milliseconds(100))
        #expect(heard.withLock { $0 } == ["127.0.0.2"])
    }

    /// A follower that announces a better clock is followed, not fought: no more Announce or
    /// Sync to it, Delay_Reqs instead, and its stream is timed by its clock (the offset from its
    /// Sync/Follow_Up and our Delay_Req/Delay_Resp). A stranger announcing the same changes
    /// nothing; a grandmaster that falls silent is served by the box again.
    @Test func aFollowerThatInsistsOnBeingGrandmasterIsFollowedAndOnlyIt() async throws {
        let clock = ManualHostClock(now: .seconds(10))
        let rig = try FollowedRig(clock: clock)
        defer { rig.close() }
        let (master, general, events) = (rig.master, rig.general, rig.events)
        let eventPort = rig.eventPort, generalPort = rig.generalPort
        let to = rig.to
        // A stranger claims the best clock first: ignored.
        let stranger = try UDPSocket(binding: UDPAddress(host: "127.0.0.3", port: generalPort), clock: clock)
        defer { stranger.close() }
        let theirs = PTPPortIdentity(clock: 0x1111)
        let announce = PTPMessage(kind: .announce, source: theirs, sequence: 1, body: .announce(PTPAnnounce(priority1: 0, grandmaster: 0x1111)))
        stranger.send(announce.bytes, to: to(generalPort))
        try await Task.sleep(for: .milliseconds(100))
        #expect(master.reading(for: "127.0.0.3").clockIdentity == Self.identity.clock && !master.isSettling("127.0.0.3"))
        // The follower announces itself: it is followed once its Sync and Follow_Up come.
        general.send(announce.bytes, to: to(generalPort))
        #expect(await eventually(timeout: .seconds(5)) { master.isSettling("127.0.0.2") })
        #expect(master.reading(for: "127.0.0.2").clockIdentity == Self.identity.clock, "not measured yet: our clock still")
        let syncsBefore = events.of(.sync).count
        let gmOffset = Duration.seconds(4_990)
        // Its Sync leaves at (our now + offset) and takes 200 µs; so does our Delay_Req the other way.
        try await rig.sync(7, from: theirs) { clock.now() + gmOffset - .microseconds(200) }
        #expect(await eventually(timeout: .seconds(5)) { master.statistics.foreignSyncs == 1 })
        await run(clock, until: .seconds(10) + .milliseconds(300))
        #expect(await eventually(timeout: .seconds(5)) { !events.of(.delayRequest).isEmpty })
        let request = try #require(events.of(.delayRequest).first)
        #expect(request.0.source == Self.identity && request.1.port == eventPort)
        guard case .timestamp(let sent) = request.0.body else { Issue.record("a Delay_Req without its time"); return }
        let response = PTPMessage(
            kind: .delayResponse, source: theirs, sequence: request.0.sequence,
            body: .delayResponse(received: PTPTimestamp(sent.duration + gmOffset + .microseconds(200)), requester: Self.identity))
        general.send(response.bytes, to: to(generalPort))
        #expect(await eventually(timeout: .seconds(5)) { !master.isSettling("127.0.0.2") })
        let reading = master.reading(for: "127.0.0.2")
        #expect(reading.clockIdentity == 0x1111)
        let error = reading.time - (clock.now() + gmOffset)
        #expect(error < .microseconds(2) && error > .microseconds(-2), "the path's delay cancels out: \(error)")
        #expect(events.of(.sync).count <= syncsBefore + 3, "no Sync to a grandmaster (those in flight aside)")
        // A forged Follow_Up from the stranger, with another offset, changes nothing.
        stranger.send(PTPMessage(kind: .followUp, source: theirs, sequence: 8, body: .preciseOrigin(PTPTimestamp(seconds: 1, nanoseconds: 0))).bytes, to: to(generalPort))
        try await Task.sleep(for: .milliseconds(100))
        #expect(master.reading(for: "127.0.0.2").clockIdentity == 0x1111 && master.statistics.foreignSyncs == 1)
        // Silent for longer than the limit: the box's clock again, and Syncs to it again.
        await run(clock, until: .seconds(16))
        #expect(master.reading(for: "127.0.0.2").clockIdentity == Self.identity.clock)
        let syncsAfter = events.of(.sync).count
        await run(clock, until: .seconds(17))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= syncsAfter + 4 })
    }

    /// Each round's Syncs start one follower further on, so no follower is always first or last.
    @Test func eachRoundsSyncsStartOneFollowerFurtherOn() {
        let followers = ["10.0.0.2", "10.0.0.3", "10.0.0.4"]
        #expect(PTPMaster.sendingOrder(followers, round: 0) == followers)
        #expect(PTPMaster.sendingOrder(followers, round: 1) == ["10.0.0.3", "10.0.0.4", "10.0.0.2"])
        #expect(PTPMaster.sendingOrder(followers, round: 5) == ["10.0.0.4", "10.0.0.2", "10.0.0.3"])
        // Where the sequence wraps, too: every follower is still sent to once.
        #expect(Set(PTPMaster.sendingOrder(followers, round: .max)) == Set(followers))
        let firsts = (0..<6).map { PTPMaster.sendingOrder(followers, round: UInt16($0)).first! }
        #expect(firsts == followers + followers)
        #expect(PTPMaster.sendingOrder(["10.0.0.2"], round: 7) == ["10.0.0.2"] && PTPMaster.sendingOrder([], round: 1).isEmpty)
    }

    /// A LAN host can forge a receiver's address and PTP identity. An Announce alone does not
    /// cut the receiver off our clock (its Syncs must come first); one Announce of another clock
    /// at its address changes nothing, nor does a second one more than four seconds later, but
    /// two within four seconds do; a worse Announce ends it only in its own name.
    @Test func aGrandmastersAddressForgedOnceChangesNothing() async throws {
        let clock = ManualHostClock(now: .seconds(10))
        let rig = try FollowedRig(clock: clock)
        defer { rig.close() }
        let (master, general, events) = (rig.master, rig.general, rig.events)
        let generalPort = rig.generalPort
        let to = rig.to
        func announce(_ clock: UInt64, priority: UInt8 = 0) {
            let message = PTPMessage(kind: .announce, source: PTPPortIdentity(clock: clock), sequence: 1, body: .announce(PTPAnnounce(priority1: priority, grandmaster: clock)))
            general.send(message.bytes, to: to(generalPort))
        }
        announce(0x1111)
        #expect(await eventually(timeout: .seconds(5)) { master.isSettling("127.0.0.2") })
        // Announced, not measured: our Syncs go on.
        let syncsAtAnnounce = events.of(.sync).count
        await run(clock, until: .seconds(10) + .milliseconds(500))
        #expect(await eventually(timeout: .seconds(5)) { events.of(.sync).count >= syncsAtAnnounce + 3 }, "Syncs after an Announce alone")
        // Its Sync and Follow_Up: measured; ours stop.
        let theirs = PTPPortIdentity(clock: 0x1111)
        try await rig.sync(7, from: theirs) { clock.now() + .seconds(100) }
        #expect(await eventually(timeout: .seconds(5)) { master.reading(for: "127.0.0.2").clockIdentity == 0x1111 })
        await Self.settle(clock, events)
        let syncsMeasured = events.of(.sync).count
        await run(clock, until: .seconds(11) + .milliseconds(500))
        await Self.settle(clock, events)
        #expect(events.of(.sync).count <= syncsMeasured + 1, "no Sync once its clock is measured (one in flight aside)")
        // A worse Announce in another's name, and one Announce of another clock: nothing changes.
        announce(0x3333, priority: 255)
        announce(0x2222)
        try await Task.sleep(for: .milliseconds(100))
        #expect(master.reading(for: "127.0.0.2").clockIdentity == 0x1111)
        // The other clock again, but 4.5 s later (the followed one announcing meanwhile): still nothing.
        announce(0x1111)
        await run(clock, until: .seconds(16))
        announce(0x1111)
        announce(0x2222)
        try await Task.sleep(for: .milliseconds(100))
        #expect(master.reading(for: "127.0.0.2").clockIdentity == 0x1111)
        // And once more within four seconds: qualified, it replaces the grandmaster (not measured yet: our clock meanwhile).
        await run(clock, until: .seconds(17))
        announce(0x2222)
        #expect(await eventually(timeout: .seconds(5)) { master.reading(for: "127.0.0.2").clockIdentity == Self.identity.clock })
        #expect(master.isSettling("127.0.0.2"))
        // The one replaced cannot end it; the new one can.
        announce(0x1111, priority: 255)
        try await Task.sleep(for: .milliseconds(100))
        #expect(master.isSettling("127.0.0.2"))
        announce(0x2222, priority: 255)
        #expect(await eventually(timeout: .seconds(5)) { !master.isSettling("127.0.0.2") })
    }
}
