#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import RoutingModel

/// What the person chose in a route picker.
public enum RouteChoice: Sendable, Hashable {
    case local
    case device(RoutePickerEntry)
    case cancelled
}
