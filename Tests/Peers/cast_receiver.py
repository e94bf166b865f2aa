#!/usr/bin/python3
"""A Google Cast receiver for MediaRoute's tests and benchmarks.

It speaks the Cast channel as receivers do: TLS (a certificate the test made), each
message a 4-byte big-endian length and a CastMessage protobuf (encoded and decoded here
by hand from the wire format, so the peer shares no code with the sender under test),
the connection, heartbeat, receiver and media namespaces, and an echoing app namespace.
It can announce itself as _googlecast._tcp over mDNS (python3-zeroconf).

Faults are scripted over a plain-text control port (one command a line, answered
"ok ..." or "error ..."):
  mute-heartbeat | unmute-heartbeat   stop/resume answering (and sending) anything
  reset                                close every sender connection abruptly (RST)
  refuse | accept                      stop/resume accepting connections
  stop-app                             the running app is stopped as by another sender
  volume LEVEL | mute | unmute         volume changed on the device
  pause | play                         playback paused/resumed on the device (a phone)
  finish                               the media reached its end (IDLE, FINISHED)
  new-cert CERT KEY                    present another certificate from now on
  send-raw HEX                         write these bytes to every sender (hostile framing)
  send NAMESPACE JSON                  a message from receiver-0 in any namespace
  app-send TEXT                        the app sends TEXT in its namespace to its senders
  state                                the receiver's state as JSON
  unannounce                           withdraw the mDNS record (goodbye)
Every message received is printed to stdout as a JSON line, flushed at once.
"""

import argparse
import json
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
import uuid

MAX_MESSAGE = 65536
CONNECTION = "urn:x-cast:com.google.cast.tp.connection"
HEARTBEAT = "urn:x-cast:com.google.cast.tp.heartbeat"
RECEIVER = "urn:x-cast:com.google.cast.receiver"
MEDIA = "urn:x-cast:com.google.cast.media"
TEST_APP = "MRTEST01"
TEST_NAMESPACE = "urn:x-cast:org.mediaroute.test"

lock = threading.RLock()


def emit(**fields):
    with lock:
        sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
        sys.stdout.flush()


# --- protobuf by hand -------------------------------------------------------

def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode(source, destination, namespace, text):
    def field(number, data):
        return varint(number << 3 | 2) + varint(len(data)) + data
    return (varint(1 << 3) + varint(0) + field(2, source.encode()) + field(3, destination.encode())
            + field(4, namespace.encode()) + varint(5 << 3) + varint(0) + field(6, text.encode()))


def decode(data):
    fields = {}
    index = 0
    while index < len(data):
        key, index = read_varint(data, index)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, index = read_varint(data, index)
        elif kind == 2:
            length, index = read_varint(data, index)
            if index + length > len(data):
                raise ValueError("truncated field")
            value = data[index:index + length]
            index += length
        else:
            raise ValueError("unexpected wire type %d" % kind)
        fields[number] = value
    for required in (1, 2, 3, 4, 5):
        if required not in fields:
            raise ValueError("field %d missing" % required)
    return {
        "source": fields[2].decode(), "destination": fields[3].decode(), "namespace": fields[4].decode(),
        "text": fields.get(6, b"").decode() if fields[5] == 0 else None,
    }


def read_varint(data, index):
    shift = value = 0
    while True:
        if index >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index
        shift += 7


# --- the receiver -----------------------------------------------------------

class Receiver:
    def __init__(self, args):
        self.args = args
        self.cert, self.key = args.cert, args.key
        self.senders = []          # Sender objects
        self.volume = {"level": 1.0, "muted": False}
        self.app = None            # dict while an app runs
        self.media = None          # dict while media is loaded
        self.heartbeat_muted = False
        self.accepting = True
        self.listener = None
        self.zeroconf = None
        self.info = None
        self.refusing_fetch = False  # LOAD is answered, the content never fetched
        self.clock_ppm = 0.0         # the receiver's clock against the host's (positions it reports)
        self.output_delay = None     # seconds a live stream's decoded audio waits before it plays (positions follow)
        self.fetched = {}          # contentId -> {"status", "bytes"}: what a LOAD of a sender-served file fetched

    # state ------------------------------------------------------------------
    def position(self):
        media = self.media
        if media is None:
            return 0.0
        if media["state"] == "PLAYING" and self.output_delay is not None and media.get("streamType") == "LIVE":
            # As a real receiver: at zero until its first samples are decoded, then playing them
            # output_delay later (what it buffers between its decoder and its speaker).
            first = media.get("first_decoded")
            if first is None:
                return 0.0
            return max(0.0, time.monotonic() - first - self.output_delay) * (1 + self.clock_ppm * 1e-6)
        if media["state"] == "PLAYING":
            elapsed = (time.monotonic() - media["since"]) * (1 + self.clock_ppm * 1e-6)
            return min(media["time"] + elapsed, media["duration"])
        return media["time"]

    def receiver_status(self, request_id=0):
        apps = []
        if self.app:
            apps.append({
                "appId": self.app["appId"], "displayName": self.app["name"], "sessionId": self.app["sessionId"],
                "transportId": self.app["transportId"], "statusText": "Ready",
                "namespaces": [{"name": n} for n in self.app["namespaces"]], "isIdleScreen": False,
            })
        return {"type": "RECEIVER_STATUS", "requestId": request_id,
                "status": {"applications": apps, "volume": dict(self.volume, controlType="attenuation", stepInterval=0.05)}}

    def fetch(self, url):
        import urllib.error
        import urllib.request
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                self.fetched[url] = {"status": answer.status, "bytes": len(answer.read())}
        except urllib.error.HTTPError as error:
            self.fetched[url] = {"status": error.code, "bytes": 0}
        except OSError as error:
            self.fetched[url] = {"status": 0, "error": str(error)}

    def record_live(self, url):
        """Decodes a live stream into RECORD/live.pcm (stereo S16LE, 44.1 kHz) until it ends,
        and a line per read to RECORD/live-times.txt (CLOCK_MONOTONIC, bytes so far)."""
        import subprocess
        path = os.path.join(self.args.record, "live.pcm")
        times_path = os.path.join(self.args.record, "live-times.txt")
        try:
            decoder = subprocess.Popen(
                ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-probesize", "4096", "-analyzeduration", "0",
                 "-fflags", "nobuffer", "-i", url, "-f", "s16le", "-ac", "2", "-ar", "44100", "-"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            total = 0
            with open(path, "wb") as out, open(times_path, "w") as times:
                while True:
                    piece = os.read(decoder.stdout.fileno(), 65536)
                    if not piece:
                        break
                    now = time.clock_gettime(time.CLOCK_MONOTONIC)
                    media = self.media
                    if total == 0 and media is not None and media.get("contentId") == url:
                        media["first_decoded"] = time.monotonic()
                    out.write(piece)
                    out.flush()
                    total += len(piece)
                    times.write("%.6f %d\n" % (now, total))
                    times.flush()
            decoder.wait()
            error = decoder.stderr.read().decode(errors="replace")[-300:]
            self.fetched[url] = {"status": 200 if decoder.returncode == 0 else 0, "bytes": total, "decoded": path, "error": error}
        except OSError as error:
            self.fetched[url] = {"status": 0, "error": str(error)}

    def record_video(self, url):
        """Fetches a live video stream as a receiver would, keeping its bytes (RECORD/video.stream),
        decoding it as it comes into 8-bit luma (RECORD/video.gray, a line per read to
        RECORD/video-times.txt), and at its end writes what ffprobe reads of it to
        RECORD/video-probe.json: codec, size, frame rate, and the packets' timestamps (continuity)."""
        import json
        import subprocess
        import urllib.request
        directory = self.args.record
        stream_path = os.path.join(directory, "video.stream")
        try:
            decoder = subprocess.Popen(
                ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-probesize", "32768",
                 "-i", "pipe:0", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

            def drain():
                total = 0
                with open(os.path.join(directory, "video.gray"), "wb") as out, open(os.path.join(directory, "video-times.txt"), "w") as times:
                    while True:
                        piece = os.read(decoder.stdout.fileno(), 65536)
                        if not piece:
                            break
                        out.write(piece)
                        out.flush()
                        total += len(piece)
                        times.write("%.6f %d\n" % (time.clock_gettime(time.CLOCK_MONOTONIC), total))
                        times.flush()

            reader = threading.Thread(target=drain, daemon=True)
            reader.start()
            total = 0
            with urllib.request.urlopen(url, timeout=10) as answer, open(stream_path, "wb") as kept:
                while True:
                    piece = answer.read1(65536)
                    if not piece:
                        break
                    kept.write(piece)
                    total += len(piece)
                    try:
                        decoder.stdin.write(piece)
                        decoder.stdin.flush()
                    except BrokenPipeError:
                        pass
            decoder.stdin.close()
            decoder.wait()
            reader.join(10)
            probe = subprocess.run(
                ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height,r_frame_rate:packet=pts_time,duration_time,flags",
                 "-of", "json", stream_path], capture_output=True, text=True, timeout=60)
            report = json.loads(probe.stdout or "{}")
            # Written whole, then named: a reader waiting for the file never sees half of it.
            with open(os.path.join(directory, "video-probe.json.part"), "w") as out:
                json.dump(report, out)
            os.rename(os.path.join(directory, "video-probe.json.part"), os.path.join(directory, "video-probe.json"))
            self.fetched[url] = {"status": 200, "bytes": total}
        except (OSError, ValueError) as error:
            self.fetched[url] = {"status": 0, "error": str(error)}

    def media_status(self, request_id=0):
        statuses = []
        if self.media:
            media = self.media
            status = {
                "mediaSessionId": media["id"], "playbackRate": 1, "playerState": media["state"], "currentTime": self.position(),
                "supportedMediaCommands": 274447, "volume": {"level": self.volume["level"], "muted": self.volume["muted"]},
                "media": {"contentId": media["contentId"], "contentType": media["contentType"], "streamType": media["streamType"],
                          "duration": media["duration"], "metadata": media["metadata"]},
                "items": [{"itemId": i + 1, "media": item} for i, item in enumerate(media["queue"])],
            }
            if media.get("idleReason"):
                status["idleReason"] = media["idleReason"]
            statuses.append(status)
        return {"type": "MEDIA_STATUS", "requestId": request_id, "status": statuses}

    def broadcast(self, source, namespace, payload, only_connected_to=None):
        for sender in list(self.senders):
            for peer in list(sender.virtual):
                if only_connected_to is not None and peer[1] != only_connected_to:
                    continue
                if only_connected_to is None and peer[1] != "receiver-0":
                    continue
                sender.send(source, peer[0], namespace, payload)

    def broadcast_receiver_status(self):
        self.broadcast("receiver-0", RECEIVER, self.receiver_status())

    def broadcast_media_status(self):
        if self.app:
            self.broadcast(self.app["transportId"], MEDIA, self.media_status(), only_connected_to=self.app["transportId"])

    def stop_app(self):
        if not self.app:
            return
        transport = self.app["transportId"]
        for sender in list(self.senders):
            for peer in list(sender.virtual):
                if peer[1] == transport:
                    sender.send(transport, peer[0], CONNECTION, {"type": "CLOSE"})
                    sender.virtual.discard(peer)
        self.app = None
        self.media = None
        self.broadcast_receiver_status()

    # messages ---------------------------------------------------------------
    def handle(self, sender, message):
        namespace, text = message["namespace"], message["text"]
        emit(event="received", namespace=namespace, source=message["source"], destination=message["destination"], payload=text)
        if text is None:
            return
        if self.app and namespace == TEST_NAMESPACE and message["destination"] == self.app["transportId"]:
            sender.send(self.app["transportId"], message["source"], TEST_NAMESPACE, "echo:" + text)
            return
        try:
            body = json.loads(text)
        except ValueError:
            return
        kind = body.get("type")
        request_id = body.get("requestId", 0)
        reply = lambda ns, payload: sender.send(message["destination"], message["source"], ns, payload)
        if namespace == CONNECTION:
            if kind == "CONNECT":
                sender.virtual.add((message["source"], message["destination"]))
            elif kind == "CLOSE":
                sender.virtual.discard((message["source"], message["destination"]))
        elif namespace == HEARTBEAT:
            if kind == "PING":
                reply(HEARTBEAT, {"type": "PONG"})
        elif namespace == RECEIVER:
            if kind == "GET_STATUS":
                reply(RECEIVER, self.receiver_status(request_id))
            elif kind == "LAUNCH":
                app_id = body.get("appId")
                if app_id not in ("CC1AD845", TEST_APP):
                    reply(RECEIVER, {"type": "LAUNCH_ERROR", "reason": "NOT_FOUND", "requestId": request_id})
                    return
                if self.app and self.app["appId"] != app_id:
                    self.stop_app()
                if not self.app:
                    namespaces = [MEDIA] if app_id == "CC1AD845" else [TEST_NAMESPACE]
                    self.app = {"appId": app_id, "name": "Default Media Receiver" if app_id == "CC1AD845" else "MediaRoute Test App",
                                "sessionId": str(uuid.uuid4()).upper(), "transportId": "web-%d" % (int(time.time() * 1000) % 100000),
                                "namespaces": namespaces}
                reply(RECEIVER, self.receiver_status(request_id))
                self.broadcast_receiver_status()
            elif kind == "STOP":
                if self.app and body.get("sessionId") == self.app["sessionId"]:
                    self.stop_app()
                reply(RECEIVER, self.receiver_status(request_id))
            elif kind == "SET_VOLUME":
                volume = body.get("volume", {})
                if "level" in volume:
                    self.volume["level"] = max(0.0, min(1.0, float(volume["level"])))
                if "muted" in volume:
                    self.volume["muted"] = bool(volume["muted"])
                reply(RECEIVER, self.receiver_status(request_id))
                self.broadcast_receiver_status()
            else:
                reply(RECEIVER, {"type": "INVALID_REQUEST", "reason": "INVALID_COMMAND", "requestId": request_id})
        elif namespace == MEDIA and self.app and message["destination"] == self.app["transportId"]:
            transport = self.app["transportId"]
            media = self.media
            if kind == "LOAD":
                item = body.get("media", {})
                content = item.get("contentId", "")
                if "load-fail" in content:
                    reply(MEDIA, {"type": "LOAD_FAILED", "requestId": request_id})
                    return
                self.media = {"id": (media["id"] + 1) if media else 1, "state": "PLAYING", "time": float(body.get("currentTime", 0)),
                              "since": time.monotonic(), "contentId": content, "contentType": item.get("contentType"),
                              "streamType": item.get("streamType"), "duration": float(item.get("duration") or 120.0),
                              "metadata": item.get("metadata"), "queue": []}
                reply(MEDIA, self.media_status(request_id))
                self.broadcast_media_status()
                if "/media/" in content and self.refusing_fetch:
                    pass  # told to behave like a receiver that accepts LOAD and never fetches
                elif "/media/" in content and item.get("streamType") == "LIVE" and self.args.record and str(item.get("contentType", "")).startswith("video/"):
                    # The box's video, live: fetched, decoded and probed.
                    threading.Thread(target=self.record_video, args=(content,), daemon=True).start()
                elif ("/media/" in content or content.endswith("/stream")) and item.get("streamType") == "LIVE" and self.args.record:
                    # (`/stream`: mkchromecast's live stream, the benchmark's anchor.)
                    # A live stream the sender serves: decoded as it comes (ffmpeg as the receiver's decoder).
                    threading.Thread(target=self.record_live, args=(content,), daemon=True).start()
                elif "/media/" in content:
                    # A file the sender serves itself: fetched as a real receiver would.
                    threading.Thread(target=self.fetch, args=(content,), daemon=True).start()
            elif media is None:
                reply(MEDIA, {"type": "INVALID_PLAYER_STATE", "requestId": request_id} if kind != "GET_STATUS" else self.media_status(request_id))
            elif kind == "GET_STATUS":
                reply(MEDIA, self.media_status(request_id))
            elif kind in ("PLAY", "PAUSE", "SEEK", "STOP", "QUEUE_INSERT"):
                if kind == "PLAY":
                    media["time"], media["since"], media["state"] = self.position(), time.monotonic(), "PLAYING"
                elif kind == "PAUSE":
                    media["time"], media["state"] = self.position(), "PAUSED"
                elif kind == "SEEK":
                    media["time"], media["since"] = max(0.0, min(float(body.get("currentTime", 0)), media["duration"])), time.monotonic()
                elif kind == "STOP":
                    media["time"], media["state"], media["idleReason"] = self.position(), "IDLE", "CANCELLED"
                else:
                    media["queue"].extend(entry.get("media", {}) for entry in body.get("items", []))
                reply(MEDIA, self.media_status(request_id))
                self.broadcast_media_status()
                if kind == "STOP":
                    self.media = None
            else:
                reply(MEDIA, {"type": "INVALID_REQUEST", "reason": "INVALID_COMMAND", "requestId": request_id})

    # control ----------------------------------------------------------------
    def command(self, line):
        parts = line.strip().split(" ", 2)
        name, rest = parts[0], parts[1:]
        with lock:
            if name == "mute-heartbeat":
                self.heartbeat_muted = True
            elif name == "unmute-heartbeat":
                self.heartbeat_muted = False
            elif name == "reset":
                for sender in list(self.senders):
                    sender.reset()
            elif name == "refuse":
                self.accepting = False
                if self.listener:
                    self.listener.close()
                    self.listener = None
            elif name == "accept":
                self.accepting = True
                self.listen()
            elif name == "refuse-fetch":
                self.refusing_fetch = True
            elif name == "output-delay":
                # From now on a live stream plays this many milliseconds after it is decoded, and
                # the positions reported count from its first decoded samples (a real receiver's
                # media element), not from the LOAD.
                self.output_delay = float(rest[0]) / 1000
            elif name == "clock-ppm":
                # The receiver's clock from now on runs this many parts per million fast (or slow):
                # the positions it reports say so, as a real receiver's crystal would.
                self.clock_ppm = float(rest[0])
            elif name == "stop-app":
                self.stop_app()
            elif name == "volume":
                self.volume["level"] = float(rest[0])
                self.broadcast_receiver_status()
            elif name in ("mute", "unmute"):
                self.volume["muted"] = name == "mute"
                self.broadcast_receiver_status()
            elif name in ("pause", "play") and self.media:
                self.media["time"], self.media["since"] = self.position(), time.monotonic()
                self.media["state"] = "PAUSED" if name == "pause" else "PLAYING"
                self.broadcast_media_status()
            elif name == "finish" and self.media:
                self.media["time"], self.media["state"], self.media["idleReason"] = self.media["duration"], "IDLE", "FINISHED"
                self.broadcast_media_status()
            elif name == "new-cert":
                self.cert, self.key = rest[0], rest[1]
            elif name == "send-raw":
                data = bytes.fromhex(rest[0])
                for sender in list(self.senders):
                    sender.write(data)
            elif name == "send":
                for sender in list(self.senders):
                    for peer in list(sender.virtual):
                        sender.send("receiver-0", peer[0], rest[0], rest[1] if len(rest) > 1 else "")
            elif name == "app-send" and self.app:
                for sender in list(self.senders):
                    for peer in list(sender.virtual):
                        if peer[1] == self.app["transportId"]:
                            sender.send(self.app["transportId"], peer[0], TEST_NAMESPACE, rest[0] if rest else "")
            elif name == "state":
                return "ok " + json.dumps({"app": self.app and self.app["appId"], "volume": self.volume, "senders": len(self.senders),
                                           "fetched": self.fetched,
                                           "media": self.media and {k: self.media[k] for k in ("state", "contentId", "queue")},
                                           "position": self.position()})
            elif name == "unannounce":
                if self.zeroconf and self.info:
                    self.zeroconf.unregister_service(self.info)
            else:
                return "error unknown command"
        return "ok"

    def listen(self):
        if self.listener or not self.accepting:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.args.address, self.args.port))
        listener.listen(16)
        # Reopened (after `refuse`) on the same port, as a receiver that restarts.
        self.args.port = listener.getsockname()[1]
        self.listener = listener

    def serve(self):
        self.listen()
        control = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        control.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        control.bind((self.args.address, self.args.control_port))
        control.listen(4)
        emit(event="listening", port=self.listener.getsockname()[1], control=control.getsockname()[1])
        if self.args.announce:
            self.announce()
            self.serve_eureka()
        while True:
            sockets = [control] + ([self.listener] if self.listener else [])
            try:
                readable, _, _ = select.select(sockets, [], [], 0.2)
            except (ValueError, OSError):
                # The listener was closed by a `refuse` while we waited on it.
                continue
            for sock in readable:
                if sock is control:
                    connection, _ = control.accept()
                    threading.Thread(target=self.control_client, args=(connection,), daemon=True).start()
                elif sock is self.listener:
                    try:
                        connection, address = self.listener.accept()
                    except OSError:
                        continue
                    threading.Thread(target=self.sender_thread, args=(connection, address), daemon=True).start()

    def control_client(self, connection):
        with connection, connection.makefile("rw") as stream:
            for line in stream:
                try:
                    answer = self.command(line)
                except Exception as error:  # a test's bad command must not kill the receiver
                    answer = "error %r" % error
                stream.write(answer + "\n")
                stream.flush()

    def sender_thread(self, connection, address):
        # Each message goes out when written, as a receiver's would: with Nagle's algorithm a
        # reply waits for the sender's delayed ACK (40 ms), and every sender measures that.
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with lock:
            context.load_cert_chain(self.cert, self.key)
        try:
            stream = context.wrap_socket(connection, server_side=True)
        except (ssl.SSLError, OSError) as error:
            emit(event="tls-failed", error=str(error))
            connection.close()
            return
        sender = Sender(self, stream)
        with lock:
            self.senders.append(sender)
        emit(event="connected", peer=address[0])
        try:
            sender.run()
        finally:
            with lock:
                if sender in self.senders:
                    self.senders.remove(sender)
            emit(event="disconnected", peer=address[0])

    def serve_eureka(self):
        """`GET /setup/eureka_info` over HTTPS on port 8443, as receivers answer it: pychromecast
        9.4 (mkchromecast's) asks it for the name and model of what it discovered."""
        import http.server

        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if not self.path.startswith("/setup/eureka_info"):
                    self.send_error(404)
                    return
                body = json.dumps({
                    "name": receiver.args.name, "ssdp_udn": receiver.args.id,
                    "device_info": {"manufacturer": "MediaRoute test", "model_name": receiver.args.model, "product_name": receiver.args.model,
                                    "cloud_device_id": receiver.args.id.upper(), "capabilities": {"audio_supported": True}},
                    "multizone": {"groups": []},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                emit(event="eureka", path=self.path)

            def log_message(self, *arguments):
                pass

        try:
            server = http.server.ThreadingHTTPServer((self.args.address, 8443), Handler)
        except OSError as error:
            emit(event="eureka-failed", error=str(error))
            return
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def announce(self):
        from zeroconf import ServiceInfo, Zeroconf
        self.zeroconf = Zeroconf(interfaces=[self.args.address])
        name = self.args.name
        properties = {"id": self.args.id, "fn": name, "md": self.args.model, "ca": str(self.args.ca), "rs": "", "st": "0", "ve": "05",
                      "ic": "/setup/icon.png", "bs": "FA8FCA000000", "nf": "1", "cd": self.args.id.upper(), "rm": ""}
        self.info = ServiceInfo(
            "_googlecast._tcp.local.", "%s-%s._googlecast._tcp.local." % (self.args.model.replace(" ", "-"), self.args.id),
            addresses=[socket.inet_aton(self.args.address)], port=self.listener.getsockname()[1], properties=properties,
            server="%s.local." % self.args.id)
        self.zeroconf.register_service(self.info)
        emit(event="announced", name=name)


class Sender:
    def __init__(self, receiver, stream):
        self.receiver = receiver
        self.stream = stream
        self.virtual = set()
        self.write_lock = threading.Lock()
        self.closed = False

    def write(self, data):
        with self.write_lock:
            try:
                self.stream.sendall(data)
            except OSError:
                self.closed = True

    def send(self, source, destination, namespace, payload):
        if self.receiver.heartbeat_muted:
            return
        text = payload if isinstance(payload, str) else json.dumps(payload)
        body = encode(source, destination, namespace, text)
        self.write(struct.pack(">I", len(body)) + body)

    def reset(self):
        # An RST at once: with SO_LINGER 0 the close resets the connection, and SHUT_RD (which
        # sends nothing) wakes the sender thread blocked in recv, whose return lets the kernel
        # release the socket now rather than when the sender next writes.
        self.closed = True
        try:
            self.stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            socket.socket.shutdown(self.stream, socket.SHUT_RD)
            self.stream.close()
        except OSError:
            pass

    def read_exactly(self, count):
        data = b""
        while len(data) < count:
            chunk = self.stream.recv(count - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def run(self):
        try:
            while not self.closed:
                length = struct.unpack(">I", self.read_exactly(4))[0]
                if length > MAX_MESSAGE:
                    emit(event="oversized", length=length)
                    return
                body = self.read_exactly(length)
                try:
                    message = decode(body)
                except ValueError as error:
                    emit(event="malformed", error=str(error))
                    continue
                if self.receiver.heartbeat_muted:
                    emit(event="ignored", namespace=message["namespace"])
                    continue
                with lock:
                    self.receiver.handle(self, message)
        except (EOFError, OSError, ssl.SSLError):
            pass
        finally:
            try:
                self.stream.close()
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8009)
    parser.add_argument("--control-port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--name", default="Living Room TV")
    parser.add_argument("--id", default=uuid.uuid4().hex)
    parser.add_argument("--model", default="Chromecast")
    parser.add_argument("--ca", type=int, default=4101)
    parser.add_argument("--announce", action="store_true")
    parser.add_argument("--record", default=None, help="decode LIVE streams a sender serves into this directory")
    args = parser.parse_args()
    Receiver(args).serve()


if __name__ == "__main__":
    main()
