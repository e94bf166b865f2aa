import CNetlink
import IOReactor
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Something that runs one Wi-Fi scan and returns what it saw (a seam, so the
/// transport's scheduling is tested without a radio).
public protocol WiFiScanning: Sendable {
    func scan(interfaceIndex: UInt32, p2p: Bool) async throws(TransportUnavailable) -> [ScanResult]
}
