import Coordination
import Foundation
import IPNetwork
import MediaRouteTestSupport
import Testing

import UPnP

let gmediarenderDescription = """
    <?xml version="1.0"?>
    <root xmlns="urn:schemas-upnp-org:device-1-0"><specVersion><major>1</major><minor>0</minor></specVersion>
    <device><deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType>
    <friendlyName>Living Room</friendlyName><manufacturer>Acme &amp; Co</manufacturer><modelName>R1</modelName>
    <UDN>uuid:11111111-2222-3333-4444-555555555555</UDN>
    <serviceList>
    <service><serviceType>urn:schemas-upnp-org:service:AVTransport:1</serviceType><serviceId>urn:upnp-org:serviceId:AVTransport</serviceId>
    <SCPDURL>/upnp/rendertransportSCPD.xml</SCPDURL><controlURL>/upnp/control/rendertransport1</controlURL><eventSubURL>/upnp/event/rendertransport1</eventSubURL></service>
    <service><serviceType>urn:schemas-upnp-org:service:RenderingControl:1</serviceType><serviceId>urn:upnp-org:serviceId:RenderingControl</serviceId>
    <SCPDURL>rendercontrolSCPD.xml</SCPDURL><controlURL>control/rendercontrol1</controlURL><eventSubURL>/upnp/event/rendercontrol1</eventSubURL></service>
    </serviceList></device>
    <URLBase>http://198.51.100.2:49494/</URLBase>
    </root>
    """

@Suite struct XMLParserTests {
    @Test func parsesNamespacesAttributesTextAndEscapes() throws {
        let root = try XMLParser().parse(#"<a xmlns="urn:x" k="1 &amp; 2"><b>x &lt; y</b><b><![CDATA[<raw>]]></b></a>"#)
        #expect(root.name == "a" && root.namespace == "urn:x" && root.attributes["k"] == "1 & 2")
        #expect(root.children(named: "b").map(\.text) == ["x < y", "<raw>"])
    }

    /// Prefixes resolve through the enclosing elements; a prefix nobody declared (as some
    /// devices send `dlna:X_DLNADOC`) leaves the element in no namespace instead of
    /// refusing the whole description; namespace declarations are not attributes.
    @Test func resolvesPrefixesAndToleratesUndeclaredOnes() throws {
        let root = try XMLParser().parse(
            #"<s:Envelope xmlns:s="urn:env" xmlns="urn:default" s:encodingStyle="e"><s:Body><u:Act xmlns:u="urn:act"><In>1</In></u:Act>"#
                + #"<dlna:X_DLNADOC>DMR-1.50</dlna:X_DLNADOC><plain xmlns="">p</plain></s:Body></s:Envelope>"#)
        #expect(root.name == "Envelope" && root.namespace == "urn:env" && root.attributes == ["encodingStyle": "e"])
        let body = try #require(root.child("Body"))
        #expect(body.namespace == "urn:env")
        #expect(body.child("Act")?.namespace == "urn:act" && body.child("Act")?.child("In")?.namespace == "urn:default")
        #expect(body.child("X_DLNADOC")?.namespace == nil && body.value("X_DLNADOC") == "DMR-1.50")
        #expect(body.child("plain")?.namespace == nil)
        // Character references and the predefined entities are all an element may use.
        #expect(try XMLParser().parse("<r>&#x41;&#66;&quot;&apos;</r>").text == "AB\"'")
        // A DOCTYPE in another encoding than UTF-8 is refused by the parser itself.
        let utf16: [UInt8] = [0xFE, 0xFF] + Array(#"<!DOCTYPE r [<!ENTITY a "b">]><r>&a;</r>"#.utf8).flatMap { [UInt8(0), $0] }
        #expect { try XMLParser().parse(utf16) } throws: { ($0 as? XMLError)?.code == .doctypeForbidden }
    }

    @Test func refusesDoctypesAndEntityExpansion() {
        let billionLaughs = """
            <?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><root>&lol2;</root>
            """
        #expect(throws: XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted")) { try XMLParser().parse(billionLaughs) }
        let external = #"<?xml version="1.0"?><!doctype r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>"#
        #expect(throws: XMLError.self) { try XMLParser().parse(external) }
        // An undeclared entity reference is an error, never fetched or expanded.
        #expect(throws: XMLError.self) { try XMLParser().parse("<r>&x;</r>") }
    }

    @Test func refusesTooLargeTooDeepAndTooMany() {
        let parser = XMLParser(maximumBytes: 1000, maximumDepth: 5, maximumElements: 20)
        #expect { try parser.parse("<r>" + String(repeating: "x", count: 2000) + "</r>") } throws: { ($0 as? XMLError)?.code == .tooLarge }
        #expect { try parser.parse(String(repeating: "<a>", count: 8) + String(repeating: "</a>", count: 8)) } throws: {
            ($0 as? XMLError)?.code == .tooComplex
        }
        #expect { try parser.parse("<r>" + String(repeating: "<a/>", count: 30) + "</r>") } throws: { ($0 as? XMLError)?.code == .tooComplex }
    }

    @Test func everyTruncationOfADescriptionIsATypedErrorOrAValue() {
        let bytes = Array(gmediarenderDescription.utf8)
        let location = HTTPURL("http://198.51.100.2:49494/description.xml")!
        var errors = 0
        for length in 0..<bytes.count {
            do {
                _ = try DeviceDescription.parse(Array(bytes.prefix(length)), location: location)
            } catch {
                errors += 1
            }
        }
        #expect(errors == bytes.count, "no prefix is a whole description")
        #expect(throws: Never.self) { try DeviceDescription.parse(bytes, location: location) }
    }

    @Test func randomBytesNeverCrashTheParsers() {
        var generator = SplitMix64(seed: 42)
        let alphabet = Array("<>/=\"' &;:!?[]abcdefxmlnsDOCTYPEENTITY-\n".utf8)
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<200, using: &generator)
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            _ = try? XMLParser().parse(bytes)
            _ = try? LastChange.parse(String(decoding: bytes, as: UTF8.self))
            _ = try? ServiceDescription.parse(bytes)
        }
    }
}

@Suite struct DeviceDescriptionTests {
    let location = HTTPURL("http://198.51.100.2:49494/description.xml")!

    @Test func resolvesServiceURLsAgainstURLBase() throws {
        let description = try DeviceDescription.parse(Array(gmediarenderDescription.utf8), location: location)
        #expect(description.isMediaRenderer)
        #expect(description.friendlyName == "Living Room" && description.manufacturer == "Acme & Co")
        #expect(description.udn == "uuid:11111111-2222-3333-4444-555555555555")
        let rendering = try #require(description.service("RenderingControl"))
        #expect(rendering.controlURL == HTTPURL(host: "198.51.100.2", port: 49494, path: "/control/rendercontrol1"))
        #expect(rendering.scpdURL.path == "/rendercontrolSCPD.xml")
        #expect(description.service("AVTransport")?.eventSubscriptionURL?.path == "/upnp/event/rendertransport1")
    }

    @Test func refusesURLsOffTheDevicesHost() {
        let offHost = gmediarenderDescription.replacingOccurrences("<URLBase>http://198.51.100.2:49494/</URLBase>", "<URLBase>http://203.0.113.9/</URLBase>")
        #expect { try DeviceDescription.parse(Array(offHost.utf8), location: location) } throws: { ($0 as? XMLError)?.code == .unexpectedContent }
        let offHostControl = gmediarenderDescription.replacingOccurrences("<controlURL>control/rendercontrol1</controlURL>", "<controlURL>http://10.0.0.1/x</controlURL>")
        #expect { try DeviceDescription.parse(Array(offHostControl.utf8), location: location) } throws: { ($0 as? XMLError)?.code == .unexpectedContent }
    }

    @Test func refusesTheWrongNamespaceAndMissingUDN() {
        let wrong = gmediarenderDescription.replacingOccurrences("urn:schemas-upnp-org:device-1-0", "urn:evil")
        #expect { try DeviceDescription.parse(Array(wrong.utf8), location: location) } throws: { ($0 as? XMLError)?.code == .unexpectedContent }
        let noUDN = gmediarenderDescription.replacingOccurrences("<UDN>uuid:11111111-2222-3333-4444-555555555555</UDN>", "<UDN>42</UDN>")
        #expect { try DeviceDescription.parse(Array(noUDN.utf8), location: location) } throws: { ($0 as? XMLError)?.code == .unexpectedContent }
    }

    @Test func findsAnEmbeddedRenderer() throws {
        let embedded = """
            <root xmlns="urn:schemas-upnp-org:device-1-0"><device><deviceType>urn:schemas-upnp-org:device:Basic:1</deviceType><UDN>uuid:root</UDN>
            <deviceList><device><deviceType>urn:schemas-upnp-org:device:MediaRenderer:2</deviceType><friendlyName>Inner</friendlyName><UDN>uuid:inner</UDN>
            <serviceList><service><serviceType>urn:schemas-upnp-org:service:AVTransport:2</serviceType><SCPDURL>/a.xml</SCPDURL><controlURL>/a</controlURL></service>
            <service><serviceType>urn:schemas-upnp-org:service:RenderingControl:2</serviceType><SCPDURL>/r.xml</SCPDURL><controlURL>/r</controlURL></service>
            </serviceList></device></deviceList></device></root>
            """
        let description = try DeviceDescription.parse(Array(embedded.utf8), location: location)
        #expect(description.udn == "uuid:inner" && description.isMediaRenderer)
        #expect(description.service("AVTransport")?.eventSubscriptionURL == nil)
    }

    @Test func readsTheVolumeRangeAndActionsOfAnSCPD() throws {
        let scpd = """
            <scpd xmlns="urn:schemas-upnp-org:service-1-0"><actionList><action><name>SetVolume</name></action><action><name>GetVolume</name></action></actionList>
            <serviceStateTable><stateVariable sendEvents="no"><name>Volume</name><dataType>ui2</dataType>
            <allowedValueRange><minimum>0</minimum><maximum>60</maximum><step>1</step></allowedValueRange></stateVariable></serviceStateTable></scpd>
            """
        let description = try ServiceDescription.parse(Array(scpd.utf8))
        #expect(description.actions == ["SetVolume", "GetVolume"])
        #expect(description.ranges["Volume"] == 0...60)
        let inverted = scpd.replacingOccurrences("<maximum>60</maximum>", "<maximum>-5</maximum>")
        #expect(throws: XMLError.self) { try ServiceDescription.parse(Array(inverted.utf8)) }
        let notNumber = scpd.replacingOccurrences("<maximum>60</maximum>", "<maximum>loud</maximum>")
        #expect(throws: XMLError.self) { try ServiceDescription.parse(Array(notNumber.utf8)) }
        // Regression: a range spanning Int.min...Int.max made the renderer's volume arithmetic trap.
        let huge = scpd.replacingOccurrences("<minimum>0</minimum><maximum>60</maximum>",
                                             "<minimum>-9223372036854775808</minimum><maximum>9223372036854775807</maximum>")
        #expect(throws: XMLError.self) { try ServiceDescription.parse(Array(huge.utf8)) }
    }
}

@Suite struct SOAPTests {
    @Test func buildsAnEscapedRequest() throws {
        let body = SOAP.request(
            action: "SetAVTransportURI", serviceType: "urn:schemas-upnp-org:service:AVTransport:1",
            arguments: [("InstanceID", "0"), ("CurrentURI", "http://h/a?b=1&c=<2>")])
        let envelope = try XMLParser().parse(body)
        let call = try #require(envelope.child("Body")?.child("SetAVTransportURI"))
        #expect(call.namespace == "urn:schemas-upnp-org:service:AVTransport:1")
        #expect(call.value("CurrentURI") == "http://h/a?b=1&c=<2>")
        #expect(call.children.map(\.name) == ["InstanceID", "CurrentURI"])
    }

    @Test func readsAnswersAndFaultsWithTheirCode() throws {
        let ok = #"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><u:GetVolumeResponse xmlns:u="x"><CurrentVolume>12</CurrentVolume></u:GetVolumeResponse></s:Body></s:Envelope>"#
        #expect(try SOAP.response(status: 200, body: Array(ok.utf8), action: "GetVolume") == ["CurrentVolume": "12"])
        let fault = """
            <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring>
            <detail><UPnPError xmlns="urn:schemas-upnp-org:control-1-0"><errorCode>716</errorCode><errorDescription>Resource not found</errorDescription></UPnPError></detail>
            </s:Fault></s:Body></s:Envelope>
            """
        #expect(throws: UPnPError(code: 716, "Seek: Resource not found")) { try SOAP.response(status: 500, body: Array(fault.utf8), action: "Seek") }
        // Not XML, an HTML error page, the wrong envelope namespace, the wrong answer element: typed, no code.
        for body in ["", "<html><body>500</body></html>", #"<Envelope xmlns="urn:other"><Body/></Envelope>"#,
                     #"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><PlayResponse/></s:Body></s:Envelope>"#] {
            #expect { try SOAP.response(status: 200, body: Array(body.utf8), action: "Stop") } throws: { ($0 as? UPnPError)?.code == nil }
        }
    }
}

@Suite struct ValueFormatTests {
    @Test func parsesAndFormatsTimes() {
        #expect(UPnPTime.parse("0:00:05") == 5)
        #expect(UPnPTime.parse("01:02:03") == 3723)
        #expect(UPnPTime.parse("0:00:01.500") == 1.5)
        #expect(UPnPTime.parse("0:00:01.1/4") == 1.25)
        for bad in ["NOT_IMPLEMENTED", "", "1:2:3", "0:60:00", "0:00:61", "-1:00:00", "0:00:01.", "0:00:01.x", "0:00:01.5/0", "a:bb:cc"] {
            #expect(UPnPTime.parse(bad) == nil, "\(bad)")
        }
        #expect(UPnPTime.format(3723) == "1:02:03")
        #expect(UPnPTime.format(20.25) == "0:00:20.250")
        #expect(UPnPTime.format(-3) == "0:00:00")
        #expect(UPnPTime.format(.nan) == "0:00:00")
    }

    @Test func matchesProtocolInfo() {
        let sinks = ProtocolInfo.parseList("http-get:*:audio/mpeg:*, http-get:*:video/*:DLNA.ORG_PN=X,rtsp-rtp-udp:*:audio/wav:*,broken,http-get:*:*:*")
        #expect(sinks.count == 4)
        #expect(ProtocolInfo.match("audio/mpeg", in: sinks)?.contentFormat == "audio/mpeg")
        #expect(ProtocolInfo.match("video/mp4", in: sinks)?.additionalInfo == "DLNA.ORG_PN=X")
        #expect(ProtocolInfo.match("audio/wav", in: sinks)?.contentFormat == "*", "only http-get counts")
        #expect(ProtocolInfo.match("audio/wav", in: Array(sinks.prefix(2))) == nil)
    }

    @Test func didlIsWellFormedAndEscaped() throws {
        let didl = DIDLLite.item(title: "Tom & Jerry <live>", url: "http://h/a?x=1&y=2", protocolInfo: ProtocolInfo(contentFormat: "video/mp4"), duration: 61)
        let item = try #require(try XMLParser().parse(didl).child("item"))
        #expect(item.value("title") == "Tom & Jerry <live>")
        #expect(item.value("class") == "object.item.videoItem")
        #expect(item.child("res")?.text == "http://h/a?x=1&y=2")
        #expect(item.child("res")?.attributes["duration"] == "0:01:01")
        // What the app describes reaches the renderer: artist, album, artwork.
        let described = DIDLLite.item(
            title: "Song", url: "http://h/s.mp3", protocolInfo: ProtocolInfo(contentFormat: "audio/mpeg"),
            artist: "Band & Co", album: "Live", artworkURL: "http://h/cover.jpg?a=1&b=2")
        let song = try #require(try XMLParser().parse(described).child("item"))
        #expect(song.value("artist") == "Band & Co" && song.value("creator") == "Band & Co")
        #expect(song.value("album") == "Live")
        #expect(song.value("albumArtURI") == "http://h/cover.jpg?a=1&b=2")
    }
}

@Suite struct LastChangeTests {
    static func notify(_ inner: String) -> [UInt8] {
        Array("""
            <e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><LastChange>\(inner.xmlEscaped)</LastChange></e:property></e:propertyset>
            """.utf8)
    }

    @Test func readsTransportAndRenderingChanges() throws {
        let transport = #"<Event xmlns="urn:schemas-upnp-org:metadata-1-0/AVT/"><InstanceID val="0"><TransportState val="PLAYING"/><CurrentTrackDuration val="0:03:00"/></InstanceID></Event>"#
        let change = try #require(try LastChange.parseNotify(Self.notify(transport)))
        #expect(change.transportState == .playing && change.currentTrackDuration == 180)
        let rendering = #"<Event xmlns="urn:schemas-upnp-org:metadata-1-0/RCS/"><InstanceID val="0"><Volume channel="Master" val="35"/><Volume channel="LF" val="10"/><Mute channel="Master" val="1"/></InstanceID></Event>"#
        let volume = try #require(try LastChange.parseNotify(Self.notify(rendering)))
        #expect(volume.volume == 35 && volume.mute == true)
    }

    @Test func refusesWrongTypesNamespacesAndEntities() throws {
        let cases = [
            #"<Event xmlns="urn:schemas-upnp-org:metadata-1-0/AVT/"><InstanceID val="0"><TransportState val="DANCING"/></InstanceID></Event>"#,
            #"<Event xmlns="urn:schemas-upnp-org:metadata-1-0/RCS/"><InstanceID val="0"><Volume channel="Master" val="loud"/></InstanceID></Event>"#,
            #"<Event xmlns="urn:schemas-upnp-org:metadata-1-0/RCS/"><InstanceID val="0"><Mute channel="Master" val="maybe"/></InstanceID></Event>"#,
            #"<Event xmlns="urn:wrong"><InstanceID val="0"/></Event>"#,
            #"<!DOCTYPE x [<!ENTITY a "b">]><Event xmlns="urn:schemas-upnp-org:metadata-1-0/AVT/"/>"#,
            #"<Event xmlns="urn:schemas-upnp-org:metadata-1-0/AVT/"><InstanceID val="0"><TransportState val="PLAY"#,
        ]
        for inner in cases {
            #expect(throws: XMLError.self, "\(inner)") { try LastChange.parseNotify(Self.notify(inner)) }
        }
        #expect(throws: XMLError.self) { try LastChange.parseNotify(Array(#"<propertyset xmlns="urn:other"/>"#.utf8)) }
        let unrelated = try LastChange.parseNotify(Array(#"<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><Other>1</Other></e:property></e:propertyset>"#.utf8))
        #expect(unrelated == nil, "a property set without LastChange")
    }
}


extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

@Suite struct RendererActionTests {
    /// The wire form of every action MediaRoute sends: names and arguments in SCPD order.
    @Test func actionsCarryTheirServiceNameAndArgumentsInOrder() throws {
        let seek = AVTransportAction.seek(relativeTime: 83.5)
        #expect(AVTransportAction.service == "AVTransport")
        #expect(seek.name == "Seek")
        #expect(seek.arguments.map(\.name) == ["InstanceID", "Unit", "Target"])
        #expect(seek.arguments.map(\.value) == ["0", "REL_TIME", "0:01:23.500"])
        #expect(AVTransportAction.setAVTransportURI(uri: "http://h/a", metadata: "<DIDL-Lite/>").arguments.map(\.name)
            == ["InstanceID", "CurrentURI", "CurrentURIMetaData"])
        #expect(AVTransportAction.play().arguments.map(\.value) == ["0", "1"])
        #expect(AVTransportAction.speed(2) == "2" && AVTransportAction.speed(0.5) == "0.5" && AVTransportAction.speed(.nan) == "nan")
        #expect(RenderingControlAction.setVolume(42).arguments.map(\.value) == ["0", "Master", "42"])
        #expect(RenderingControlAction.setMute(true).arguments.last?.value == "1")
        #expect(ConnectionManagerAction.getProtocolInfo.arguments.isEmpty)
        // The SOAP body names the action in the service's namespace, with the arguments in order.
        let body = String(decoding: SOAP.request(
            action: seek.name, serviceType: "urn:schemas-upnp-org:service:AVTransport:1", arguments: seek.arguments.map { ($0.name, $0.value) }), as: UTF8.self)
        let unit = try #require(body.range(of: "<Unit>REL_TIME</Unit>"))
        let target = try #require(body.range(of: "<Target>0:01:23.500</Target>"))
        #expect(unit.lowerBound < target.lowerBound)
        #expect(body.contains("<u:Seek xmlns:u=\"urn:schemas-upnp-org:service:AVTransport:1\">"))
    }
}
