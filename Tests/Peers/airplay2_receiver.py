#!/usr/bin/python3
"""An AirPlay 2 receiver's pairing and control channel, for MediaRoute's tests.

The receiver side of HAP pairing is built from kept libraries, not from the sender under
test: PyPI's srptools (SRP-6a, 3072-bit group, SHA-512) and Debian's python3-cryptography
(Ed25519, X25519, ChaCha20-Poly1305, HKDF-SHA-512). It speaks RTSP on TCP:

  POST /pair-setup   transient (flags 0x10, code 3939) or with --pin, M1..M6
  POST /pair-verify  M1..M4 against the controllers paired with --pin
  after either, every byte both ways is framed and encrypted as AirPlay 2 does
  GET /info          a binary property list (after pairing, so encrypted)
  POST /test/forget  (plain, test control) forget every paired controller, as a reset receiver
  SETUP              a binary plist: the session (timingProtocol PTP; answered with an event
                     port) or its stream (type 96, ALAC, the stream key shk; answered with our
                     UDP data and control ports)
  RECORD, SETPEERS, SET_PARAMETER (volume, progress, DMAP), FLUSH, POST /feedback, TEARDOWN

Audio: every packet on the data port is opened with the stream key (ChaCha20-Poly1305,
python3-cryptography) and kept; sync packets (215) on the control port are logged. At TEARDOWN
the ALAC frames are put in a CAF file and decoded by FFmpeg to 16-bit PCM
("recording": path, with each packet's RTP time, its intended play time and its arrival on this
host's CLOCK_MONOTONIC, from the last sync packet and the PTP master's clock as followed here).

Timing (--timing):
  ptp          (default) with --ptp-port BASE, a follower on BASE (event) and BASE+1 (general) at
               --address, as nqptp on 319/320: it logs the master's clock identity and its offset
               from ours. POST /test/restart-ptp (plain) closes it and opens it again a second
               later, its offset forgotten, as nqptp restarted.
  grandmaster  as HomePodOS 27 is reported to be: on BASE/BASE+1 it is the PTP master of the
               sender that set up a session (Announce with priority1 100, two-step Syncs eight a
               second, Delay_Resp), on a clock of its own far from ours; our Syncs are counted.
  ntp          the session must say timingProtocol NTP and a timingPort; it asks the sender's
               timing port (AirPlay 1's 0xD2 requests) and times by the reply with the least
               round trip of the last 16; sync packets are AirPlay 1's (0xD4, NTP time).
--raop: an AirPlay 1 receiver instead (no pairing, no encryption): OPTIONS (Public names POST),
ANNOUNCE (SDP), SETUP (Transport: our ports back; NTP timing to the sender's timing_port),
RECORD (Audio-Latency 11035), plain ALAC in RTP; with --auth-setup, ANNOUNCE is refused 403
until POST /auth-setup (0x01 and a 32-byte Curve25519 key) came, as AirPort Express 7.8 and
Sonos do; the answer is a key and a stand-in certificate, as they send (nobody can check it).
With --verification (and --pin), an Apple TV's device verification: OPTIONS and ANNOUNCE are refused
403 until the connection proved a sender key with POST /pair-verify; POST /pair-pin-start "shows"
--pin; POST /pair-setup-pin (three binary plists: SRP-6a 2048-bit/SHA-1, then the sender's Ed25519
key sealed with AES-128-GCM) keeps the sender's key.
Sync packets of every kind are read by shairport-sync's rule: the frame they name, less 11 035,
plays at the time they carry.

Options: --port (0: any; the port is printed as "listening PORT"), --address (127.0.0.1),
--pin CODE (PIN pairing required, transient refused with kTLVError 2), --identifier, --name,
--ptp-port, --timing, --announce (as `_airplay._tcp` alone over mDNS on --address, with python3-zeroconf, with
shairport-sync 5's features; `flags` asks for a PIN with --pin). Every request is printed to stdout as a JSON line, flushed at once.
"""

import argparse
import hashlib
import json
import plistlib
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from srptools import SRPContext, SRPServerSession, constants

RAW = serialization.Encoding.Raw
RAW_PUBLIC = serialization.PublicFormat.Raw

# Linux's SO_TIMESTAMPNS (asm-generic and x86: 35; Python 3.11 does not name it): the kernel's receive time.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)

STATE, METHOD, IDENTIFIER, SALT, PUBLIC_KEY, PROOF, ENCRYPTED, ERROR, SIGNATURE, FLAGS = 6, 0, 1, 2, 3, 4, 5, 7, 10, 0x13


N2048 = int(
    "AC6BDB41324A9A9BF166DE5E1389582FAF72B6651987EE07FC3192943DB56050A37329CBB4A099ED8193E0757767A13DD5"
    "2312AB4B03310DCD7F48A9DA04FD50E8083969EDB767B0CF6095179A163AB3661A05FBD5FAAAE82918A9962F0B93B855F9"
    "7993EC975EEAA80D740ADBF4FF747359D041D5C33EA71D281E446B14773BCA97B43A23FB801676BD207A436C6481F1D2B9"
    "078717461A5B9D32E688F87748544523B524B0D57D5EA77A2775D2ECFA032CFBDBF52FB3786160279004E57AE6AF874E73"
    "03CE53299CCC041C7BC308D82A5698F3A8D0C38271AE35F8E9DBFBB694B5C803D89F7AE435DE236D525F54759B65E372FC"
    "D68EF20FA7111F9E4AFF73", 16)


def sha1(data):
    return hashlib.sha1(data).digest()


def minimal(data):
    return data.lstrip(b"\0") or b"\0"


def minimal_int(value):
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def tlv_decode(data):
    items, index, last_full = [], 0, False
    while index + 2 <= len(data):
        kind, length = data[index], data[index + 1]
        value = data[index + 2:index + 2 + length]
        if last_full and items and items[-1][0] == kind:
            items[-1] = (kind, items[-1][1] + value)
        else:
            items.append((kind, value))
        last_full = length == 255
        index += 2 + length
    return dict(items)


def tlv_encode(*items):
    out = b""
    for kind, value in items:
        if not value:
            out += bytes([kind, 0])
        for start in range(0, len(value), 255):
            chunk = value[start:start + 255]
            out += bytes([kind, len(chunk)]) + chunk
    return out


def ptp_sockets(address, base):
    """The two PTP ports at `address`: event (BASE, with the kernel's receive times) and general (BASE+1)."""
    event = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    event.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    event.bind((address, base))
    general = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    general.bind((address, base + 1))
    return event, general


def stamped_datagrams(sock):
    """Each datagram, its source and the kernel's receive time (CLOCK_REALTIME, taken to
    CLOCK_MONOTONIC at once, in ns), until the socket is closed."""
    while True:
        try:
            data, ancillary, _, source = sock.recvmsg(2048, 64)
        except OSError:
            return
        now_real, now_mono = time.clock_gettime_ns(time.CLOCK_REALTIME), time.monotonic_ns()
        arrived = now_mono
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
                seconds, nanoseconds = struct.unpack("qq", value[:16])
                arrived = seconds * 1_000_000_000 + nanoseconds - (now_real - now_mono)
        yield data, source, arrived


def hkdf(secret, salt, info):
    return HKDF(algorithm=hashes.SHA512(), length=32, salt=salt.encode(), info=info.encode()).derive(secret)


def nonce(label):
    return b"\x00\x00\x00\x00" + label.encode()


class Receiver:
    def __init__(self, args):
        self.args = args
        self.identity = Ed25519PrivateKey.generate()
        self.identity_public = self.identity.public_key().public_bytes(RAW, RAW_PUBLIC)
        self.controllers = {}  # identifier -> Ed25519 public key bytes
        self.verified_keys = set()  # --verification: the senders' Ed25519 keys kept by /pair-setup-pin
        self.lock = threading.Lock()
        # PTP as followed here: the master's clock id and (master time - our monotonic time) in ns.
        self.master_clock = None
        self.master_offset = None
        self.syncs = 0
        self.ptp_sockets = []
        # Grandmaster mode: our clock (monotonic + a large offset), identity, and who we lead.
        self.gm_offset = (777 << 30) + int.from_bytes(os.urandom(3), "big")
        self.gm_identity = os.urandom(8)
        self.gm_targets = set()
        self.foreign_syncs = 0

    def restart_ptp(self):
        for sock in self.ptp_sockets:
            sock.close()
        self.ptp_sockets = []
        self.master_offset = None
        self.syncs = 0
        self.log(ptp_restart=True)

        def again():
            time.sleep(1)
            self.follow_ptp(self.args.ptp_port)
        threading.Thread(target=again, daemon=True).start()

    def follow_ptp(self, base):
        event, general = ptp_sockets(self.args.address, base)
        self.ptp_sockets = [event, general]
        arrivals = {}
        recent = []

        def on_event():
            for data, source, arrived in stamped_datagrams(event):
                if len(data) >= 34 and data[0] & 0x0F == 0 and source[1] == base:
                    arrivals[struct.unpack(">H", data[30:32])[0]] = arrived

        def on_general():
            while True:
                try:
                    data, source = general.recvfrom(2048)
                except OSError:
                    return
                if len(data) < 44 or source[1] != base + 1:
                    continue
                kind = data[0] & 0x0F
                clock = data[20:28].hex()
                if kind == 0xB:
                    self.log(announce=clock)
                elif kind == 8:
                    sequence = struct.unpack(">H", data[30:32])[0]
                    arrived = arrivals.pop(sequence, None)
                    if arrived is None:
                        continue
                    seconds = int.from_bytes(data[34:40], "big")
                    nanoseconds = struct.unpack(">I", data[40:44])[0]
                    # master - local is the true offset less the one-way delay: the largest of the
                    # last 16 is the least delayed, as nqptp's filter keeps it.
                    recent.append(seconds * 1_000_000_000 + nanoseconds - arrived)
                    del recent[:-16]
                    self.master_clock = clock
                    self.master_offset = max(recent)
                    self.syncs += 1
                    if self.syncs in (1, 8) or self.syncs % 64 == 0:
                        self.log(ptp=clock, follow_ups=self.syncs, offset=self.master_offset)

        threading.Thread(target=on_event, daemon=True).start()
        threading.Thread(target=on_general, daemon=True).start()

    def lead_ptp(self, base):
        """The grandmaster: Announce, Sync/Follow_Up to each target, Delay_Resp to its Delay_Req."""
        event, general = ptp_sockets(self.args.address, base)
        self.master_clock = self.gm_identity.hex()
        self.master_offset = self.gm_offset
        self.log(grandmaster=self.master_clock)

        def now():
            return time.monotonic_ns() + self.gm_offset

        def header(kind, length, sequence, flags=0, control=5, interval=-3):
            return struct.pack(">BBHBBHq4s8sHHBb", kind, 2, length, 0, 0, flags, 0, b"\x00" * 4, self.gm_identity, 1, sequence, control, interval)

        def timestamp(ns):
            return struct.pack(">HII", (ns // 1_000_000_000) >> 32, (ns // 1_000_000_000) & 0xFFFFFFFF, ns % 1_000_000_000)

        def on_event():
            for data, source, arrived in stamped_datagrams(event):
                if len(data) < 44 or source[1] != base:
                    continue
                if data[0] & 0x0F == 0:
                    self.foreign_syncs += 1
                elif data[0] & 0x0F == 1 and source[0] in self.gm_targets:
                    sequence = struct.unpack(">H", data[30:32])[0]
                    body = timestamp(arrived + self.gm_offset) + data[20:30]
                    general.sendto(header(9, 54, sequence, control=3) + body, (source[0], base + 1))

        def announce(target, sequence):
            body = timestamp(now()) + struct.pack(">hBBBBHB8sHB", 37, 0, 100, 248, 0xFE, 0xFFFF, 100, self.gm_identity, 0, 0xA0)
            general.sendto(header(0xB, 64, sequence, interval=0) + body, (target, base + 1))

        # A new sender hears our Announce at once (before the SETUP is answered), then once a second.
        self.announce_to = lambda target: announce(target, 0)

        def lead():
            sequence = 0
            while True:
                for target in list(self.gm_targets):
                    if sequence % 8 == 0:
                        announce(target, sequence // 8)
                    event.sendto(header(0, 44, sequence, flags=0x0200, control=0) + timestamp(0), (target, base))
                    sent = now()
                    general.sendto(header(8, 44, sequence, control=2) + timestamp(sent), (target, base + 1))
                sequence = (sequence + 1) & 0xFFFF
                time.sleep(0.125)

        threading.Thread(target=on_event, daemon=True).start()
        threading.Thread(target=lead, daemon=True).start()

    def log(self, **fields):
        with self.lock:
            sys.stdout.write(json.dumps(fields) + "\n")
            sys.stdout.flush()


class Connection:
    def __init__(self, receiver, sock):
        self.receiver = receiver
        self.sock = sock
        self.buffer = b""
        self.read_key = self.write_key = None
        self.read_count = self.write_count = 0
        self.setup = {}
        self.verify = {}
        self.stream = None
        self.authed = False
        self.fruit = {}  # --verification: this connection's /pair-setup-pin and /pair-verify state
        self.device_verified = False

    # The channel: plain until paired, then 2-byte length + ChaCha20-Poly1305 frames.
    def receive_bytes(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        if self.read_key is None:
            self.buffer += data
            return
        self.pending = getattr(self, "pending", b"") + data
        while len(self.pending) >= 2:
            length = struct.unpack("<H", self.pending[:2])[0]
            if len(self.pending) < 2 + length + 16:
                break
            frame = self.pending[2:2 + length + 16]
            plain = ChaCha20Poly1305(self.read_key).decrypt(b"\x00" * 4 + struct.pack("<Q", self.read_count), frame, self.pending[:2])
            self.read_count += 1
            self.buffer += plain
            self.pending = self.pending[2 + length + 16:]

    def send_bytes(self, data):
        if self.write_key is None:
            self.sock.sendall(data)
            return
        out = b""
        for start in range(0, max(len(data), 1), 1024):
            block = data[start:start + 1024]
            length = struct.pack("<H", len(block))
            out += length + ChaCha20Poly1305(self.write_key).encrypt(b"\x00" * 4 + struct.pack("<Q", self.write_count), block, length)
            self.write_count += 1
        self.sock.sendall(out)

    def read_request(self):
        while b"\r\n\r\n" not in self.buffer:
            self.receive_bytes()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("utf-8", "replace").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            self.receive_bytes()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return method, path, headers, body

    def respond(self, headers, status=200, body=b"", content_type="application/octet-stream", then=None):
        self.take_time()
        text = "RTSP/1.0 %d %s\r\nCSeq: %s\r\nServer: AirTunes/377.40.00\r\n" % (status, "OK" if status == 200 else "Error", headers.get("cseq", "0"))
        if body:
            text += "Content-Type: %s\r\nContent-Length: %d\r\n" % (content_type, len(body))
        self.send_bytes(text.encode() + b"\r\n" + body)
        if then:
            then()

    def take_time(self):
        """A slow receiver (or one under load): each answer after --answer-delay ms."""
        if self.receiver.args.answer_delay:
            time.sleep(self.receiver.args.answer_delay / 1000)

    def respond_raw(self, headers, status, lines):
        self.take_time()
        text = "RTSP/1.0 %d %s\r\nCSeq: %s\r\n" % (status, "OK" if status == 200 else "Error", headers.get("cseq", "0"))
        self.send_bytes((text + "".join(line + "\r\n" for line in lines) + "\r\n").encode())

    def serve(self):
        try:
            while True:
                method, path, headers, body = self.read_request()
                self.receiver.log(method=method, path=path, encrypted=self.read_key is not None, length=len(body))
                if self.receiver.args.verification and method == "POST" and path in ("/pair-pin-start", "/pair-setup-pin", "/pair-verify"):
                    self.device_verification(path, headers, body)
                elif self.receiver.args.verification and method in ("OPTIONS", "ANNOUNCE") and not self.device_verified:
                    self.receiver.log(refused=method, code=403)
                    self.respond(headers, status=403)
                elif method == "POST" and path == "/pair-setup":
                    self.pair_setup(headers, body)
                elif method == "POST" and path == "/pair-verify":
                    self.pair_verify(headers, body)
                elif method == "POST" and path == "/test/restart-ptp":
                    self.receiver.restart_ptp()
                    self.respond(headers)
                elif method == "POST" and path == "/test/forget":
                    self.receiver.controllers.clear()
                    self.respond(headers)
                elif method == "GET" and path == "/info":
                    if self.read_key is None:
                        self.respond(headers, status=470)
                        continue
                    info = {"deviceID": "AA:BB:CC:DD:EE:FF", "name": self.receiver.args.name, "features": 0x1C340405D4A00,
                            "pi": self.receiver.args.identifier, "pk": self.receiver.identity_public}
                    self.respond(headers, body=plistlib.dumps(info, fmt=plistlib.FMT_BINARY), content_type="application/x-apple-binary-plist")
                elif self.receiver.args.raop and method == "OPTIONS":
                    self.respond_raw(headers, 200, ["Public: ANNOUNCE, SETUP, RECORD, PAUSE, FLUSH, TEARDOWN, OPTIONS, GET_PARAMETER, SET_PARAMETER, POST, GET"])
                elif self.receiver.args.raop and method == "POST" and path == "/auth-setup":
                    self.authed = len(body) == 33 and body[0] == 1
                    self.receiver.log(auth_setup=len(body), flag=body[0] if body else None)
                    self.respond(headers, body=os.urandom(32) + b"stand-in certificate" if self.authed else b"", status=200 if self.authed else 400)
                elif self.receiver.args.raop and method == "ANNOUNCE":
                    if self.receiver.args.auth_setup and not self.authed:
                        self.receiver.log(refused="ANNOUNCE", code=403)
                        self.respond(headers, status=403)
                    else:
                        self.receiver.log(announce=body.decode("utf-8", "replace").count("a=fmtp:96"))
                        self.respond(headers)
                elif self.receiver.args.raop and method == "SETUP":
                    fields = dict(part.split("=", 1) for part in headers.get("transport", "").split(";") if "=" in part)
                    self.start_ntp(self.sock.getpeername()[0], int(fields.get("timing_port", "0")))
                    self.end_stream()
                    self.stream = Stream(self.receiver, None, 352)
                    self.receiver.log(setup="raop", control_port=fields.get("control_port"))
                    self.respond_raw(headers, 200, ["Transport: RTP/AVP/UDP;unicast;mode=record;server_port=%d;control_port=%d;timing_port=%d" % (
                        self.stream.data.getsockname()[1], self.stream.control.getsockname()[1], self.ntp.getsockname()[1]), "Session: 1"])
                elif self.receiver.args.raop and method == "RECORD":
                    self.respond_raw(headers, 200, ["Audio-Latency: 11035"])
                elif self.read_key is None and not self.receiver.args.raop:
                    self.respond(headers, status=470)
                elif method == "SETUP":
                    self.setup_request(headers, body)
                elif method == "RECORD" or (method == "POST" and path == "/feedback"):
                    self.respond(headers)
                elif method == "SETPEERS":
                    self.receiver.log(peers=plistlib.loads(body))
                    self.respond(headers)
                elif method == "SET_PARAMETER":
                    kind = headers.get("content-type", "")
                    if kind == "text/parameters":
                        for line in body.decode("utf-8", "replace").splitlines():
                            name, _, value = line.partition(":")
                            self.receiver.log(parameter=name.strip(), value=value.strip())
                    else:
                        self.receiver.log(metadata=kind, length=len(body))
                    self.respond(headers)
                elif method == "SETRATEANCHORTIME":
                    anchor = plistlib.loads(body)
                    # A fraction of half a second or more is a negative 8-byte integer in a binary plist: its bits are what count.
                    fraction = anchor.get("networkTimeFrac", 0) & 0xFFFFFFFFFFFFFFFF
                    network = anchor.get("networkTimeSecs", 0) * 1_000_000_000 + ((fraction >> 32) * 1_000_000_000 >> 32)
                    self.receiver.log(rate=anchor.get("rate"), rtpTime=anchor.get("rtpTime"), network=network,
                                      clock="%016x" % (anchor.get("networkTimeTimelineID", 0) & 0xFFFFFFFFFFFFFFFF))
                    if self.stream and anchor.get("rate") == 1:
                        self.stream.anchor = (anchor.get("rtpTime", 0), network)
                    self.respond(headers)
                elif method == "FLUSHBUFFERED":
                    flush = plistlib.loads(body)
                    self.receiver.log(flush_buffered=flush.get("flushUntilSeq"), until_ts=flush.get("flushUntilTS"))
                    if self.stream:
                        self.stream.flushes.append(flush)
                    self.respond(headers)
                elif method == "FLUSH":
                    self.receiver.log(flush=headers.get("rtp-info", ""))
                    if self.stream:
                        self.stream.flushes.append(headers.get("rtp-info", ""))
                    self.respond(headers)
                elif method == "TEARDOWN":
                    self.respond(headers)
                    self.end_stream()
                else:
                    self.respond(headers, status=501)
        except (EOFError, ConnectionError, OSError):
            pass
        except Exception as error:  # a forged frame: the channel is over
            self.receiver.log(error=repr(error))
        finally:
            self.sock.close()
            self.end_stream()

    def setup_request(self, headers, body):
        request = plistlib.loads(body)
        if "streams" not in request:
            self.receiver.log(setup="session", timingProtocol=request.get("timingProtocol"), deviceID=request.get("deviceID"),
                              groupUUID=request.get("groupUUID"),
                              clock=request.get("timingPeerInfo", {}).get("ClockID"), addresses=request.get("timingPeerInfo", {}).get("Addresses"))
            wanted = "NTP" if self.receiver.args.timing == "ntp" else "PTP"
            if request.get("timingProtocol") != wanted:
                return self.respond(headers, status=501)
            if wanted == "NTP":
                if not request.get("timingPort"):
                    return self.respond(headers, status=400)
                self.start_ntp(self.sock.getpeername()[0], request["timingPort"])
            elif self.receiver.args.timing == "grandmaster":
                self.receiver.gm_targets.add(self.sock.getpeername()[0])
                self.receiver.announce_to(self.sock.getpeername()[0])
            events = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            events.bind((self.receiver.args.address, 0))
            events.listen(1)
            self.events = events
            threading.Thread(target=self.serve_events, args=(events,), daemon=True).start()
            reply = {"eventPort": events.getsockname()[1], "timingPort": self.ntp.getsockname()[1] if wanted == "NTP" else 0}
            return self.respond(headers, body=plistlib.dumps(reply, fmt=plistlib.FMT_BINARY), content_type="application/x-apple-binary-plist")
        stream = request["streams"][0]
        self.receiver.log(setup="stream", type=stream.get("type"), ct=stream.get("ct"), spf=stream.get("spf"), sr=stream.get("sr"),
                          audioFormat=stream.get("audioFormat"), keyLength=len(stream.get("shk", b"")))
        self.end_stream()
        if stream.get("type") == 103:
            self.stream = BufferedStream(self.receiver, stream["shk"])
            reply = {"streams": [{"type": 103, "dataPort": self.stream.listener.getsockname()[1], "audioBufferSize": 8388608}]}
            return self.respond(headers, body=plistlib.dumps(reply, fmt=plistlib.FMT_BINARY), content_type="application/x-apple-binary-plist")
        self.stream = Stream(self.receiver, stream["shk"], stream.get("spf", 352))
        reply = {"streams": [{"type": 96, "dataPort": self.stream.data.getsockname()[1], "controlPort": self.stream.control.getsockname()[1]}]}
        self.respond(headers, body=plistlib.dumps(reply, fmt=plistlib.FMT_BINARY), content_type="application/x-apple-binary-plist")

    def serve_events(self, listener):
        """The event channel: the sender connects; encrypted with the pairing's events keys (we
        write with Events-Write, read with Events-Read); we send one request, log the answer."""
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        write_key = hkdf(self.secret, "Events-Salt", "Events-Write-Encryption-Key")
        read_key = hkdf(self.secret, "Events-Salt", "Events-Read-Encryption-Key")
        self.receiver.log(events_connected=True)
        body = plistlib.dumps({"type": "updateMRSupportedCommands"}, fmt=plistlib.FMT_BINARY)
        request = ("POST /command RTSP/1.0\r\nCSeq: 7\r\nContent-Type: application/x-apple-binary-plist\r\nContent-Length: %d\r\n\r\n" % len(body)).encode() + body
        try:
            length = struct.pack("<H", len(request))
            sock.sendall(length + ChaCha20Poly1305(write_key).encrypt(b"\x00" * 4 + struct.pack("<Q", 0), request, length))
            data = b""
            while len(data) < 2 or len(data) < 2 + struct.unpack("<H", data[:2])[0] + 16:
                piece = sock.recv(4096)
                if not piece:
                    return self.receiver.log(event_reply=None)
                data += piece
            size = struct.unpack("<H", data[:2])[0]
            plain = ChaCha20Poly1305(read_key).decrypt(b"\x00" * 4 + struct.pack("<Q", 0), data[2:2 + size + 16], data[:2])
            self.receiver.log(event_reply=plain.decode("utf-8", "replace").split("\r\n")[0], cseq="CSeq: 7" in plain.decode("utf-8", "replace"))
            if self.receiver.args.event_flood:
                self.flood_events(sock, write_key, read_key, data[2 + size + 16:])
        except Exception as error:
            self.receiver.log(event_reply=None, error=repr(error))
        finally:
            sock.close()

    def flood_events(self, sock, write_key, read_key, pending):
        """--event-flood N: N more requests at once; logs how many were answered before the
        sender closed the channel (event_flood: sent, answered, closed)."""
        frames = []
        for number in range(1, self.receiver.args.event_flood + 1):
            request = ("POST /command RTSP/1.0\r\nCSeq: %d\r\nContent-Length: 0\r\n\r\n" % (100 + number)).encode()
            length = struct.pack("<H", len(request))
            frames.append(length + ChaCha20Poly1305(write_key).encrypt(b"\x00" * 4 + struct.pack("<Q", number), request, length))
        sent = 0
        try:
            for frame in frames:
                sock.sendall(frame)
                sent += 1
        except OSError:
            pass
        answered, closed, data, count = 0, False, pending, 1
        sock.settimeout(5)
        try:
            while True:
                while len(data) >= 2 and len(data) >= 2 + struct.unpack("<H", data[:2])[0] + 16:
                    size = struct.unpack("<H", data[:2])[0]
                    ChaCha20Poly1305(read_key).decrypt(b"\x00" * 4 + struct.pack("<Q", count), data[2:2 + size + 16], data[:2])
                    count += 1
                    answered += 1
                    data = data[2 + size + 16:]
                piece = sock.recv(65536)
                if not piece:
                    closed = True
                    break
                data += piece
        except OSError as error:
            closed = not isinstance(error, socket.timeout)
        self.receiver.log(event_flood=sent, answered=answered, closed=closed)

    def start_ntp(self, host, port):
        """NTP timing as an AirPlay 1 receiver does it: requests to the sender's timing port."""
        receiver = self.receiver
        self.ntp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.ntp.bind((receiver.args.address, 0))
        ntp, sent, samples = self.ntp, {}, []

        def ntp_ns(data):
            seconds, fraction = struct.unpack(">II", data)
            return seconds * 1_000_000_000 + (fraction * 1_000_000_000 >> 32)

        def ask():
            count = 0
            while True:
                t1 = time.monotonic_ns()
                stamp = struct.pack(">II", t1 // 1_000_000_000, (t1 % 1_000_000_000 << 32) // 1_000_000_000)
                sent[stamp] = t1
                try:
                    ntp.sendto(bytes([0x80, 0xD2, 0x00, 0x07]) + b"\x00" * 20 + stamp, (host, port))
                except OSError:
                    return
                count += 1
                time.sleep(0.1 if count < 8 else 1.0)

        def answers():
            while True:
                try:
                    data = ntp.recv(128)
                except OSError:
                    return
                t4 = time.monotonic_ns()
                if len(data) < 32 or data[1] != 0xD3 or data[8:16] not in sent:
                    continue
                t1 = sent.pop(data[8:16])
                t2, t3 = ntp_ns(data[16:24]), ntp_ns(data[24:32])
                samples.append((t4 - t1 - (t3 - t2), ((t2 - t1) + (t3 - t4)) // 2))
                del samples[:-16]
                receiver.master_offset = min(samples)[1]
                receiver.master_clock = "ntp"
                receiver.syncs += 1
                if receiver.syncs in (1, 8):
                    receiver.log(ntp=receiver.syncs, offset=receiver.master_offset, round_trip=min(samples)[0])

        threading.Thread(target=ask, daemon=True).start()
        threading.Thread(target=answers, daemon=True).start()

    def end_stream(self):
        stream, self.stream = self.stream, None
        if stream:
            stream.finish()

    def fail(self, headers, state, code):
        self.receiver.log(refused=state, code=code)
        self.respond(headers, body=tlv_encode((STATE, bytes([state])), (ERROR, bytes([code]))))

    def device_verification(self, path, headers, body):
        """An Apple TV's device verification of AirPlay 1 senders, from OwnTone's description of it
        (src/pair_ap/pair_fruit.c, the sender's side): SRP-6a on RFC 5054's 2048-bit group with
        SHA-1 and K = SHA-1(S|0000) | SHA-1(S|0001); the sender's Ed25519 key sealed with
        AES-128-GCM; pair-verify with X25519 and AES-128-CTR, the keystream's first 64 bytes
        spent on our 64. Python's integers do the arithmetic."""
        state = self.fruit
        if path == "/pair-pin-start":
            self.receiver.log(pin_start=self.receiver.args.pin)
            return self.respond(headers)
        if path == "/pair-setup-pin":
            request = plistlib.loads(body)
            if "method" in request:
                state.clear()
                state["user"] = request.get("user", "")
                state["salt"] = os.urandom(16)
                x = int.from_bytes(sha1(minimal(state["salt"]) + sha1(("%s:%s" % (state["user"], self.receiver.args.pin)).encode())), "big")
                state["v"] = pow(2, x, N2048)
                state["b"] = int.from_bytes(os.urandom(32), "big")
                k = int.from_bytes(sha1(N2048.to_bytes(256, "big") + (2).to_bytes(256, "big")), "big")
                state["B"] = (k * state["v"] + pow(2, state["b"], N2048)) % N2048
                return self.respond(headers, body=plistlib.dumps({"pk": minimal_int(state["B"]), "salt": state["salt"]}, fmt=plistlib.FMT_BINARY),
                                    content_type="application/x-apple-binary-plist")
            if "proof" in request and "B" in state:
                a_value = int.from_bytes(request["pk"], "big")
                if a_value % N2048 == 0:
                    return self.respond(headers, status=470)
                u = int.from_bytes(sha1(a_value.to_bytes(256, "big") + state["B"].to_bytes(256, "big")), "big")
                secret = pow(a_value * pow(state["v"], u, N2048), state["b"], N2048)
                key = sha1(minimal_int(secret) + b"\0\0\0\0") + sha1(minimal_int(secret) + b"\0\0\0\1")
                n_xor_g = bytes(p ^ q for p, q in zip(sha1(minimal_int(N2048)), sha1(b"\x02")))
                expected = sha1(n_xor_g + sha1(state["user"].encode()) + minimal(state["salt"]) + minimal_int(a_value) + minimal_int(state["B"]) + key)
                if request["proof"] != expected:
                    self.receiver.log(verification="wrong pin")
                    state.clear()
                    return self.respond(headers, status=470)
                state["K"] = key
                return self.respond(headers, body=plistlib.dumps({"proof": sha1(minimal_int(a_value) + expected + key)}, fmt=plistlib.FMT_BINARY),
                                    content_type="application/x-apple-binary-plist")
            if "epk" in request and "K" in state:
                aes_key = hashlib.sha512(b"Pair-Setup-AES-Key" + state["K"]).digest()[:16]
                iv = bytearray(hashlib.sha512(b"Pair-Setup-AES-IV" + state["K"]).digest()[:16])
                iv[15] = (iv[15] + 1) & 0xFF
                sender_key = AESGCM(aes_key).decrypt(bytes(iv), request["epk"] + request["authTag"], None)
                self.receiver.verified_keys.add(sender_key)
                self.receiver.log(verification="paired", user=state["user"])
                iv[15] = (iv[15] + 1) & 0xFF
                sealed = AESGCM(aes_key).encrypt(bytes(iv), self.receiver.identity_public, None)
                state.clear()
                return self.respond(headers, body=plistlib.dumps({"epk": sealed[:32], "authTag": sealed[32:]}, fmt=plistlib.FMT_BINARY),
                                    content_type="application/x-apple-binary-plist")
            return self.respond(headers, status=400)
        # /pair-verify
        if len(body) == 68 and body[0] == 1:
            sender_ephemeral, sender_key = body[4:36], body[36:68]
            if sender_key not in self.receiver.verified_keys:
                self.receiver.log(verification="unknown key")
                return self.respond(headers, status=470)
            ours = X25519PrivateKey.generate()
            ours_public = ours.public_key().public_bytes(RAW, RAW_PUBLIC)
            shared = ours.exchange(X25519PublicKey.from_public_bytes(sender_ephemeral))
            aes_key = hashlib.sha512(b"Pair-Verify-AES-Key" + shared).digest()[:16]
            counter = hashlib.sha512(b"Pair-Verify-AES-IV" + shared).digest()[:16]
            keystream = Cipher(algorithms.AES(aes_key), modes.CTR(counter)).encryptor().update(b"\0" * 128)
            signature = self.receiver.identity.sign(ours_public + sender_ephemeral)
            state.update(verify=(sender_ephemeral, sender_key, ours_public, keystream))
            return self.respond(headers, body=ours_public + bytes(p ^ q for p, q in zip(signature, keystream[:64])))
        if len(body) == 68 and body[0] == 0 and "verify" in state:
            sender_ephemeral, sender_key, ours_public, keystream = state.pop("verify")
            signature = bytes(p ^ q for p, q in zip(body[4:68], keystream[64:128]))
            try:
                Ed25519PublicKey.from_public_bytes(sender_key).verify(signature, sender_ephemeral + ours_public)
            except Exception:
                self.receiver.log(verification="bad signature")
                return self.respond(headers, status=470)
            self.device_verified = True
            self.receiver.log(verification="verified")
            return self.respond(headers)
        return self.respond(headers, status=400)

    def pair_setup(self, headers, body):
        message = tlv_decode(body)
        state = message.get(STATE, b"\x00")[0]
        if state == 1:
            transient = message.get(FLAGS, b"\x00")[0] & 0x10 != 0
            if transient and self.receiver.args.pin:
                return self.fail(headers, 2, 2)
            code = "3939" if transient else self.receiver.args.pin or "3939"
            context = SRPContext("Pair-Setup", code, prime=constants.PRIME_3072, generator=constants.PRIME_3072_GEN,
                                 hash_func=hashlib.sha512, bits_salt=128)
            _, verifier, salt = context.get_user_data_triplet(binary=True)
            server = SRPServerSession(context, password_verifier=verifier)
            self.setup = {"server": server, "salt": salt, "transient": transient}
            self.respond(headers, body=tlv_encode((STATE, b"\x02"), (SALT, salt), (PUBLIC_KEY, server.public_bin)))
        elif state == 3:
            server = self.setup["server"]
            server.process(message[PUBLIC_KEY], self.setup["salt"])
            if not server.verify_proof(message[PROOF]):
                return self.fail(headers, 4, 2)
            key = server.key_bin
            self.setup["key"] = key
            reply = tlv_encode((STATE, b"\x04"), (PROOF, server.key_proof_hash_bin))
            if self.setup["transient"]:
                self.receiver.log(paired="transient")
                self.respond(headers, body=reply, then=lambda: self.encrypt(key))
            else:
                self.respond(headers, body=reply)
        elif state == 5:
            key = self.setup["key"]
            inner = tlv_decode(ChaCha20Poly1305(hkdf(key, "Pair-Setup-Encrypt-Salt", "Pair-Setup-Encrypt-Info")).decrypt(nonce("PS-Msg05"), message[ENCRYPTED], None))
            controller, public = inner[IDENTIFIER], inner[PUBLIC_KEY]
            signed = hkdf(key, "Pair-Setup-Controller-Sign-Salt", "Pair-Setup-Controller-Sign-Info") + controller + public
            try:
                Ed25519PublicKey.from_public_bytes(public).verify(inner[SIGNATURE], signed)
            except Exception:
                return self.fail(headers, 6, 2)
            self.receiver.controllers[controller] = public
            identifier = self.receiver.args.identifier.encode()
            accessory = hkdf(key, "Pair-Setup-Accessory-Sign-Salt", "Pair-Setup-Accessory-Sign-Info") + identifier + self.receiver.identity_public
            sub = tlv_encode((IDENTIFIER, identifier), (PUBLIC_KEY, self.receiver.identity_public), (SIGNATURE, self.receiver.identity.sign(accessory)))
            sealed = ChaCha20Poly1305(hkdf(key, "Pair-Setup-Encrypt-Salt", "Pair-Setup-Encrypt-Info")).encrypt(nonce("PS-Msg06"), sub, None)
            self.receiver.log(paired="pin", controller=controller.decode())
            self.respond(headers, body=tlv_encode((STATE, b"\x06"), (ENCRYPTED, sealed)))

    def pair_verify(self, headers, body):
        message = tlv_decode(body)
        state = message.get(STATE, b"\x00")[0]
        if state == 1:
            ephemeral = X25519PrivateKey.generate()
            ours = ephemeral.public_key().public_bytes(RAW, RAW_PUBLIC)
            theirs = message[PUBLIC_KEY]
            shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(theirs))
            identifier = self.receiver.args.identifier.encode()
            signature = self.receiver.identity.sign(ours + identifier + theirs)
            key = hkdf(shared, "Pair-Verify-Encrypt-Salt", "Pair-Verify-Encrypt-Info")
            sealed = ChaCha20Poly1305(key).encrypt(nonce("PV-Msg02"), tlv_encode((IDENTIFIER, identifier), (SIGNATURE, signature)), None)
            self.verify = {"shared": shared, "ours": ours, "theirs": theirs, "key": key}
            self.respond(headers, body=tlv_encode((STATE, b"\x02"), (PUBLIC_KEY, ours), (ENCRYPTED, sealed)))
        elif state == 3:
            verify = self.verify
            try:
                inner = tlv_decode(ChaCha20Poly1305(verify["key"]).decrypt(nonce("PV-Msg03"), message[ENCRYPTED], None))
                controller = inner[IDENTIFIER]
                public = self.receiver.controllers.get(controller)
                if public is None:
                    return self.fail(headers, 4, 2)
                Ed25519PublicKey.from_public_bytes(public).verify(inner[SIGNATURE], verify["theirs"] + controller + verify["ours"])
            except Exception:
                return self.fail(headers, 4, 2)
            self.receiver.log(verified=controller.decode())
            self.respond(headers, body=tlv_encode((STATE, b"\x04")), then=lambda: self.encrypt(verify["shared"]))

    def encrypt(self, secret):
        self.secret = secret
        # The controller writes with "Control-Write": we read with it.
        self.read_key = hkdf(secret, "Control-Salt", "Control-Write-Encryption-Key")
        self.write_key = hkdf(secret, "Control-Salt", "Control-Read-Encryption-Key")
        self.read_count = self.write_count = 0
        # Bytes already buffered after the request that switched are ciphertext: none are expected.
        self.pending, self.buffer = self.buffer, b""


class Stream:
    """A real-time stream's UDP ports: audio opened with the stream key and kept, sync packets logged."""

    def __init__(self, receiver, key, frames_per_packet):
        self.receiver = receiver
        # AirPlay 1 (no key): the ALAC frame in clear after the RTP header.
        self.cipher = ChaCha20Poly1305(key) if key else None
        self.frames_per_packet = frames_per_packet
        self.data = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.data.bind((receiver.args.address, 0))
        self.control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.control.bind((receiver.args.address, 0))
        self.packets = {}  # sequence -> (rtp time, ALAC frame, intended play time or None)
        self.anchor = None  # (rtp time playing at master time, master time ns)
        self.first_anchor = None
        self.flushes = []
        self.first_arrival = None
        self.bad = 0
        self.syncs = 0
        self.done = False
        threading.Thread(target=self.receive_audio, daemon=True).start()
        threading.Thread(target=self.receive_control, daemon=True).start()

    def play_time(self, rtp_time, anchor=None):
        # shairport-sync's rule: the sync's frame less 11 035 plays at its master time.
        anchor = anchor or self.anchor
        if anchor is None or self.receiver.master_offset is None:
            return None
        frame, master_time = anchor
        difference = (rtp_time - (frame - 11035)) & 0xFFFFFFFF
        if difference >= 0x80000000:
            difference -= 0x100000000
        return master_time + difference * 1_000_000_000 // 44100 - self.receiver.master_offset

    def receive_audio(self):
        while not self.done:
            try:
                packet = self.data.recv(4096)
            except OSError:
                return
            if self.cipher is None and len(packet) > 12:
                frame = packet[12:]
            elif len(packet) < 12 + 16 + 8:
                self.bad += 1
                continue
            else:
                try:
                    frame = self.cipher.decrypt(b"\x00" * 4 + packet[-8:], packet[12:-8], packet[4:12])
                except Exception:
                    self.bad += 1
                    continue
            sequence, rtp_time = struct.unpack(">HI", packet[2:8])
            if not self.packets:
                self.first_arrival = time.monotonic_ns()
                self.receiver.log(first_packet=sequence, rtp=rtp_time, marker=packet[1] & 0x80 != 0)
            self.packets[sequence] = (rtp_time, frame, self.play_time(rtp_time), time.monotonic_ns())

    def receive_control(self):
        while not self.done:
            try:
                packet = self.control.recv(4096)
            except OSError:
                return
            if len(packet) >= 20 and packet[1] == 0xD4 and (self.receiver.args.timing == "ntp" or self.receiver.args.raop):
                frame, seconds, fraction, next_frame = struct.unpack(">IIII", packet[4:20])
                self.anchor = (frame, seconds * 1_000_000_000 + (fraction * 1_000_000_000 >> 32))
                self.first_anchor = self.first_anchor or self.anchor
                self.syncs += 1
                if self.syncs <= 2 or self.syncs % 16 == 0:
                    self.receiver.log(sync=frame, time=self.anchor[1], next=next_frame, clock="ntp", first=packet[0] == 0x90)
            if len(packet) >= 28 and packet[1] == 0xD7:
                frame, master_time, next_frame, clock = struct.unpack(">IQIQ", packet[4:28])
                self.anchor = (frame, master_time)
                self.first_anchor = self.first_anchor or self.anchor
                self.syncs += 1
                if self.syncs <= 2 or self.syncs % 16 == 0:
                    self.receiver.log(sync=frame, time=master_time, next=next_frame, clock="%016x" % clock, first=packet[0] == 0x90)

    def finish(self):
        if self.done:
            return
        self.done = True
        self.data.close()
        self.control.close()
        if not self.packets:
            return self.receiver.log(recording=None, bad=self.bad)
        # In sequence order from the first packet (16-bit sequence numbers wrap).
        first = min(self.packets, key=lambda s: self.packets[s][0])
        order = sorted(self.packets, key=lambda s: (s - first) & 0xFFFF)
        frames = [self.packets[s][1] for s in order]
        missing = ((order[-1] - first) & 0xFFFF) + 1 - len(order)
        directory = tempfile.mkdtemp(prefix="mr-airplay2-rec-")
        caf = os.path.join(directory, "stream.caf")
        with open(caf, "wb") as out:
            out.write(caf_file(frames, self.frames_per_packet))
        pcm = os.path.join(directory, "stream.s16")
        decoded = subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", caf, "-f", "s16le", "-ac", "2", "-ar", "44100", pcm],
                                 capture_output=True, text=True)
        # A packet that came before the first sync packet (they travel on two sockets) plays by it.
        times = [[self.packets[s][0], self.packets[s][2] if self.packets[s][2] is not None else self.play_time(self.packets[s][0], self.first_anchor),
                  self.packets[s][3]] for s in order]
        with open(os.path.join(directory, "times.json"), "w") as out:
            json.dump(times, out)
        self.receiver.log(recording=pcm if decoded.returncode == 0 else None, ffmpeg=decoded.stderr[-400:], packets=len(frames),
                          bad=self.bad, missing=missing, first_arrival=self.first_arrival, foreign_syncs=self.receiver.foreign_syncs, times=os.path.join(directory, "times.json"), first_play_time=times[0][1])


class BufferedStream:
    """A buffered stream (type 103): AAC-LC units over TCP, each framed with a 2-byte length and
    sealed with the stream key; timed by SETRATEANCHORTIME (the anchor's frame plays at its time)."""

    def __init__(self, receiver, key):
        self.receiver = receiver
        self.cipher = ChaCha20Poly1305(key)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((receiver.args.address, 0))
        self.listener.listen(1)
        self.packets = {}  # sequence -> (rtp time, AAC unit, arrival)
        self.anchor = None
        self.flushes = []
        self.bad = 0
        self.ssrcs = set()
        self.done = False
        self.connection = None
        threading.Thread(target=self.receive, daemon=True).start()

    def receive(self):
        try:
            self.connection, _ = self.listener.accept()
        except OSError:
            return
        data = b""
        while not self.done:
            try:
                piece = self.connection.recv(65536)
            except OSError:
                return
            if not piece:
                return
            data += piece
            while len(data) >= 2 and len(data) >= struct.unpack(">H", data[:2])[0]:
                length = struct.unpack(">H", data[:2])[0]
                packet, data = data[2:length], data[length:]
                if length < 2 + 12 + 16 + 8:
                    self.bad += 1
                    continue
                try:
                    unit = self.cipher.decrypt(b"\x00" * 4 + packet[-8:], packet[12:-8], packet[4:12])
                except Exception:
                    self.bad += 1
                    continue
                sequence = struct.unpack(">I", packet[0:4])[0] & 0x7FFFFF
                rtp_time, ssrc = struct.unpack(">II", packet[4:12])
                self.ssrcs.add(ssrc)
                if not self.packets:
                    self.receiver.log(first_packet=sequence, rtp=rtp_time, marker=packet[1] & 0x80 != 0, buffered=True)
                self.packets[sequence] = (rtp_time, unit, time.monotonic_ns())

    def play_time(self, rtp_time):
        if self.anchor is None or self.receiver.master_offset is None:
            return None
        frame, network = self.anchor
        difference = (rtp_time - frame) & 0xFFFFFFFF
        if difference >= 0x80000000:
            difference -= 0x100000000
        return network + difference * 1_000_000_000 // 44100 - self.receiver.master_offset

    def finish(self):
        if self.done:
            return
        self.done = True
        for sock in (self.listener, self.connection):
            if sock:
                sock.close()
        if not self.packets:
            return self.receiver.log(recording=None, bad=self.bad)
        first = min(self.packets, key=lambda s: self.packets[s][0])
        order = sorted(self.packets, key=lambda s: (s - first) & 0x7FFFFF)
        missing = ((order[-1] - first) & 0x7FFFFF) + 1 - len(order)
        directory = tempfile.mkdtemp(prefix="mr-airplay2-rec-")
        adts = os.path.join(directory, "stream.aac")
        with open(adts, "wb") as out:
            for sequence in order:
                unit = self.packets[sequence][1]
                length = len(unit) + 7
                # ADTS: MPEG-4 AAC-LC, 44.1 kHz (index 4), two channels, no CRC.
                out.write(bytes([0xFF, 0xF1, (1 << 6) | (4 << 2), (2 << 6) | (length >> 11), (length >> 3) & 0xFF, ((length & 7) << 5) | 0x1F, 0xFC]) + unit)
        pcm = os.path.join(directory, "stream.s16")
        decoded = subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "aac", "-i", adts, "-f", "s16le", "-ac", "2", "-ar", "44100", pcm],
                                 capture_output=True, text=True)
        times = [[self.packets[s][0], self.play_time(self.packets[s][0]), self.packets[s][2]] for s in order]
        with open(os.path.join(directory, "times.json"), "w") as out:
            json.dump(times, out)
        self.receiver.log(recording=pcm if decoded.returncode == 0 else None, ffmpeg=decoded.stderr[-400:], packets=len(order), bad=self.bad,
                          missing=missing, ssrcs=sorted(self.ssrcs), frames_per_packet=1024, times=os.path.join(directory, "times.json"),
                          foreign_syncs=self.receiver.foreign_syncs)


def caf_file(frames, frames_per_packet):
    """ALAC frames in a CAF file (Apple's Core Audio Format), which FFmpeg's demuxer reads."""
    def chunk(kind, data):
        return kind + struct.pack(">q", len(data)) + data

    def varint(value):
        out = [value & 0x7F]
        value >>= 7
        while value:
            out.append(0x80 | (value & 0x7F))
            value >>= 7
        return bytes(reversed(out))

    desc = struct.pack(">d4sIIIII", 44100.0, b"alac", 1, 0, frames_per_packet, 2, 0)
    # The ALAC magic cookie (ALACSpecificConfig), as the SDP's fmtp says it for AirPlay.
    cookie = struct.pack(">IBBBBBBHIII", frames_per_packet, 0, 16, 40, 10, 14, 2, 255, 0, 0, 44100)
    pakt = struct.pack(">qqii", len(frames), len(frames) * frames_per_packet, 0, 0) + b"".join(varint(len(f)) for f in frames)
    data = struct.pack(">I", 0) + b"".join(frames)
    return b"caff" + struct.pack(">HH", 1, 0) + chunk(b"desc", desc) + chunk(b"kuki", cookie) + chunk(b"pakt", pakt) + chunk(b"data", data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pin")
    parser.add_argument("--identifier", default="4F:8A:22:10:9C:01")
    parser.add_argument("--name", default="Test AirPlay 2")
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--ptp-port", type=int)
    parser.add_argument("--timing", choices=["ptp", "grandmaster", "ntp"], default="ptp")
    parser.add_argument("--announce", action="store_true")
    parser.add_argument("--raop", action="store_true")
    parser.add_argument("--auth-setup", action="store_true")
    parser.add_argument("--verification", action="store_true", help="with --raop: an Apple TV's device verification (--pin)")
    parser.add_argument("--event-flood", type=int, default=0, help="after its first event, N more at once")
    parser.add_argument("--answer-delay", type=float, default=0, help="ms it takes over each RTSP answer")
    args = parser.parse_args()
    receiver = Receiver(args)
    if args.ptp_port and args.timing == "grandmaster":
        receiver.lead_ptp(args.ptp_port)
    elif args.ptp_port and args.timing == "ptp":
        receiver.follow_ptp(args.ptp_port)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.address, args.port))
    listener.listen(8)
    receiver.log(listening=listener.getsockname()[1])
    if args.announce:
        from zeroconf import ServiceInfo, Zeroconf
        zeroconf = Zeroconf(interfaces=[args.address])
        # shairport-sync 5's features; without bit 41 (PTP) when timed by NTP.
        properties = {"deviceid": args.identifier, "features": "0x405FCA00,0x18140" if args.timing == "ntp" else "0x405FCA00,0x18340", "flags": "0xC" if args.pin else "0x4", "model": "MediaRouteTest",
                      "pi": args.identifier, "pk": receiver.identity_public.hex(), "srcvers": "366.0", "acl": "0"}
        info = ServiceInfo("_airplay._tcp.local.", "%s._airplay._tcp.local." % args.name, addresses=[socket.inet_aton(args.address)],
                           port=listener.getsockname()[1], properties=properties, server="%s.local." % args.identifier.replace(":", ""))
        zeroconf.register_service(info)
        receiver.log(announced=args.name)
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=Connection(receiver, sock).serve, daemon=True).start()


if __name__ == "__main__":
    main()
