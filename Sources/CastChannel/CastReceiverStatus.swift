#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// `RECEIVER_STATUS`: what runs on the receiver and its volume.
public struct CastReceiverStatus: Sendable, Equatable, Decodable {
    public var applications: [CastApplication]?
    public var volume: CastVolume?

    public init(applications: [CastApplication] = [], volume: CastVolume? = nil) {
        self.applications = applications
        self.volume = volume
    }

    /// The running application with session `sessionID`, if it still runs.
    public func application(session sessionID: String) -> CastApplication? {
        applications?.first { $0.sessionId == sessionID }
    }
}
