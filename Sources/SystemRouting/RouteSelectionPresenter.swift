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

/// Shows the person a route picker (a UI, a CLI prompt) and returns their choice.
public protocol RouteSelectionPresenter: Sendable {
    /// `entries` are sorted with `suggested` (if any) first.
    func chooseRoute(from entries: [RoutePickerEntry], suggested: RoutePickerEntry?) async -> RouteChoice
}
