import BlueZTransport
import DBus
import Testing

struct BlueZPropertiesTests {
    @Test func readsLikeADictionary() {
        var properties = BlueZProperties(["Name": .string("Kitchen"), "RSSI": .variant(.int16(-50))])
        #expect(properties["Name"] == .string("Kitchen"))
        #expect(properties["RSSI"] == .int16(-50), "variants are unwrapped")
        #expect(properties["Missing"] == nil)
        properties["RSSI"] = .int16(-60)
        properties["Paired"] = .bool(true)
        properties.merge(["Name": .string("Den"), "Trusted": .bool(true)])
        #expect(properties.dictionary == ["Name": .string("Den"), "RSSI": .int16(-60), "Paired": .bool(true), "Trusted": .bool(true)])
        #expect(properties.removeValue(forKey: "Paired") == .bool(true))
        properties["Trusted"] = nil
        #expect(Set(properties.names) == ["Name", "RSSI"])
        #expect(properties == ["RSSI": .int16(-60), "Name": .string("Den")], "equal whatever the order")
    }

    @Test func aRepeatedNameActsAsItsLastValue() throws {
        // No peer of ours sends one, but a hostile one may: the last value wins, as in a dictionary.
        let value = DBusValue.dictionary(keySignature: "s", valueSignature: "v", [
            DBusDictEntry(.string("Name"), .variant(.string("first"))),
            DBusDictEntry(.string("RSSI"), .variant(.int16(-40))),
            DBusDictEntry(.string("Name"), .variant(.string("last"))),
        ])
        var properties = try #require(BlueZProperties(value))
        #expect(properties["Name"] == .string("last"))
        #expect(properties.count == 2)
        #expect(properties.dictionary == ["Name": .string("last"), "RSSI": .int16(-40)])
        properties["Name"] = .string("changed")
        #expect(properties["Name"] == .string("changed"))
        #expect(properties.removeValue(forKey: "Name") == .string("changed"))
        #expect(properties["Name"] == nil, "every copy of the name goes")
        #expect(BlueZProperties(.string("not a dictionary")) == nil)
    }
}
