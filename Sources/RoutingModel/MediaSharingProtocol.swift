/// The identity of a media sharing protocol: a reverse-DNS id declared once by
/// an extension (the seeds' UTType) and the name people see in the picker.
public struct MediaSharingProtocol: Sendable, Hashable, CustomStringConvertible {
    /// Reverse-DNS identifier, e.g. `org.mediaroute.upnp`.
    public let identifier: String
    /// Short name shown in the picker and in error screens, e.g. `UPnP/DLNA`.
    public let displayName: String

    public init(_ identifier: String, displayName: String) {
        self.identifier = identifier
        self.displayName = displayName
    }

    public var description: String { identifier }

    /// The last label of a protocol id (`upnp` for `org.mediaroute.upnp`): how a person names
    /// a protocol in `preferred-protocols`.
    public static func shortName(_ identifier: String) -> String {
        identifier.split(separator: ".").last.map(String.init) ?? identifier
    }

    /// Checks that the identifier is reverse-DNS: two or more dot-separated
    /// labels of letters, digits and inner hyphens, the first starting with a
    /// letter; and that the display name is not empty.
    /// - Throws: ``MediaDeviceError/Code/invalidProtocolType`` saying what is wrong.
    public func validate() throws {
        func refuse(_ why: String) -> MediaDeviceError {
            MediaDeviceError(.invalidProtocolType, "protocol id \"\(identifier)\" \(why)")
        }
        guard !identifier.isEmpty else { throw refuse("is empty") }
        guard identifier.utf8.count <= 255 else { throw refuse("is longer than 255 bytes") }
        let labels = identifier.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { throw refuse("is not reverse-DNS (needs at least two dot-separated labels)") }
        for label in labels {
            guard !label.isEmpty else { throw refuse("has an empty label") }
            guard label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                throw refuse("has a label with characters other than letters, digits and '-'")
            }
            guard label.first != "-", label.last != "-" else { throw refuse("has a label starting or ending with '-'") }
        }
        guard labels[0].first?.isLetter == true else { throw refuse("must start with a letter") }
        guard !displayName.trimmingSpaces.isEmpty else {
            throw MediaDeviceError(.invalidProtocolType, "protocol \(identifier) has an empty display name")
        }
    }
}
