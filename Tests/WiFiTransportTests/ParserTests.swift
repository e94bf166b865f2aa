import CNetlink
import MediaRouteTestSupport
import Testing
@testable import WiFiTransport

@Suite struct ParserTests {
    @Test func aScanDumpWithP2PAndWiFiDisplayElements() throws {
        let dump = Bytes.scanMessage(bssid: Bytes.tvBSSID, frequency: 2437, signal: -4500, elements: Bytes.tvElements)
            + Bytes.scanMessage(bssid: [0x02, 0, 0, 0, 0, 2], frequency: 5180, signal: -7000, elements: Bytes.ssid("Sonos_Setup_1234"))
            + Bytes.scanMessage(bssid: [0x02, 0, 0, 0, 0, 3], frequency: 2412, signal: -8000, elements: Bytes.ssid("HomeNet"))
            + Bytes.done
        let results = try ScanResult.parseDump(dump, familyID: Bytes.familyID)
        #expect(results.count == 3)
        let tv = results[0]
        #expect(tv.bssid == "02:aa:bb:cc:dd:01")
        #expect(tv.frequency == 2437)
        #expect(tv.signalMBm == -4500)
        #expect(tv.seenMillisecondsAgo == 10)
        #expect(tv.interfaceIndex == 3)
        #expect(tv.elements.ssid == "DIRECT-xy-Living Room TV")
        let p2p = try #require(try tv.elements.p2p())
        #expect(p2p.deviceName == "Living Room TV")
        #expect(p2p.category == 7)
        #expect(p2p.subcategory == 1)
        #expect(p2p.deviceAddress == [0x02, 0x11, 0x22, 0x33, 0x44, 0x55])
        #expect(p2p.configMethods == 0x0188)
        #expect(p2p.deviceCapability == 0x25)
        let display = try #require(try tv.elements.wifiDisplay())
        #expect(display.deviceType == .primarySink)
        #expect(display.sessionAvailable)
        #expect(display.supportsHDCP)
        #expect(display.controlPort == 7236)
        #expect(display.maximumThroughput == 300)

        let mapper = WiFiDeviceMapper(setupSSIDPatterns: ["Sonos_Setup_*", "Bose-????"])
        let endpoints = results.compactMap(mapper.endpoint(for:))
        #expect(endpoints.count == 2)
        #expect(endpoints[0].id == "wfd:02:11:22:33:44:55")
        #expect(endpoints[0].attributes["deviceType"] == "tv")
        #expect(endpoints[0].attributes["capability"] == "realtimeVideoStreaming")
        #expect(endpoints[0].name == "Living Room TV")
        #expect(endpoints[0].signalStrength == -45)
        #expect(endpoints[1].attributes["state"] == "needsSetup")
        #expect(endpoints[1].name == "Sonos_Setup_1234")
    }

    @Test(arguments: [(UInt16(7), "tv"), (8, "setTopBox"), (11, "speaker"), (1, "computer"), (42, "unknown")])
    func deviceTypesFollowTheP2PCategory(category: UInt16, type: String) {
        #expect(WiFiDeviceMapper.deviceType(category: category) == type)
    }

    @Test func aWiFiDisplaySourceIsNotADevice() throws {
        let elements = Bytes.ssid("DIRECT-phone") + Bytes.p2p(name: "Phone", category: 10) + Bytes.wfd(bitmap: 0b0001_0000)
        let result = try ScanResult.parse(try GenericNetlinkPayload.parse(
            try NetlinkMessage.parse(Bytes.scanMessage(bssid: [2, 0, 0, 0, 0, 9], frequency: 2412, signal: -5000, elements: elements))[0].payload))
        #expect(try result.elements.wifiDisplay()?.deviceType == .source)
        #expect(WiFiDeviceMapper().endpoint(for: result) == nil)
    }

    @Test func globPatterns() {
        #expect(WiFiDeviceMapper.matches("Sonos_Setup_1234", pattern: "Sonos_*"))
        #expect(WiFiDeviceMapper.matches("Bose-AB12", pattern: "Bose-????"))
        #expect(!WiFiDeviceMapper.matches("Bose-AB1", pattern: "Bose-????"))
        #expect(WiFiDeviceMapper.matches("a", pattern: "*"))
        #expect(!WiFiDeviceMapper.matches(String(repeating: "a", count: 200), pattern: String(repeating: "*a", count: 30) + "b"))
    }

    @Test func theP2PTriggerAsksForDirectOnTheSocialChannelsWithoutCCK() throws {
        let element = ScanRequest.p2pElement(deviceAddress: [2, 0, 0, 0, 0, 1], name: "MediaRoute")
        // Our own element parses with our own parser.
        let parsed = try #require(try InformationElements.parse(element).p2p())
        #expect(parsed.deviceName == "MediaRoute")
        let payload = ScanRequest.trigger(interfaceIndex: 5, p2p: true, p2pElement: element)
        let reparsed = try GenericNetlinkPayload.parse(payload.bytes)
        #expect(reparsed.command == UInt8(NL80211_CMD_TRIGGER_SCAN.rawValue))
        #expect(try reparsed.attributes.first(UInt16(NL80211_ATTR_IFINDEX.rawValue))?.u32() == 5)
        let ssids = try #require(reparsed.attributes.first(UInt16(NL80211_ATTR_SCAN_SSIDS.rawValue))).nested()
        #expect(ssids.map(\.string) == ["DIRECT-"])
        let frequencies = try #require(reparsed.attributes.first(UInt16(NL80211_ATTR_SCAN_FREQUENCIES.rawValue))).nested()
        #expect(try frequencies.map { try $0.u32() } == [2412, 2437, 2462])
        let rates = try #require(reparsed.attributes.first(UInt16(NL80211_ATTR_SCAN_SUPP_RATES.rawValue))).nested()
        #expect(rates.first?.value == ScanRequest.ofdmRates)
        #expect(reparsed.attributes.first(UInt16(NL80211_ATTR_TX_NO_CCK_RATE.rawValue)) != nil)
        #expect(reparsed.attributes.first(UInt16(NL80211_ATTR_IE.rawValue))?.value == element)
    }
}

@Suite struct MalformedInputTests {
    func code(_ body: () throws -> Void) -> NetlinkParseError.Code? {
        do {
            try body()
            return nil
        } catch let error as NetlinkParseError {
            return error.code
        } catch {
            Issue.record("not a NetlinkParseError: \(error)")
            return nil
        }
    }

    @Test func netlinkHeadersAndAttributes() {
        let good = Bytes.scanMessage(bssid: Bytes.tvBSSID, frequency: 2437, signal: -4500, elements: Bytes.tvElements)
        #expect(code { _ = try NetlinkMessage.parse(Array(good.prefix(10))) } == .truncated)
        var overflow = good
        overflow[0] = 0xFF
        overflow[1] = 0xFF
        #expect(code { _ = try NetlinkMessage.parse(overflow) } == .lengthOverflow)
        var tooSmall = good
        tooSmall[0] = 8
        tooSmall[1] = 0
        tooSmall[2] = 0
        tooSmall[3] = 0
        #expect(code { _ = try NetlinkMessage.parse(tooSmall) } == .lengthTooSmall)
        // An attribute whose length runs past the message.
        #expect(code { _ = try NetlinkAttribute.parse([0x40, 0x00, 0x01, 0x00, 1, 2, 3, 4]) } == .lengthOverflow)
        #expect(code { _ = try NetlinkAttribute.parse([0x02, 0x00, 0x01, 0x00]) } == .lengthTooSmall)
        #expect(code { _ = try NetlinkAttribute.parse([0x08, 0x00, 0x01]) } == .truncated)
        // Truncating a real dump anywhere never crashes: it parses or fails with a code.
        for cut in 0..<good.count {
            _ = try? ScanResult.parseDump(Array(good.prefix(cut)), familyID: Bytes.familyID)
        }
    }

    @Test func nestingTooDeep() {
        var attribute = NetlinkAttribute(type: 1, u32: 7)
        for _ in 0..<12 { attribute = NetlinkAttribute(type: 1, nested: [attribute]) }
        func descend(_ attribute: NetlinkAttribute, depth: Int) throws {
            for child in try attribute.nested(depth: depth) where child.value.count > 4 { try descend(child, depth: depth + 1) }
        }
        #expect(code { try descend(attribute, depth: 1) } == .nestedTooDeep)
    }

    @Test func scanResultsWithMissingOrWrongFields() throws {
        let noBSS = GenericNetlinkPayload(command: 34, attributes: [NetlinkAttribute(type: UInt16(NL80211_ATTR_IFINDEX.rawValue), u32: 3)])
        #expect(code { _ = try ScanResult.parse(noBSS) } == .badValue)
        let shortBSSID = GenericNetlinkPayload(command: 34, attributes: [NetlinkAttribute(type: UInt16(NL80211_ATTR_BSS.rawValue), nested: [
            NetlinkAttribute(type: UInt16(NL80211_BSS_BSSID.rawValue), value: [1, 2, 3]),
        ])])
        #expect(code { _ = try ScanResult.parse(shortBSSID) } == .badValue)
        let wrongSize = GenericNetlinkPayload(command: 34, attributes: [NetlinkAttribute(type: UInt16(NL80211_ATTR_BSS.rawValue), nested: [
            NetlinkAttribute(type: UInt16(NL80211_BSS_BSSID.rawValue), value: Bytes.tvBSSID),
            NetlinkAttribute(type: UInt16(NL80211_BSS_FREQUENCY.rawValue), value: [1, 2]),
        ])])
        #expect(code { _ = try ScanResult.parse(wrongSize) } == .badValue)
    }

    @Test func elementsAndVendorSubelements() {
        // An element whose length runs past the end.
        #expect(code { _ = try InformationElements.parse([0, 10, 65, 66]) } == .lengthOverflow)
        #expect(code { _ = try InformationElements.parse([0]) } == .truncated)
        // A P2P attribute longer than the element.
        let p2pOverrun: [UInt8] = Bytes.element(221, [0x50, 0x6F, 0x9A, 9, 13, 0xFF, 0x00, 1, 2, 3])
        #expect(code { _ = try InformationElements.parse(p2pOverrun).p2p() } == .lengthOverflow)
        // Secondary device types that run past Device Info.
        var secondaries = Bytes.p2p(name: "TV", category: 7, secondaryTypes: 1)
        secondaries[secondaries.count - 15] = 40  // the count byte (before 8 type bytes and the 6-byte name TLV): claim 40
        #expect(code { _ = try InformationElements.parse(secondaries).p2p() } == .lengthOverflow)
        // A device name longer than Device Info.
        var name = Bytes.p2p(name: "TV", category: 7)
        name[name.count - 3] = 200
        #expect(code { _ = try InformationElements.parse(name).p2p() } == .lengthOverflow)
        // A WFD sub-element longer than the element, and one without Device Information.
        #expect(code { _ = try InformationElements.parse(Bytes.element(221, [0x50, 0x6F, 0x9A, 10, 0, 0x01, 0x00, 1])).wifiDisplay() } == .lengthOverflow)
        #expect(code { _ = try InformationElements.parse(Bytes.element(221, [0x50, 0x6F, 0x9A, 10, 7, 0, 1, 9])).wifiDisplay() } == .badValue)
        // Short vendor elements are not P2P at all.
        let short = try? InformationElements.parse(Bytes.element(221, [0x50, 0x6F])).p2p()
        #expect(short == .some(nil))
        // The mapper skips a result whose elements are malformed instead of failing the scan.
        let broken = ScanResult(bssid: "02:00:00:00:00:01", frequency: 2412, elements: InformationElements(elements: [
            .init(id: 221, body: [0x50, 0x6F, 0x9A, 10, 0, 0xFF, 0xFF]),
        ]))
        #expect(WiFiDeviceMapper().endpoint(for: broken) == nil)
    }
}
