@testable import LANTransport
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
}
