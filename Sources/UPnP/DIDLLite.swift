

/// DIDL-Lite metadata for `SetAVTransportURI`.
public enum DIDLLite {
    /// An item with a title, its class from the MIME type, and one resource.
    public static func item(
        title: String, url: String, protocolInfo: ProtocolInfo, duration: Double? = nil, artist: String? = nil, album: String? = nil,
        artworkURL: String? = nil
    ) -> String {
        let mime = protocolInfo.contentFormat
        let itemClass: String
        if mime.hasPrefix("video/") {
            itemClass = "object.item.videoItem"
        } else if mime.hasPrefix("image/") {
            itemClass = "object.item.imageItem"
        } else {
            itemClass = "object.item.audioItem.musicTrack"
        }
        var text = #"<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/">"#
        text += #"<item id="0" parentID="-1" restricted="1">"#
        text += "<dc:title>\(title.xmlEscaped)</dc:title><upnp:class>\(itemClass)</upnp:class>"
        if let artist, !artist.isEmpty { text += "<dc:creator>\(artist.xmlEscaped)</dc:creator><upnp:artist>\(artist.xmlEscaped)</upnp:artist>" }
        if let album, !album.isEmpty { text += "<upnp:album>\(album.xmlEscaped)</upnp:album>" }
        if let artworkURL, !artworkURL.isEmpty { text += "<upnp:albumArtURI>\(artworkURL.xmlEscaped)</upnp:albumArtURI>" }
        text += "<res protocolInfo=\"\(protocolInfo.description.xmlEscaped)\""
        if let duration { text += " duration=\"\(UPnPTime.format(duration))\"" }
        text += ">\(url.xmlEscaped)</res></item></DIDL-Lite>"
        return text
    }
}
