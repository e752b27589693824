#!/usr/bin/env python3
"""A recording proxy for an OpenAI-compatible server, to turn what a real model sends into test fixtures.

    scripts/record-llm-proxy.py http://127.0.0.1:18435 DIR [PORT]
    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 toolbelt run ...

Every POST is forwarded unchanged; the request body goes to DIR/NNN.request.json and the answer body
(an event stream or JSON, byte for byte) to DIR/NNN.sse or DIR/NNN.json. Loopback only; standard library only.
"""
import http.client
import http.server
import os
import sys
import threading
import urllib.parse

upstream = urllib.parse.urlparse(sys.argv[1])
out_dir = sys.argv[2]
port = int(sys.argv[3]) if len(sys.argv) > 3 else 18436
os.makedirs(out_dir, exist_ok=True)
lock = threading.Lock()
counter = [len([f for f in os.listdir(out_dir) if f.endswith(".request.json")])]


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        with lock:
            counter[0] += 1
            n = counter[0]
        with open(os.path.join(out_dir, f"{n:03}.request.json"), "wb") as f:
            f.write(body)
        conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=900)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        conn.request("POST", self.path, body=body, headers=headers)
        resp = conn.getresponse()
        kind = resp.getheader("content-type", "")
        ext = "sse" if kind.startswith("text/event-stream") else "json"
        self.send_response(resp.status)
        self.send_header("content-type", kind)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        with open(os.path.join(out_dir, f"{n:03}.{ext}"), "wb") as f:
            while True:
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                f.write(chunk)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Proxy).serve_forever()
