#!/usr/bin/python3
"""Writes the fuzz seed corpora (Fuzz/Corpus/<harness>/) from real traffic.

What real peers say is captured as they say it: gmediarender and rygel (SSDP
answers, descriptions, SCPDs, SOAP answers and faults, GENA events, in a network
namespace of their own), the BlueZ mock on a private bus (its D-Bus messages as
dbus-monitor --binary records them), and this kernel's rtnetlink dumps. What no
peer here produces (mDNS answers, 802.11 elements, nl80211 scan dumps: no Wi-Fi in
this kernel) is written from the specifications' layouts. Run as root:
    /usr/bin/python3 scripts/fuzz-seeds.py   # Debian's python: python3-dbusmock
Existing seeds are replaced; the checked-in set stays small (a few KB each).
"""
import hashlib, json, os, re, shutil, socket, struct, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")
NS = "mr-fuzz-seeds"


def save(harness, data, name=None):
    folder = os.path.join(CORPUS, harness)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# --- UPnP renderers -------------------------------------------------------------------

def http_raw(host, port, request, limit=256 * 1024):
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(request)
        chunks = []
        while sum(map(len, chunks)) < limit:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return raw, status, body


def get(host, port, path):
    return http_raw(host, port, f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())


def soap(host, port, control, service, action, args):
    inner = "".join(f"<{k}>{v}</{k}>" for k, v in args)
    body = (f'<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
            f's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:{action} xmlns:u="{service}">{inner}'
            f'</u:{action}></s:Body></s:Envelope>').encode()
    head = (f"POST {control} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: text/xml; charset=\"utf-8\"\r\n"
            f"SOAPACTION: \"{service}#{action}\"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    return http_raw(host, port, head + body)


def m_search(target="ssdp:all", wait=3.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    s.settimeout(0.3)
    s.sendto((f"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: {target}\r\n\r\n").encode(),
             ("239.255.255.250", 1900))
    answers, end = [], time.time() + wait
    while time.time() < end:
        try:
            answers.append(s.recv(9000))
        except socket.timeout:
            pass
    return answers


class EventSink(threading.Thread):
    """Takes GENA NOTIFYs on a port of its own and keeps their bodies."""

    def __init__(self, host):
        super().__init__(daemon=True)
        self.server = socket.create_server((host, 0))
        self.port = self.server.getsockname()[1]
        self.bodies = []

    def run(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(4096)
                    head, _, body = data.partition(b"\r\n\r\n")
                    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                    length = int(m.group(1)) if m else 0
                    while len(body) < length:
                        body += conn.recv(65536)
                    self.bodies.append(body)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass


def capture_renderers():
    answers = m_search()
    for answer in answers:
        save("ssdp", answer)
    locations = sorted({m.group(1).decode() for a in answers for m in [re.search(rb"(?i)\r\nlocation:\s*(\S+)", a)] if m})
    if not locations:
        print("  no SSDP answer", file=sys.stderr)
    for location in locations:
        capture_renderer(location)
    print(f"  {len(answers)} SSDP answers from {len(locations)} devices")


def capture_renderer(location):
    m = re.match(r"http://([^:/]+):(\d+)(/.*)", location)
    host, port, path = m.group(1), int(m.group(2)), m.group(3)
    raw, status, description = get(host, port, path)
    save("http-response", raw[:64 * 1024])
    save("upnp-description", description)
    save("xml", description)
    services = re.findall(rb"<service>(.*?)</service>", description, re.S)
    sink = EventSink(host)
    sink.start()
    for service in services:
        field = lambda tag: (re.search(rb"<%s>(.*?)</%s>" % (tag, tag), service, re.S) or [b"", b""])[1].decode().strip()
        stype, scpd, control, events = field(b"serviceType"), field(b"SCPDURL"), field(b"controlURL"), field(b"eventSubURL")
        rel = lambda p: p if p.startswith("/") else "/" + p
        raw, status, body = get(host, port, rel(scpd))
        save("upnp-scpd", body)
        if "AVTransport" in stype:
            calls = [("GetTransportInfo", [("InstanceID", 0)]), ("GetPositionInfo", [("InstanceID", 0)]),
                     ("GetMediaInfo", [("InstanceID", 0)]), ("Seek", [("InstanceID", 0), ("Unit", "REL_TIME"), ("Target", "0:00:10")])]
        elif "RenderingControl" in stype:
            calls = [("GetVolume", [("InstanceID", 0), ("Channel", "Master")]), ("GetMute", [("InstanceID", 0), ("Channel", "Master")]),
                     ("SetVolume", [("InstanceID", 0), ("Channel", "Nowhere"), ("DesiredVolume", 900)])]
        else:
            calls = [("GetProtocolInfo", [])]
        for action, args in calls + [("NoSuchAction", [])]:
            raw, status, body = soap(host, port, rel(control), stype, action, args)
            save("soap", bytes([0 if status == 200 else 1]) + body)
            if "GetProtocolInfo" == action:
                for sinkinfo in re.findall(rb"<Sink>(.*?)</Sink>", body, re.S):
                    save("upnp-values", sinkinfo[:4000])
        if events:
            request = (f"SUBSCRIBE {rel(events)} HTTP/1.1\r\nHost: {host}:{port}\r\nCALLBACK: <http://{host}:{sink.port}/event>\r\n"
                       f"NT: upnp:event\r\nTIMEOUT: Second-300\r\nConnection: close\r\n\r\n").encode()
            raw, status, body = http_raw(host, port, request)
            save("http-response", raw)
    time.sleep(2)
    for body in sink.bodies:
        save("gena-event", body)
    sink.server.close()
    for value in ["0:00:00", "1:02:03.500", "00:01:30.1/3", "NOT_IMPLEMENTED"]:
        save("upnp-values", value)
    print(f"  {location}: {len(services)} services, {len(sink.bodies)} events")


def renderers():
    subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        # libupnp refuses loopback: a veth pair inside the namespace, as the tests' lab does.
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "link", "add", "vd", "type", "veth", "peer", "name", "vp"],
                    ["ip", "addr", "add", "10.231.0.1/24", "dev", "vd"], ["ip", "addr", "add", "10.231.0.2/24", "dev", "vp"],
                    ["ip", "link", "set", "vd", "up"], ["ip", "link", "set", "vp", "up"],
                    ["ip", "route", "add", "239.0.0.0/8", "dev", "vd"]):
            subprocess.run(["ip", "netns", "exec", NS] + cmd, check=True)
        subprocess.run(["ip", "netns", "exec", NS, sys.executable, __file__, "--inside"], check=True)
    finally:
        subprocess.run(["ip", "netns", "del", NS])


def inside_namespace():
    peers = []
    if shutil.which("gmediarender"):
        peers.append(("gmediarender", subprocess.Popen(
            ["gmediarender", "-I", "vd", "-p", "49494", "-f", "Seed Renderer", "-u", "0c4a3f1e-5eed-4a3f-9b1e-000000000001",
             "--gstout-audiosink=fakesink", "--gstout-videosink=fakesink"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    else:
        print("  gmediarender absent: its seeds are not refreshed", file=sys.stderr)
    config = None
    if shutil.which("rygel"):
        config = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
        config.write("[general]\ninterface=vd\nport=49500\nmedia-engine=librygel-media-engine-gst.so\nupnp-enabled=true\n"
                     "[Playbin]\nenabled=true\ntitle=Seed Rygel\n")
        for plugin in ["MediaExport", "Tracker", "Tracker3", "LMS", "External", "MPRIS", "GstLaunch", "Ruih", "Test"]:
            config.write(f"[{plugin}]\nenabled=false\n")
        config.close()
        peers.append(("rygel", subprocess.Popen(["rygel", "-c", config.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                 env=dict(os.environ, HOME=tempfile.mkdtemp()))))
    else:
        print("  rygel absent: its seeds are not refreshed", file=sys.stderr)
    try:
        time.sleep(6)
        capture_renderers()
    finally:
        for _, process in peers:
            process.terminate()
            process.wait()
        if config:
            os.unlink(config.name)


# --- D-Bus: the BlueZ mock ----------------------------------------------------------------

def split_messages(stream):
    messages, offset = [], 0
    while offset + 16 <= len(stream):
        endian = "<" if stream[offset:offset + 1] == b"l" else ">"
        body, _, fields = struct.unpack_from(endian + "III", stream, offset + 4)
        total = ((16 + fields + 7) & ~7) + body
        messages.append(stream[offset:offset + total])
        offset += total
    return messages


def bluez():
    try:
        import dbus  # noqa: F401
        import dbusmock  # noqa: F401
    except ImportError:
        print("  python3-dbusmock absent: D-Bus seeds are not refreshed", file=sys.stderr)
        return
    workdir = tempfile.mkdtemp()
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--print-address", "--nofork", f"--address=unix:path={workdir}/bus"],
                              stdout=subprocess.PIPE, text=True)
    address = daemon.stdout.readline().strip()
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address, DBUS_SESSION_BUS_ADDRESS=address)
    template = os.path.join(ROOT, "Sources", "MediaRouteTesting", "Resources", "mediaroute_bluez.py")
    monitor = subprocess.Popen(["dbus-monitor", "--address", address, "--binary"], stdout=subprocess.PIPE)
    mock = subprocess.Popen([sys.executable, "-m", "dbusmock", "--system", "--template", template], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        import dbus
        bus = dbus.bus.BusConnection(address)
        control = dbus.Interface(bus.get_object("org.bluez", "/"), "org.mediaroute.BlueZMock")
        control.AddAdapter("hci0", "00:11:22:33:44:55")
        for i, name in enumerate(["Kitchen Speaker", "Живой звук", ""]):
            control.AddDevice("hci0", f"AA:BB:CC:DD:EE:0{i}", name, ["0000184e-0000-1000-8000-00805f9b34fb"], dbus.Int16(-40 - i))
        manager = dbus.Interface(bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
        manager.GetManagedObjects()
        adapter = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.Adapter1")
        adapter.StartDiscovery()
        props = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.freedesktop.DBus.Properties")
        props.GetAll("org.bluez.Adapter1")
        time.sleep(1)
    finally:
        mock.terminate(); mock.wait()
        time.sleep(0.5)
        monitor.terminate()
        stream = monitor.communicate()[0]
        daemon.terminate(); daemon.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    kept = 0
    for message in split_messages(stream):
        if len(message) > 16 * 1024:
            continue
        save("dbus-message", message)
        kept += 1
        if b"InterfacesAdded" in message:
            save("bluez-interfaces-added", message)
    print(f"  BlueZ mock: {kept} D-Bus messages")


# --- netlink --------------------------------------------------------------------------------

def rtnetlink():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    for kind, family in ((18, 0), (22, 0)):  # RTM_GETLINK, RTM_GETADDR
        header = struct.pack("=LHHLL", 16 + 16, kind, 0x301, 1, 0) + struct.pack("=BxHiII", family, 0, 0, 0, 0)
        s.send(header)
        while True:
            data = s.recv(65536)
            if data[4:6] == struct.pack("=H", 3):  # NLMSG_DONE
                break
            # One datagram of notifications as the monitor receives them (dump answers share the layout).
            save("rtnetlink", data[:16 * 1024])
    s.close()


def attribute(kind, value):
    data = struct.pack("=HH", 4 + len(value), kind) + value
    return data + b"\0" * (-len(data) % 4)


def elements():
    ssid = bytes([0, 11]) + b"Living Room"
    rates = bytes([1, 4, 0x82, 0x84, 0x8B, 0x96])
    ds = bytes([3, 1, 6])
    p2p_attrs = bytes([2, 2, 0, 0x25, 0x00]) + bytes([13]) + struct.pack("<H", 6 + 2 + 8 + 1 + 4 + 9) + \
        bytes([0x02, 0, 0, 0, 0, 0x42]) + struct.pack(">H", 0x0188) + struct.pack(">HIH", 7, 0x0050F204, 1) + bytes([0]) + \
        struct.pack(">HH", 0x1011, 5) + b"TV-42"
    p2p = bytes([221, 4 + len(p2p_attrs)]) + bytes([0x50, 0x6F, 0x9A, 9]) + p2p_attrs
    wfd_sub = bytes([0]) + struct.pack(">HHHH", 6, 0x0011, 7236, 300)
    wfd = bytes([221, 4 + len(wfd_sub)]) + bytes([0x50, 0x6F, 0x9A, 10]) + wfd_sub
    setup = bytes([0, 15]) + b"Sonos_A1B2C3D4E"
    samples = {"ap": ssid + rates + ds, "p2p-display": ssid + p2p + wfd, "setup-ssid": setup + rates, "hidden": bytes([0, 0]) + ds}
    for name, data in samples.items():
        save("information-elements", data, name)
    family = 28  # the harness's nl80211 family id
    for name, data in samples.items():
        bss = attribute(1, bytes.fromhex("02000000004" + str(len(name) % 10))) + attribute(2, struct.pack("=I", 2437)) + \
            attribute(7, struct.pack("=i", -5300)) + attribute(6, data) + attribute(11, data)
        payload = bytes([34, 1, 0, 0]) + attribute(3, struct.pack("=I", 3)) + attribute(47, bss)  # NEW_SCAN_RESULTS, IFINDEX, BSS
        message = struct.pack("=LHHLL", 16 + len(payload), family, 2, 7, 0) + payload
        done = struct.pack("=LHHLL", 20, 3, 2, 7, 0) + struct.pack("=i", 0)
        save("nl80211-scan", message + done, name)


# --- mDNS, from RFC 6762/6763 layouts ---------------------------------------------------------

def dns_name(name):
    return b"".join(bytes([len(p)]) + p.encode() for p in name.split(".") if p) + b"\0"


def mdns():
    service = "_googlecast._tcp.local"
    instance = "Living Room TV." + service
    query = struct.pack(">HHHHHH", 0, 0, 1, 0, 0, 0) + dns_name(service) + struct.pack(">HH", 12, 1)
    save("dns", query, "query-ptr")
    rr = lambda name, kind, data, flush=False: dns_name(name) + struct.pack(">HHIH", kind, 0x8001 if flush else 1, 120, len(data)) + data
    txt = b"".join(bytes([len(t)]) + t for t in [b"id=0c4a3f1e", b"fn=Living Room TV", b"md=Chromecast", b"ve=05"])
    answer = struct.pack(">HHHHHH", 0, 0x8400, 0, 1, 0, 3) + rr(service, 12, dns_name(instance)) + \
        rr(instance, 33, struct.pack(">HHH", 0, 0, 8009) + dns_name("tv-42.local"), True) + rr(instance, 16, txt, True) + \
        rr("tv-42.local", 1, bytes([192, 0, 2, 42]), True)
    save("dns", answer, "answer-cast")
    # The same answer with its names compressed (pointer to offset 12), as responders send it.
    compressed = struct.pack(">HHHHHH", 0, 0x8400, 0, 2, 0, 0) + dns_name(service) + struct.pack(">HHIH", 12, 1, 120, 17) + \
        bytes([14]) + b"Living Room TV" + b"\xc0\x0c" + b"\xc0\x1e" + struct.pack(">HHIH", 28, 0x8001, 120, 16) + bytes(15) + b"\x01"
    save("dns", compressed, "answer-compressed")


# --- files and payloads ---------------------------------------------------------------------

def files():
    with open(os.path.join(ROOT, "config", "mediaroute.conf"), "rb") as f:
        save("config", f.read(), "shipped")
    save("config", "[routing]\npreferred-protocols = org.mediaroute.upnp, org.mediaroute.ble-speaker\n[wifi]\nscan = active\nsetup-ssid = Sonos_*\n", "routing")
    for folder, _, names in os.walk(os.path.join(ROOT, "udev")):
        for name in names:
            if name.endswith(".rules"):
                with open(os.path.join(folder, name), "rb") as f:
                    save("udev", f.read(), name)
    save("udev", "DEVTYPE=wlan\nINTERFACE=wlan0\nIFINDEX=3\nMEDIAROUTE_TRANSPORT=wifi\nMEDIAROUTE_ROLE=primary\nMEDIAROUTE_WIFI_SCAN=active\n", "uevent")
    save("udev", "I:1234567\nE:ID_NET_NAME=wlp2s0\nE:MEDIAROUTE_TRANSPORT=wifi\nE:MEDIAROUTE_ENABLED=0\nG:systemd\n", "database")
    base = {"aps": {"event": "start", "timestamp": 1764000000, "attributes": {"id": "session-1", "title": "Song", "duration": 215.5,
                                                                              "started": "2026-11-24T10:00:00Z", "rate": 1.0, "queue": ["a", "b"]}}}
    save("push-json", json.dumps(base), "start")
    base["aps"]["event"] = "update"; base["aps"]["attributes"]["started"] = 1764000000.25
    save("push-json", json.dumps(base), "update")
    save("push-json", '{"aps":{"event":"end","timestamp":1764000100,"attributes":{"id":"session-1"}}}', "end")
    scenarios = os.path.join(ROOT, "Tests", "Fixtures")
    save("loopback-scenario", json.dumps({"devices": [{"name": "Living Room TV", "kind": "tv", "pin": "1234"},
                                                       {"name": "Kitchen Speaker", "kind": "speaker", "fails": {"after": 2, "volume": 0.5}}]}), "two-devices")
    save("loopback-wire", '{"sequence":1,"body":{"hello":{}}}', "hello")
    save("loopback-wire", '{"sequence":2,"body":{"pair":{"pin":"1234"}}}', "pair")
    save("loopback-wire", '{"sequence":3,"body":{"url":"http://192.0.2.1/a.mp3","state":"playing","position":1.5,"volume":0.5,"muted":false}}', "status")
    for header in [b"bytes=0-", b"bytes=100-199", b"bytes=-500", b"bytes=1-2,3-4"]:
        save("http-range", bytes([0x10, 0x00]) + header, header.decode().replace("=", "-").replace(",", "_"))
    save("http-response", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "chunked")
    save("http-response", b"HTTP/1.1 302 Found\r\nLocation: http://192.0.2.1:80/elsewhere\r\nContent-Length: 0\r\n\r\n", "redirect")


# --- Cast ----------------------------------------------------------------------------

def cast():
    """What the test Cast receiver (Tests/Peers/cast_receiver.py) sends a sender that connects,
    launches the media receiver, loads, queues and stops: each read off its TLS stream is a seed."""
    import ssl
    sys.path.insert(0, os.path.join(ROOT, "Tests", "Peers"))
    import cast_receiver
    folder = tempfile.mkdtemp()
    cert, key = os.path.join(folder, "c.pem"), os.path.join(folder, "c.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=seed"], check=True, capture_output=True)
    peer = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "Peers", "cast_receiver.py"), "--port", "0",
                             "--cert", cert, "--key", key], stdout=subprocess.PIPE, text=True)
    port = json.loads(peer.stdout.readline())["port"]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    stream = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))

    def send(source, destination, namespace, payload):
        body = cast_receiver.encode(source, destination, namespace, json.dumps(payload))
        stream.sendall(struct.pack(">I", len(body)) + body)
        time.sleep(0.2)
        stream.settimeout(0.5)
        data = b""
        try:
            while True:
                chunk = stream.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (socket.timeout, ssl.SSLError):
            pass
        return data

    seeds = []
    seeds.append(send("sender-0", "receiver-0", cast_receiver.CONNECTION, {"type": "CONNECT"}) or None)
    seeds.append(send("sender-0", "receiver-0", cast_receiver.HEARTBEAT, {"type": "PING"}))
    seeds.append(send("sender-0", "receiver-0", cast_receiver.RECEIVER, {"type": "GET_STATUS", "requestId": 1}))
    launched = send("sender-0", "receiver-0", cast_receiver.RECEIVER, {"type": "LAUNCH", "appId": "CC1AD845", "requestId": 2})
    seeds.append(launched)
    transport = re.search(rb'"transportId": "([^"]+)"', launched).group(1).decode()
    send("sender-1", transport, cast_receiver.CONNECTION, {"type": "CONNECT"})
    media = {"contentId": "http://192.0.2.1/a.mp3", "contentType": "audio/mpeg", "streamType": "BUFFERED",
             "metadata": {"metadataType": 3, "title": "Song", "artist": "Band", "images": [{"url": "http://192.0.2.1/c.jpg"}]}}
    seeds.append(send("sender-1", transport, cast_receiver.MEDIA, {"type": "LOAD", "requestId": 3, "media": media, "autoplay": True}))
    seeds.append(send("sender-1", transport, cast_receiver.MEDIA, {"type": "QUEUE_INSERT", "requestId": 4, "mediaSessionId": 1, "items": [{"media": media}]}))
    seeds.append(send("sender-1", transport, cast_receiver.MEDIA, {"type": "LOAD", "requestId": 5, "media": dict(media, contentId="http://192.0.2.1/load-fail")}))
    seeds.append(send("sender-0", "receiver-0", cast_receiver.RECEIVER, {"type": "LAUNCH", "appId": "NOSUCHAP", "requestId": 6}))
    seeds.append(send("sender-0", "receiver-0", cast_receiver.RECEIVER, {"type": "STOP", "sessionId": "x", "requestId": 7}))
    stream.close()
    peer.kill()
    shutil.rmtree(folder)
    for index, seed in enumerate(s for s in seeds if s):
        save("cast-channel", seed, "reply-%02d" % index)


if __name__ == "__main__":
    if sys.argv[1:] == ["--inside"]:
        inside_namespace()
        sys.exit(0)
    if sys.argv[1:] == ["--only", "cast"]:
        cast()
        sys.exit(0)
    print("fuzz seeds into", CORPUS)
    cast()
    renderers()
    bluez()
    rtnetlink()
    elements()
    mdns()
    files()
    for name in sorted(os.listdir(CORPUS)):
        print(f"  {name}: {len(os.listdir(os.path.join(CORPUS, name)))} seeds")
