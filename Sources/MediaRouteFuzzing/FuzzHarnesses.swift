

/// Every harness, by name.
package enum FuzzHarnesses {
    package static let all: [FuzzHarness] =
        LANHarnesses.all + UPnPHarnesses.all + DBusHarnesses.all + WiFiHarnesses.all + FileHarnesses.all + RAOPHarnesses.all + CastHarnesses.all + HostileHarnesses.all + HAPHarnesses.all + PTPHarnesses.all

    package static func named(_ name: String) -> FuzzHarness? { all.first { $0.name == name } }
}
