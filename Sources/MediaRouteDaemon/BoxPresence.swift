#if canImport(Glibc)
import Glibc
#endif
import Coordination
import IPNetwork
import LANTransport
import Logging
import MediaDevice
import RoutingModel
import Transport

/// This box among the other MediaRoute boxes of the household: its LAN coordination medium
/// (every datagram sealed with the household key), published over mDNS as
/// `<box name>._mediaroute._udp`, and the other boxes found the same way while discovery
/// runs, which are the medium's peers while it runs. `Manager1.Boxes` shows them with the medium's
/// estimate of each one's clock.
actor BoxPresence {
    /// Another box, as found over mDNS.
    struct Box: Sendable, Hashable {
        let id: String
        let name: String
        let address: UDPAddress
    }

    static let serviceType = "_mediaroute._udp"

    let id: String
    let name: String
    private let medium: LANCoordinationMedium
    private let responder: MDNSResponder
    private let lan: LANTransport
    private let logger: Logger
    private var browsing: Task<Void, Never>?
    private var found: [String: Box] = [:]
    private let changed: @Sendable () async -> Void

    /// - Parameter changed: called when the boxes found change.
    init(
        name: String, id: String, key: HouseholdKey, lan: LANTransport, interfaces: [String]?, logger: Logger,
        changed: @escaping @Sendable () async -> Void
    ) throws {
        self.id = id
        self.name = name
        self.lan = lan
        self.logger = logger
        self.changed = changed
        medium = try LANCoordinationMedium(binding: UDPAddress(host: "0.0.0.0", port: 0), peers: [], key: key)
        responder = MDNSResponder(
            advertising: MDNSServiceAdvertisement(
                instance: name, serviceType: Self.serviceType, port: medium.localAddress.port, txt: ["id=\(id)", "v=1"],
                host: "mediaroute-\(id.prefix(12))"),
            interfaces: interfaces, logger: logger)
    }

    /// Joins the medium (answering other boxes' clock samples from now on) and announces the box.
    func start() async throws {
        _ = await medium.join(ParticipantID(id))
        try await responder.start()
        logger.info("box published", metadata: ["name": "\(name)", "port": "\(medium.localAddress.port)"])
    }

    /// Browses for the other boxes while discovery runs. When it stops they are forgotten and
    /// the medium has no peers: nothing wakes an idle box (a group spanning boxes, when there is
    /// one, will keep its own).
    func setBrowsing(_ on: Bool) async {
        if !on {
            browsing?.cancel()
            browsing = nil
            guard !found.isEmpty else { return }
            found = [:]
            await medium.setPeers([])
            await changed()
            return
        }
        guard browsing == nil else { return }
        let events = lan.browse(serviceTypes: [Self.serviceType])
        browsing = Task { [weak self] in
            for await event in events {
                await self?.handle(event)
            }
        }
    }

    /// The interfaces changed: announce on new ones.
    func refresh() async { await responder.refresh() }

    private func handle(_ event: DiscoveryEvent) async {
        switch event {
        case .appeared(let endpoint), .updated(let endpoint):
            guard let box = Self.box(endpoint), box.id != id else { return }
            guard found[endpoint.id] != box else { return }
            found[endpoint.id] = box
            logger.info("box found", metadata: ["name": "\(box.name)", "address": "\(box.address)"])
        case .lost(let endpointID):
            guard found.removeValue(forKey: endpointID) != nil else { return }
        default:
            return
        }
        await medium.setPeers(found.values.map(\.address).sorted { "\($0)" < "\($1)" })
        await changed()
    }

    /// A box from its DNS-SD endpoint (`id` in its TXT, its SRV port and address).
    static func box(_ endpoint: Endpoint) -> Box? {
        guard case .ip(let host, let port, _) = endpoint.address, let id = endpoint.attributes["id"], !id.isEmpty, id.utf8.count <= 64 else {
            return nil
        }
        let suffix = "." + serviceType + ".local"
        let name = endpoint.id.hasSuffix(suffix) ? String(endpoint.id.dropLast(suffix.count)) : endpoint.id
        return Box(id: id, name: name, address: UDPAddress(host: host, port: port))
    }

    /// The boxes found, with the medium's estimate of each one's clock (offset and its error
    /// bound, seconds) once it has one.
    func boxes() async -> [(box: Box, offset: Double?, error: Double?)] {
        let estimates = await medium.clockEstimates()
        return found.values.sorted { $0.name < $1.name }.map { box in
            let estimate = estimates[box.address]
            return (box, estimate?.offset, estimate?.errorBound)
        }
    }

    /// The boxes found that answered a challenge sealed with the household key, as pinned
    /// identities (`trust list`).
    func verifiedBoxes() async -> [PinnedIdentity] {
        let verified = Set(await medium.verifiedPeers)
        return found.values.filter { verified.contains($0.address) }.map { box in
            PinnedIdentity(kind: .householdBox, deviceID: box.id, name: box.name, pinned: "\(box.address.host):\(box.address.port)")
        }
    }

    /// Forgets that the box `name` names (its id or name) answered the key: it is challenged
    /// again. - Returns: how many boxes were forgotten.
    func forgetVerification(named name: String) async -> Int {
        var count = 0
        for box in found.values where box.id == name || box.name.lowercased() == name.lowercased() {
            if await medium.forgetVerification(of: box.address) { count += 1 }
        }
        return count
    }

    func stop() async {
        browsing?.cancel()
        await responder.stop()
        await medium.leave(ParticipantID(id))
    }

    /// This box's id: a hash of /etc/machine-id (else the host name) and the box's name, so
    /// that two daemons of one machine (a test rig, two households' boxes on one host) differ.
    static func localID(name: String) -> String {
        var machine = hostName()
        if let file = fopen("/etc/machine-id", "r") {
            defer { fclose(file) }
            var buffer = [CChar](repeating: 0, count: 64)
            if fgets(&buffer, Int32(buffer.count), file) != nil { machine = Self.string(ofTerminated: buffer).filter(\.isHexDigit) }
        }
        let digits = Array("0123456789abcdef")
        return String(HouseholdKey.sha256(Array((machine + "\n" + name).utf8)).prefix(8).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "MediaRoute" }
        return string(ofTerminated: buffer)
    }

    /// The text of a C buffer up to its first NUL (all of it when there is none).
    private static func string(ofTerminated buffer: [CChar]) -> String {
        String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
