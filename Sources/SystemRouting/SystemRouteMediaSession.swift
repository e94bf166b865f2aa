#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import RoutingModel
import Synchronization
import EventBroadcast

/// A started session: control playback and talk to the device's application.
public final class SystemRouteMediaSession: Sendable {
    /// The remote playback; set its properties to command the device.
    public let playbackControl: any InterfaceControllable
    /// Data with the application on the device; nil in `.player` mode.
    public let dataChannel: SystemRouteDataChannel?

    init(playbackControl: any InterfaceControllable, dataChannel: SystemRouteDataChannel?) {
        self.playbackControl = playbackControl
        self.dataChannel = dataChannel
    }
}
