#!/usr/bin/env python3
"""A scripted OpenAI-compatible model for load and memory benchmarks: every POST to
/v1/chat/completions gets the same streamed text answer at once (no model, no state).

usage: scripted-model.py PORT [ANSWER]
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = sys.argv[2] if len(sys.argv) > 2 else "done"


def chunk(delta, finish):
    body = {"id": "s", "model": "scripted", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


REPLY = (chunk({"role": "assistant", "content": ANSWER}, None) + chunk({}, "stop") + "data: [DONE]\n\n").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
