"""The anchor of `mediaroute-bench live`: rygel's gst-launch live item played on the same
gmediarender, the way a control point does it (Debian's `rygel-gst-launch`).

Usage: rygel_anchor.py HOST TITLE RENDERER_DESCRIPTION_URL
HOST runs both rygel (its media server, with the gst-launch item TITLE) and gmediarender. Finds
rygel with a unicast M-SEARCH (the host's one SSDP port goes to one of the two), browses rygel's ContentDirectory for the item, then sends
gmediarender SetAVTransportURI and Play. Prints one JSON object: the CLOCK_MONOTONIC second
the SetAVTransportURI request was sent (the anchor's "start", as MediaRoute's is its first
write, which leads to the same two requests), the item's URL and protocolInfo.
Python's standard library only.
"""
import json
import re
import socket
import sys
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from html import escape

UPNP = "{urn:schemas-upnp-org:device-1-0}"


def search(host, target):
    """The LOCATION of the device of type `target` at `host` (unicast M-SEARCH)."""
    message = ("M-SEARCH * HTTP/1.1\r\nHOST: %s:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: %s\r\n\r\n" % (host, target)).encode()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(1.0)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        sock.sendto(message, (host, 1900))
        try:
            while True:
                data, _ = sock.recvfrom(65536)
                match = re.search(rb"(?im)^location:\s*(\S+)", data)
                if match:
                    return match.group(1).decode()
        except socket.timeout:
            continue
    raise SystemExit("no %s at %s" % (target, host))


def control_url(location, service):
    root = ET.fromstring(urllib.request.urlopen(location, timeout=5).read())
    for node in root.iter(UPNP + "service"):
        if node.findtext(UPNP + "serviceType", "").startswith(service):
            return urllib.parse.urljoin(location, node.findtext(UPNP + "controlURL"))
    raise SystemExit("no %s in %s" % (service, location))


def soap(url, service, action, arguments):
    body = "".join("<%s>%s</%s>" % (name, escape(value), name) for name, value in arguments)
    envelope = ('<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
                's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:%s xmlns:u="%s">%s</u:%s></s:Body></s:Envelope>'
                % (action, service, body, action))
    request = urllib.request.Request(url, data=envelope.encode(), headers={
        "Content-Type": 'text/xml; charset="utf-8"', "SOAPAction": '"%s#%s"' % (service, action)})
    return urllib.request.urlopen(request, timeout=10).read().decode()


def browse(control, object_id):
    service = "urn:schemas-upnp-org:service:ContentDirectory:1"
    answer = soap(control, service, "Browse", [("ObjectID", object_id), ("BrowseFlag", "BrowseDirectChildren"), ("Filter", "*"),
                                                 ("StartingIndex", "0"), ("RequestedCount", "100"), ("SortCriteria", "")])
    result = ET.fromstring(answer).find(".//Result").text
    return ET.fromstring(result)


def find_item(control, title):
    DIDL = "{urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/}"
    DC = "{http://purl.org/dc/elements/1.1/}"
    pending = ["0"]
    while pending:
        for node in browse(control, pending.pop(0)):
            if node.tag == DIDL + "container":
                pending.append(node.get("id"))
            elif node.tag == DIDL + "item" and node.findtext(DC + "title") == title:
                res = node.find(DIDL + "res")
                return res.text, res.get("protocolInfo"), ET.tostring(node, encoding="unicode")
    raise SystemExit("no item %r" % title)


def main(host, title, renderer):
    server = search(host, "urn:schemas-upnp-org:device:MediaServer:1")
    url, protocol_info, item = find_item(control_url(server, "urn:schemas-upnp-org:service:ContentDirectory"), title)
    transport = control_url(renderer, "urn:schemas-upnp-org:service:AVTransport")
    service = "urn:schemas-upnp-org:service:AVTransport:1"
    metadata = ('<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" '
                'xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/">%s</DIDL-Lite>' % item)
    start = time.clock_gettime(time.CLOCK_MONOTONIC)
    soap(transport, service, "SetAVTransportURI", [("InstanceID", "0"), ("CurrentURI", url), ("CurrentURIMetaData", metadata)])
    soap(transport, service, "Play", [("InstanceID", "0"), ("Speed", "1")])
    print(json.dumps({"start": start, "url": url, "protocolInfo": protocol_info}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
