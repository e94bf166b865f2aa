#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
@testable import LANTransport
import NIOCore
import Testing

@Suite struct DatagramTallyTests {
    @Test func countsByReasonReportsOncePerPeriodAndStartsOver() {
        var tally = DatagramTally(protocolName: "SSDP")
        var report = tally.report()
        #expect(report == nil)
        var first = tally.count("malformed")
        #expect(first)  // the first asks for a report
        var later = 0
        for _ in 0..<9_999 where tally.count("malformed") { later += 1 }
        first = tally.count("LOCATION on another host")
        #expect(later == 0 && !first)
        report = tally.report()
        #expect(report == "SSDP: ignored 10001 datagrams (malformed: 10000, LOCATION on another host: 1); 10001 since start")
        report = tally.report()
        #expect(report == nil)
        first = tally.count("device table full")
        #expect(first)
        report = tally.report()
        #expect(report == "SSDP: ignored 1 datagram (device table full: 1); 10002 since start")
    }

    /// What the sockets drop before discovery reads it is counted, not lost: a datagram
    /// over the limit (NIO would otherwise hand on its first 2 048 bytes as if whole), and
    /// the oldest waiting ones when more arrive than the reader takes.
    @Test func datagramsDroppedBeforeReadingAreCounted() async throws {
        // What is tested is the queue behind the sockets: the per-source budget in front of it is opened wide.
        let sockets = MulticastSockets(maximumDatagram: 4096, budget: (.init(perSecond: 1e6, burst: 1e6), .init(perSecond: 1e6, burst: 1e6)))
        let channel = try await sockets.bind(host: "127.0.0.1", port: 0, sendingOn: nil, ttl: 1)
        defer { channel.close(promise: nil) }
        let port = try #require(channel.localAddress?.port)
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var buffer: Int32 = 4 << 20
        setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        func send(_ bytes: [UInt8]) {
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(sender, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        send([UInt8](repeating: 0x41, count: 4097))  // one over
        send([UInt8](repeating: 0x41, count: 3000))  // over NIO's default read size, under ours
        for index in 0..<600 {  // nobody reads: 512 wait
            send(Array("datagram \(index)".utf8))
            if index % 50 == 49 { usleep(5_000) }  // the kernel's socket buffer is not what is tested
        }

        var dropped: [String: Int] = [:]
        for _ in 0..<200 where dropped.values.reduce(0, +) < 1 + 89 {
            try await Task.sleep(for: .milliseconds(10))
            dropped.merge(sockets.takeDropped(), uniquingKeysWith: +)
        }
        #expect(dropped["over 4096 bytes"] == 1)
        #expect(dropped["arrived faster than read"] == 602 - 1 - 512, "\(dropped)")
        #expect(sockets.takeDropped().isEmpty)  // taken once

        sockets.finish()
        var waiting: [Datagram] = []
        for await datagram in sockets.datagrams { waiting.append(datagram) }
        #expect(waiting.count == 512)
        // The newest were kept, and the 3 000-byte one was not cut short on the way (it was
        // dropped as the oldest, so it is not among them; the last one read is whole).
        #expect(waiting.last.map { String(decoding: $0.bytes, as: UTF8.self) } == "datagram 599")
        #expect(waiting.first.map { String(decoding: $0.bytes, as: UTF8.self) } == "datagram 88")

        // A finished stream still counts what arrives too long.
        var tally = DatagramTally(protocolName: "SSDP")
        send([UInt8](repeating: 0x41, count: 5000))
        for _ in 0..<200 {
            try await Task.sleep(for: .milliseconds(10))
            if tally.count(droppedBy: sockets) { break }
        }
        #expect(tally.report() == "SSDP: ignored 1 datagram (over 4096 bytes: 1); 1 since start")
    }
}
