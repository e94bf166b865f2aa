import Coordination
import Foundation
import MediaClock
import PTP

/// `mediaroute-bench ptp-master FOLLOWER [SECONDS]`: MediaRoute's PTP master on UDP 319/320
/// (root or CAP_NET_BIND_SERVICE; one PTP user per network namespace) serving FOLLOWER for
/// SECONDS (default 10). When nqptp runs on the same machine (its shared memory `/nqptp` is
/// visible: another network namespace, the same /dev/shm), compares the master nqptp took and
/// its estimate of our clock with the truth, read from both clocks here: nqptp's
/// CLOCK_MONOTONIC_RAW and the master's clock.
extension Bench {
    static func ptpMaster(follower: String, seconds: Int) async throws {
        let clock = SystemHostClock()
        let identity = PTPPortIdentity(hardwareAddress: [0x02, 0x4D, 0x52, 0x00, 0x00, 0x01])
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpuBefore = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let master = try PTPMaster(identity: identity, clock: clock)
        master.setFollowers([follower])
        try await Task.sleep(for: .seconds(seconds))
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpuAfter = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let statistics = master.statistics
        print("ptp-master: \(seconds) s to \(follower) as \(identity): \(statistics.syncs) Sync/Follow_Up, \(statistics.announces) Announce, \(statistics.delayResponses) Delay_Resp; CPU \(String(format: "%.3f", 100 * (cpuAfter - cpuBefore) / Double(seconds))) % of a core")
        guard let shm = FileManager.default.contents(atPath: "/dev/shm/nqptp"), shm.count >= 40 else {
            print("  no nqptp shared memory here: nothing to compare")
            master.close()
            return
        }
        let bytes = [UInt8](shm)
        func word(_ offset: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) } }
        let clockID = word(8), localTime = word(16), offset = word(24)
        var raw = timespec()
        clock_gettime(CLOCK_MONOTONIC_RAW, &raw)
        let ours = clock.now()
        let local = UInt64(raw.tv_sec) * 1_000_000_000 + UInt64(raw.tv_nsec)
        let ourNanoseconds = UInt64(ours.components.seconds) * 1_000_000_000 + UInt64(ours.components.attoseconds / 1_000_000_000)
        let truth = ourNanoseconds &- local
        let error = Int64(bitPattern: offset &- truth)
        print("  nqptp follows clock \(String(clockID, radix: 16)) (ours \(String(identity.clock, radix: 16))): \(clockID == identity.clock ? "ours" : "NOT ours")")
        print("  nqptp's offset to our clock, estimated \(String(format: "%.3f", Double(local &- localTime) / 1e6)) ms ago: off by \(String(format: "%.3f", Double(error) / 1000)) µs")
        master.close()
    }
}
