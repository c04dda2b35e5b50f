"""What the monitoring tests share: a webhook receiver on 127.0.0.1 that records what it is sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest


@pytest.fixture
def webhook():
    """A local HTTP server: `.url`, `.received` (each POST's JSON body and incident header), `.fail_next`
    (that many requests answered 503 first); another path is a 404."""
    state = SimpleNamespace(received=[], fail_next=0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != "/hook":
                self.send_response(404)
                self.end_headers()
                return
            if state.fail_next:
                state.fail_next -= 1
                self.send_response(503)
                self.end_headers()
                return
            state.received.append({"json": json.loads(body), "incident": self.headers.get("X-Flywheel-Incident")})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
